"""A probe on a full scratch disk names the full disk (issue 24 item 17).

A real full file system: a 192 KiB tmpfs (the VM's shipped scripts take
some of it), mounted in a private mount namespace of its own (`unshare -m`, so nothing outside the test sees it and
it goes with the process), filled up to the last page or few. The probe
script then cannot write its exit status files.
"""

import os
import shutil
import subprocess
import sys

import pytest

import e2e_support

# Every test here starts a process (tests/tier_guard.py).
pytestmark = pytest.mark.e2e

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_PROBE_ON_FULL_DISK = r'''
import os, subprocess, sys
from perfkitbenchmarker import errors, virtual_machine
from perfkitbenchmarker.load_generators import concurrent
from perfkitbenchmarker.providers.local import provider as local
scratch, pages = sys.argv[1], int(sys.argv[2])
subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=192k,mode=0700', 'tmpfs',
                scratch], check=True)
vm = local.LocalVirtualMachine(
    virtual_machine.VmSpec(cloud='Local', machine_type='local', num_cpus=1),
    'clients-0', 'clients', run_uri='tfull')
vm.scratch_dir = scratch
vm.RemoteCommand('true')  # Its scripts shipped, as at its creation.
filler = os.path.join(scratch, 'filler')
fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
try:
  while True:
    os.write(fd, b'x' * 4096)
except OSError:
  pass
os.close(fd)
os.truncate(filler, os.path.getsize(filler) - 4096 * pages)
try:
  concurrent.RunSideBySide(vm, 'probe', [['true']], timeout_s=5)
  print('no error')
except errors.Error as e:
  print(f'error: {e}')
'''


@e2e_support.Needs(
    'root and unshare (it mounts a tmpfs in a private mount namespace)',
    lambda: os.geteuid() == 0 and bool(shutil.which('unshare')))
# At 6 free pages the probe's files fit or not by the size of its CPU
# snapshots (how many threads run on the machine at that moment): 1-4
# pages never fit.
@pytest.mark.parametrize('pages', [1, 2, 3, 4])
def test_a_probe_on_a_full_disk_says_no_space_left(tmp_path, pages):
  scratch = tmp_path / 'scratch'
  scratch.mkdir()
  done = subprocess.run(
      ['unshare', '-m', '--propagation', 'private', sys.executable, '-c',
       _PROBE_ON_FULL_DISK, str(scratch), str(pages)],
      capture_output=True, text=True, timeout=60, cwd=REPO, check=False,
      env=dict(os.environ, PYTHONPATH=REPO))
  assert done.returncode == 0, done.stderr[-2000:]
  line = done.stdout.strip().splitlines()[-1]
  # With room for the probe's script but not for its status files, the
  # probe says why it left none; with none, writing the script does.
  assert line.startswith((
      'error: true on clients-0 left no exit status (No space left on '
      'device: its files in ',
      f'error: could not write {scratch}/probe.sh on clients-0: No space '
      'left on device')), line
  assert os.listdir(scratch) == []  # The tmpfs went with its namespace.
