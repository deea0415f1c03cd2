"""ssh_jobs.Collect with a scripted VM (fast tier: no ssh is started)."""

import pytest

from perfkitbenchmarker import ssh_jobs


class _RaisingVm:
  """A VM whose command raises before returning anything."""
  name = 'vm-1'
  scratch_dir = '/tmp/pkb-x'

  def __init__(self, error):
    self._error = error
    self._clock = lambda: 0.0
    self._sleep = lambda seconds: None

  def RemoteCommandWithReturnCode(self, command, timeout=None, stdin=None):
    del command, timeout, stdin
    raise self._error


def test_collect_passes_on_an_error_the_command_itself_raised():
  # Not a dropped connection: the caller sees the command's own error, not
  # a NameError from the "lost connection" warning.
  with pytest.raises(ValueError, match='bad env'):
    ssh_jobs.Collect(_RaisingVm(ValueError('bad env')), 'job', 100.0)
