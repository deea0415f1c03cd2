"""The cloud rehearsal's namespaces left by a killed test run, and what still
runs in them, are removed by the next run; a running suite's are not
(tests/rehearsal_hosts.py)."""

import os
import subprocess
import uuid

import pytest

import e2e_support as e2e
import rehearsal_hosts

pytestmark = [
    pytest.mark.e2e,  # It runs `ip netns`.
    e2e.Needs('root and ip (network namespaces)', rehearsal_hosts.Available,
              'run the tests as root, as CI does')]


def _Exists(name):
  return os.path.exists(os.path.join(rehearsal_hosts.NETNS_DIR, name))


def _DeadPid():
  proc = subprocess.Popen(['true'])
  proc.wait()
  return proc.pid


def test_a_dead_makers_namespaces_are_swept_a_live_ones_kept():
  tag = uuid.uuid4().hex[:6]
  dead = f'pkbr-{_DeadPid()}-{tag}'
  live = f'pkbr-{os.getpid()}-{tag}'
  names = [dead, dead + 's', live, live + 's']
  running = []
  try:
    for name in names:
      subprocess.run(['ip', 'netns', 'add', name], check=True)
    # What a killed run leaves running in its namespace (its hosts, pkb)
    # goes with it; a live run's is not touched.
    left, kept = (subprocess.Popen(['ip', 'netns', 'exec', name, 'sleep',
                                    '300']) for name in (dead, live))
    running = [left, kept]
    e2e.WaitFor(lambda: subprocess.run(
        ['ip', 'netns', 'pids', dead], capture_output=True,
        text=True).stdout.split(), 'the sleep in its namespace', proc=left)
    swept = rehearsal_hosts.SweepLeftovers()
    assert dead in swept and dead + 's' in swept, swept
    assert not _Exists(dead) and not _Exists(dead + 's')
    assert left.wait(timeout=30) == -9
    assert live not in swept and _Exists(live) and _Exists(live + 's')
    assert kept.poll() is None
  finally:
    for proc in running:
      proc.kill()
      proc.wait()
    for name in names:
      subprocess.run(['ip', 'netns', 'delete', name], capture_output=True,
                     check=False)


def test_a_rehearsal_namespace_is_named_for_its_maker():
  netns = rehearsal_hosts.Netns()
  assert netns.name.startswith(f'pkbr-{os.getpid()}-'), netns.name
  assert rehearsal_hosts._NAME.fullmatch(netns.name)  # pylint: disable=protected-access
  assert rehearsal_hosts._NAME.fullmatch(netns.sink)  # pylint: disable=protected-access
