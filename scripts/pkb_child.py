"""A bench's pkb run as a child process, stopped the way pkb tears down.

The benches (bench_first_run, bench_cap_statistics, bench_probe_overhead)
start `./pkb.py` and wait for it within a bound. Interrupted (Ctrl-C, or
SIGTERM, which they take for one) or past that bound, they stop it with
SIGTERM, on which pkb tears its run down, and wait for that: the SIGKILL
of subprocess.run's timeout or interrupt would leave its shards running.
"""

import contextlib
import subprocess
from typing import Iterator, Sequence, Tuple


@contextlib.contextmanager
def Started(argv: Sequence[str], cwd: str) -> Iterator[subprocess.Popen]:
  """pkb started (output piped, as text); stopped with SIGTERM and waited
  for if it still runs when the block ends."""
  proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, cwd=cwd)
  try:
    yield proc
  finally:
    if proc.poll() is None:
      proc.terminate()
      proc.communicate()


def Run(argv: Sequence[str], cwd: str, timeout_s: float) -> Tuple[int, str]:
  """(exit code, stderr) of a pkb run waited for at most timeout_s."""
  with Started(argv, cwd) as proc:
    _, err = proc.communicate(timeout=timeout_s)
  return proc.returncode, err
