"""The `sshd` pytest fixture: a real OpenSSH server on 127.0.0.1.

The server itself is scripts/loopback_sshd.py (shared with
scripts/bench_probe_overhead.py); each test module gets one.
"""

import pytest

import e2e_support
from scripts.loopback_sshd import Available  # pylint: disable=unused-import
from scripts.loopback_sshd import FreePort  # pylint: disable=unused-import
from scripts.loopback_sshd import SSHD  # pylint: disable=unused-import
from scripts.loopback_sshd import Sshd


@pytest.fixture(scope='module')
def sshd(tmp_path_factory):
  if not Available():
    e2e_support.Unavailable('openssh-server (/usr/sbin/sshd) and ssh',
                            'scripts/setup.sh')
  server = Sshd(str(tmp_path_factory.mktemp('sshd'))).Start()
  yield server
  server.Stop()
