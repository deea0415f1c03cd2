"""Snapshot text as scripts/snapshot.sh writes it (JSON lines, the head's
"v" client_cpu.FORMAT_VERSION, the last client_cpu.WHOLE), for tests that
script a snapshot; real ones are recorded in tests/data/
(client_cpu_test.py)."""

import json
from typing import Dict, Iterable, List, Optional

from perfkitbenchmarker.load_generators import client_cpu


def Text(wall: float, uptime: float, cpu_rows: Iterable[str] = (),
         records: Iterable[Dict] = (), clk: int = 100) -> str:
  head = {'v': client_cpu.FORMAT_VERSION, 'wall': wall, 'uptime': uptime,
          'clk': clk}
  lines = ([head] + [{'cpu': row} for row in cpu_rows] + list(records) +
           [client_cpu.WHOLE])
  return ''.join(json.dumps(r) + '\n' for r in lines)


def Thread(pid: int, tid: int, stat: str,
           sched: Optional[str] = None) -> List[Dict]:
  records = [{'pid': pid, 'tid': tid, 'stat': stat}]
  if sched is not None:
    records.append({'pid': pid, 'tid': tid, 'sched': sched})
  return records


def Cgroup(pid: int, directory: str, files: Dict[str, str]) -> List[Dict]:
  """A level of pid's cgroup: `files` name -> text (cpu.stat's lines)."""
  return [{'pid': pid, 'cgroup': directory}] + [
      {'dir': directory, 'file': name, 'text': line}
      for name, text in files.items() for line in text.splitlines()]


def Scan(stat_lines: Iterable[str],
         uptime: Optional[float] = None) -> List[Dict]:
  """A foreign scan; `uptime`: when it began (not recorded if None)."""
  head = {'scan': True} if uptime is None else {'scan': True,
                                                'uptime': uptime}
  return [head] + [{'fg': line} for line in stat_lines]
