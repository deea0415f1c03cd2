"""A stand-in for the subprocess.Popen of a bench's pkb run, for the
benches' SIGTERM cases: its wait (communicate with a timeout) calls the
SIGTERM handler in force, as a SIGTERM arriving while the bench waits on
pkb would, and its terminate() is written down in `seen`."""

import signal


def PkbPopen(seen: dict):
  """A Popen class; seen['terminated'] is set when the bench stops it."""

  class Pkb:
    pid = 0

    def __init__(self, unused_argv, **unused_kwargs):
      self.returncode = None

    def communicate(self, timeout=None):
      if timeout is not None:
        signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)
      return '', ''

    def poll(self):
      return self.returncode

    def terminate(self):
      seen['terminated'] = True
      self.returncode = -signal.SIGTERM

  return Pkb


def Main(main, argv) -> int:
  """main(argv)'s exit code, with this process's SIGTERM handler as it was
  before, whatever main set (the bench under test installs its own)."""
  before = signal.getsignal(signal.SIGTERM)
  try:
    return main(argv)
  finally:
    signal.signal(signal.SIGTERM, before)
