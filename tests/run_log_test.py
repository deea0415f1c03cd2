"""pkb.log keeps what the console showed, from the first line on."""

import logging
import os
import re
import sys

import pytest

from perfkitbenchmarker import errors
from perfkitbenchmarker import run_log
from perfkitbenchmarker import vm_util


def test_console_lines_before_and_after_the_log_exists(tmp_path, capsys):
  run_log.Capture()
  try:
    print('WARNING: 3 Local VMs share 2 cores', file=sys.stderr)
    run_dir = tmp_path / 'run'
    run_log.SetUp(str(run_dir))
    print('machine type  capped ops/s\nlocal         66,666')
    logging.getLogger('some.module').debug('the detail')
    print('no newline yet', end='')
  finally:
    run_log.TearDown()
  out, err = capsys.readouterr()
  # The terminal saw exactly what was printed...
  assert out == 'machine type  capped ops/s\nlocal         66,666\nno newline yet\n'
  assert err == 'WARNING: 3 Local VMs share 2 cores\n'
  # ...and pkb.log has each line, with its time and stream, in order.
  log = (run_dir / 'pkb.log').read_text()
  lines = [re.sub(r'^\S+ \S+ ', '', l) for l in log.splitlines()]
  assert lines.index('stderr | WARNING: 3 Local VMs share 2 cores') < \
      lines.index('stdout | machine type  capped ops/s')
  assert 'stdout | local         66,666' in lines
  assert 'stdout | no newline yet' in lines
  assert any(l.startswith('DEBUG ') and l.endswith('the detail')
             for l in lines)
  assert sys.stdout is not None and not isinstance(sys.stdout,
                                                   run_log.ConsoleTee)


def test_a_logged_warning_reads_as_every_other_warning_line(tmp_path,
                                                          capsys):
  # 'WARNING: ...', as the reporter's warning lines (ssh_vm's "System
  # tuning on ... failed" read 'WARNING System tuning on ...').
  run_log.Capture()
  try:
    run_log.SetUp(str(tmp_path / 'run'))
    logging.getLogger('some.module').warning('System tuning on %s failed',
                                             'vm-0')
  finally:
    run_log.TearDown()
  _, err = capsys.readouterr()
  assert err == 'WARNING: System tuning on vm-0 failed\n'


def test_a_warning_quoting_a_machine_plays_nothing_on_the_terminal(
    tmp_path, capsys):
  """A warning quoting what a machine said (a remote error's text, a name)
  reached the terminal raw: an escape sequence in it set the title or
  cleared the screen. The console shows controls as text, line breaks and
  tabs kept (a traceback before pkb.log exists still reads)."""
  run_log.Capture()
  try:
    run_log.SetUp(str(tmp_path / 'run'))
    logging.getLogger('some.module').warning(
        'System tuning on %s failed: %s', 'vm-0', 'no\x1b]0;owned\x07 way')
  finally:
    run_log.TearDown()
  _, err = capsys.readouterr()
  assert err == ('WARNING: System tuning on vm-0 failed: no\\x1b]0;owned'
                 '\\x07 way\n'), err


def test_aws_request_headers_never_reach_the_log(tmp_path):
  # An AWS run with a session's credentials (SSO, an assumed role) wrote
  # botocore's DEBUG 'Sending http request: ... X-Amz-Security-Token' and
  # the Authorization header's key id into pkb.log, 6 times before its
  # first refusal.
  botocore = logging.getLogger('botocore')
  level = botocore.level
  run_dir = tmp_path / 'run'
  try:
    run_log.SetUp(str(run_dir))
    logging.getLogger('botocore.endpoint').debug(
        "Sending http request: <AWSPreparedRequest headers={'Authorization': "
        "b'AWS4-HMAC-SHA256 Credential=AKIAKEYID/...', "
        "'X-Amz-Security-Token': b'SeSsIoNtOkEn'}>")
    logging.getLogger('botocore.credentials').info(
        'Found credentials in environment variables.')
  finally:
    run_log.TearDown()
    botocore.setLevel(level)
  log = (run_dir / 'pkb.log').read_text()
  assert 'SeSsIoNtOkEn' not in log and 'AKIAKEYID' not in log
  assert 'Found credentials in environment variables.' in log


def test_the_log_is_never_appended_through_a_link_or_to_a_fifo(tmp_path):
  # A downloaded run directory with pkb.log -> a file of the user's:
  # --run_stage=teardown appended its lines to that file.
  victim = tmp_path / 'victim.txt'
  victim.write_text('precious\n')
  for name, make in (('link', lambda p: p.symlink_to(victim)),
                     ('fifo', lambda p: os.mkfifo(p, 0o600))):
    run_dir = tmp_path / name
    run_dir.mkdir(mode=0o700)
    make(run_dir / run_log.LOG_FILE)
    try:
      with pytest.raises(errors.ResultsFileError,
                         match='could not write the log .*; nothing was '
                         'started.'):
        run_log.SetUp(str(run_dir))
    finally:
      run_log.TearDown()
  assert victim.read_text() == 'precious\n'


def test_a_traceback_in_the_log_masks_secrets(tmp_path):
  # An unexpected error quoting a secret (a config line, a command) went
  # into pkb.log's traceback as it was, while its console line masked it.
  run_dir = tmp_path / 'run'
  run_log.SetUp(str(run_dir))
  vm_util.RegisterSecret('traceback-secret-pw')
  try:
    try:
      raise ValueError('bad line: requirepass traceback-secret-pw')
    except ValueError:
      assert run_log.Bug('Unexpected error').startswith(' (traceback in ')
  finally:
    run_log.TearDown()
  log = (run_dir / 'pkb.log').read_text()
  assert 'ValueError: bad line: requirepass ****' in log
  assert 'traceback-secret-pw' not in log


def test_a_log_the_disk_refuses_leaves_no_run_directory(tmp_path,
                                                       monkeypatch):
  """On a disk with no inode left for pkb.log the run was refused ('could
  not write the log ...; nothing was started.') but its new directory (and
  the new results directory above it) stayed, empty."""
  from perfkitbenchmarker import flags as pkb_flags  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker import pkb  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker import run_scope  # pylint: disable=g-import-not-at-top

  def Full(run_dir):
    raise errors.ResultsFileError(
        f'could not write the log {run_dir}/pkb.log: No space left on '
        'device; nothing was started.')

  monkeypatch.setattr(run_log, 'SetUp', Full)
  results = tmp_path / 'results'
  pkb_flags.FLAGS(['pkb.py', f'--results_dir={results}'])
  try:
    with pytest.raises(errors.ResultsFileError, match='the log'):
      pkb._RunWithRecord(  # pylint: disable=protected-access
          ['pkb.py'], 'h3clog1', ['redis_memtier'], str(results / 'h3clog1'),
          {}, [], None, None, None, ['provision'], None)
  finally:
    run_scope.ReleaseAll()
    pkb_flags.FLAGS.unparse_flags()
  assert os.listdir(tmp_path) == []
