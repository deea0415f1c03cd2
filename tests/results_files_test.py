"""Results files: a resumed run appends to the CSV; a full disk fails cleanly.

With real pkb runs (memtier's replay stand-in, tests/memtier_replay.py, on
loopback; short settings). A full disk is a
tiny tmpfs the test mounts (root only): holding --json_path and --csv_path
(the run directory, with the record and log, elsewhere so the record can say
what happened), or holding --results_dir itself, full from the start or
filled by the test while the run's shard starts. The run record and the log
on such a disk are also tested directly.
"""

import csv
import glob
import json
import logging
import os
import subprocess
import sys
import threading
import time

import psutil
import pytest

import e2e_support as e2e
import memtier_replay
from perfkitbenchmarker import errors
from perfkitbenchmarker import run_log
from perfkitbenchmarker import run_record
from perfkitbenchmarker.publishers import csv_publisher
from perfkitbenchmarker.publishers import json_publisher

SHORT = ['--load_generator=memtier', '--memtier_run_duration=1',
         '--memtier_latency_cap=100', '--memtier_confirm_repeats=2',
         '--memtier_max_probes=3', '--memtier_key_maximum=20000']
# Runs that only need each run stage to write its samples: one probe,
# reported as measured (a search of 3 probes and 2 repeats took 4-5 s more).
ONE_PROBE = SHORT + ['--memtier_max_probes=1', '--memtier_confirm_repeats=0']


def _CsvRows(path):
  with open(path, newline='') as f:
    return list(csv.DictReader(f))


def _JsonRows(path):
  with open(path) as f:
    return [json.loads(line) for line in f]


def test_csv_publisher_keeps_rows_already_in_the_file(tmp_path):
  path = str(tmp_path / 'results.csv')
  first = csv_publisher.CSVPublisher(path)
  first.Publish({'metric': 'a', 'value': 1, 'metadata': {'x': 'old'}})
  second = csv_publisher.CSVPublisher(path)  # A later stage of the run.
  second.Publish({'metric': 'b', 'value': 2, 'metadata': {'y': 'new'}})
  rows = _CsvRows(path)
  assert [(r['metric'], r['value'], r['x'], r['y']) for r in rows] == [
      ('a', '1', 'old', ''), ('b', '2', '', 'new')]
  assert os.listdir(tmp_path) == ['results.csv']  # No temporary copy left.



def test_a_grown_csv_header_keeps_the_files_mode(tmp_path):
  # The header's growth rewrites the file under a fresh name: the file the
  # user made 0600 (or a umask of 077 made so) is still 0600 after it, not
  # opened to every user.
  path = str(tmp_path / 'results.csv')
  publisher = csv_publisher.CSVPublisher(path)
  publisher.Publish({'metric': 'a', 'value': 1, 'metadata': {'x': 'old'}})
  os.chmod(path, 0o600)
  publisher.Publish({'metric': 'b', 'value': 2, 'metadata': {'y': 'new'}})
  assert [r['metric'] for r in _CsvRows(path)] == ['a', 'b']
  assert os.stat(path).st_mode & 0o777 == 0o600

_WRITER = """
import sys
from perfkitbenchmarker.publishers import csv_publisher, json_publisher
name, csv_path, json_path, count = sys.argv[1:]
publishers = [csv_publisher.CSVPublisher(csv_path),
              json_publisher.JSONPublisher(json_path)]
print('ready', flush=True)
sys.stdin.readline()  # Both have read the files before either writes.
for i in range(int(count)):
  # A new metadata key every few rows grows the CSV's header meanwhile.
  row = {'metric': 'm', 'value': i, 'sample_uri': f'{name}-{i}',
         'metadata': {f'{name}_key{i // 4}': i, 'shared': name}}
  for p in publishers:
    p.Publish(row)
"""


@pytest.mark.e2e
def test_two_runs_sharing_results_files_keep_both_runs_rows(tmp_path):
  """Issue 24 item 1: two runs given the same --csv_path and --json_path
  ended with both runs' rows in the JSON but only the second run's in the
  CSV (each rewrote the file from the copy it read at its start)."""
  csv_path, json_path = str(tmp_path / 'r.csv'), str(tmp_path / 'r.json')
  count = 40
  env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))))
  writers = [subprocess.Popen(
      [sys.executable, '-c', _WRITER, name, csv_path, json_path, str(count)],
      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
             for name in ('a', 'b')]
  try:
    for w in writers:
      assert w.stdout.readline() == 'ready\n'
    for w in writers:
      w.stdin.write('go\n')
      w.stdin.flush()
    for w in writers:
      assert w.wait(timeout=120) == 0
  finally:
    for w in writers:
      if w.poll() is None:
        w.kill()
        w.wait()
  expected = {f'{n}-{i}' for n in 'ab' for i in range(count)}
  csv_rows = _CsvRows(csv_path)
  assert sorted(r['sample_uri'] for r in csv_rows) == sorted(expected)
  assert sorted(r['sample_uri'] for r in _JsonRows(json_path)) == sorted(
      expected)
  # Every row kept its own cells under the grown header.
  for r in csv_rows:
    name, i = r['sample_uri'].split('-')
    assert r[f'{name}_key{int(i) // 4}'] == i and r['shared'] == name
  assert sorted(os.listdir(tmp_path)) == ['r.csv', 'r.json']


@pytest.mark.e2e
def test_two_pkb_runs_sharing_csv_and_json_paths_keep_both(tmp_path):
  """The audit's case end to end: two ./pkb.py runs started 1 s apart with
  the same --csv_path and --json_path (the CSV kept only the second's 14
  rows of 28)."""
  memtier = memtier_replay.Path()
  csv_path, json_path = str(tmp_path / 'r.csv'), str(tmp_path / 'r.json')
  args = ONE_PROBE + [f'--memtier_path={memtier}', f'--csv_path={csv_path}',
                  f'--json_path={json_path}']
  done = {}

  def RunOne(name):
    done[name] = e2e.Run(args, str(tmp_path / name))

  first = threading.Thread(target=RunOne, args=('a',))
  first.start()
  time.sleep(1)
  RunOne('b')
  first.join()
  for name, (proc, run_uri) in done.items():
    assert proc.returncode in (0, 4), (name, proc.stderr)
    assert not e2e.LeftoverProcesses(str(tmp_path / name), run_uri)
  json_rows, csv_rows = _JsonRows(json_path), _CsvRows(csv_path)
  runs = {publisher_run for publisher_run in
          (r['run_uri'].split('-')[0] for r in json_rows)}
  assert runs == {run_uri for _, run_uri in done.values()}
  assert sorted(r['sample_uri'] for r in csv_rows) == sorted(
      r['sample_uri'] for r in json_rows)


def test_results_files_never_write_through_a_planted_symlink(tmp_path):
  """--csv_path in a shared directory: a symlink planted at the CSV's
  temporary name made the rewrite truncate and fill its target."""
  victim = tmp_path / 'victim'
  victim.write_text('precious\n')
  path = tmp_path / 'results.csv'
  os.symlink(victim, str(path) + '.tmp')
  publisher = csv_publisher.CSVPublisher(str(path))
  publisher.Publish({'metric': 'a', 'value': 1, 'metadata': {}})
  assert victim.read_text() == 'precious\n'
  assert _CsvRows(path)[0]['metric'] == 'a'


def test_a_csv_path_that_is_not_a_csv_this_tool_wrote_is_left_alone(
    tmp_path):
  """--csv_path naming another run's perfkitbenchmarker_results.json: its
  JSON lines parsed as CSV, and the first sample rewrote the file as CSV
  rows under a header of JSON fragments; the run's samples were gone."""
  path = tmp_path / 'perfkitbenchmarker_results.json'
  path.write_text('{"metric": "throughput", "value": 72530.0, '
                  '"run_uri": "902af480-x"}\n' * 3)
  before = path.read_bytes()
  # Refused as bad input (exit 2, as another user's file is): `./pkb.py
  # --csv_path=<a run's run_record.json>` exited 1, "failed".
  with pytest.raises(errors.UsageError, match='not a CSV this tool wrote'):
    csv_publisher.CSVPublisher(str(path))
  # A first line that is blank reads as no header: rewritten the same way.
  notes = tmp_path / 'notes.txt'
  notes.write_text('\nimportant notes\nmore,notes\n')
  with pytest.raises(errors.UsageError, match='not a CSV this tool wrote'):
    csv_publisher.CSVPublisher(str(notes))
  assert notes.read_text() == '\nimportant notes\nmore,notes\n'
  # Put there after the run opened its CSV: refused at the next sample.
  publisher = csv_publisher.CSVPublisher(str(tmp_path / 'results.csv'))
  os.replace(path, tmp_path / 'results.csv')
  with pytest.raises(errors.Error, match='not a CSV this tool wrote'):
    publisher.Publish({'metric': 'a', 'value': 1, 'metadata': {'x': 1}})
  assert (tmp_path / 'results.csv').read_bytes() == before


@pytest.mark.parametrize('text', ['{\n "format_version": 1,\n}\n',
                                  'a log line\n', '[1, 2]\n'],
                         ids=['run_record', 'log', 'not_a_sample'])
def test_a_json_path_that_is_not_pkb_json_lines_is_left_alone(tmp_path,
                                                              text):
  """--json_path naming another run's run_record.json appended a sample
  line to it; that run's `--run_stage=teardown` then stopped at `Run
  record ... is unreadable: Extra data: line 140 column 1`, its resources
  left behind."""
  path = tmp_path / 'run_record.json'
  path.write_text(text)
  with pytest.raises(errors.UsageError,
                     match='not PKB JSON lines this tool'):
    json_publisher.JSONPublisher(str(path))
  assert path.read_text() == text
  (tmp_path / 'ours.json').write_text('')  # Empty, or PKB's: appended to.
  publisher = json_publisher.JSONPublisher(str(tmp_path / 'ours.json'))
  publisher.Publish({'metric': 'a', 'value': 1, 'metadata': {}})
  json_publisher.JSONPublisher(str(tmp_path / 'ours.json')).Publish(
      {'metric': 'b', 'value': 2, 'metadata': {}})
  assert [r['metric'] for r in _JsonRows(tmp_path / 'ours.json')] == [
      'a', 'b']


def test_a_json_path_whose_first_sample_names_a_key_twice_is_refused(
    tmp_path):
  """A results file whose first line names "metric" twice passed as PKB's
  (json read the last) and the run appended to it, a file compare then
  refuses; refused before the run now, naming the file and the key."""
  path = tmp_path / 'results.json'
  text = '{"metric": "a", "value": 1, "metric": "b"}\n'
  path.write_text(text)
  with pytest.raises(errors.UsageError) as refused:
    json_publisher.JSONPublisher(str(path))
  assert str(refused.value) == (
      f'the results file {path}:1: the key "metric" is given twice in one '
      'object, which a run never writes; refused rather than reading either '
      '(the file was edited or damaged); move it away or give another '
      '--json_path.')
  assert path.read_text() == text


def test_csv_through_the_users_own_symlink_grows_the_file_it_names(
    tmp_path):
  """--csv_path=link.csv, the user's symlink to a shared CSV: the header's
  first growth renamed a new file over the link, so the shared file kept
  nothing of this run (or only the rows before the growth)."""
  (tmp_path / 'shared').mkdir()
  target = tmp_path / 'shared' / 'results.csv'
  target.write_text('')
  link = tmp_path / 'link.csv'
  os.symlink(target, link)
  publisher = csv_publisher.CSVPublisher(str(link))
  publisher.Publish({'metric': 'a', 'value': 1, 'metadata': {'x': 1}})
  publisher.Publish({'metric': 'b', 'value': 2, 'metadata': {'x': 2}})
  publisher.Publish({'metric': 'c', 'value': 3, 'metadata': {'y': 3}})
  assert os.path.islink(link)
  assert [(r['metric'], r['x'], r['y']) for r in _CsvRows(target)] == [
      ('a', '1', ''), ('b', '2', ''), ('c', '', '3')]
  assert os.listdir(tmp_path / 'shared') == ['results.csv']


@e2e.Needs('root (to give a symlink and a file to user nobody)',
           lambda: os.geteuid() == 0, 'run the tests as root, as CI does')
@pytest.mark.parametrize('planted', ['symlink', 'file'])
def test_another_users_results_file_is_refused(tmp_path, planted):
  """A root run with --csv_path=/tmp/x.csv read a 0600 file through
  nobody's symlink there and rewrote its lines into a 0644 CSV (and
  --json_path appended samples to it). Refused in one line instead."""
  secret = tmp_path / 'secret'
  secret.write_text('root:HASH:1\nalice:HASH2:2\n')
  os.chmod(secret, 0o600)
  for name in ('x.csv', 'x.json'):
    path = tmp_path / name
    if planted == 'symlink':
      os.symlink(secret, path)
      os.lchown(path, 65534, 65534)
    else:
      path.write_text('')
      os.chown(path, 65534, 65534)
    make = (csv_publisher.CSVPublisher if name.endswith('csv') else
            json_publisher.JSONPublisher)
    with pytest.raises(errors.UsageError, match='uid 65534'):
      make(str(path))
  assert secret.read_text() == 'root:HASH:1\nalice:HASH2:2\n'
  assert sorted(os.listdir(tmp_path)) == ['secret', 'x.csv', 'x.json']


@pytest.mark.e2e
def test_resumed_run_stage_appends_to_the_csv(tmp_path):
  """provision,prepare / run / run again / cleanup,teardown: no row lost."""
  memtier = memtier_replay.Path()
  results = str(tmp_path)
  run_uri = e2e.NewRunUri()
  args = ONE_PROBE + [f'--memtier_path={memtier}']
  for stages in ('provision,prepare', 'run', 'run', 'cleanup,teardown'):
    proc, _ = e2e.Run(args + [f'--run_stage={stages}'], results,
                      run_uri=run_uri)
    assert proc.returncode == 0, (stages, proc.stderr)
  run_dir = os.path.join(results, run_uri)
  json_rows = _JsonRows(os.path.join(run_dir,
                                     'perfkitbenchmarker_results.json'))
  csv_rows = _CsvRows(os.path.join(run_dir, 'results.csv'))
  runs = [r for r in json_rows if r['metric'] == 'latency_capped_throughput']
  assert len(runs) == 2  # Both run stages published.
  assert len(csv_rows) == len(json_rows)
  assert ([r['sample_uri'] for r in csv_rows] ==
          [r['sample_uri'] for r in json_rows])
  assert not e2e.LeftoverProcesses(results, run_uri)


def _Tmpfs(mount, size):
  """Mounts a tmpfs of `size` at `mount` (a context: unmounted after)."""
  mount.mkdir()
  proc = subprocess.run(['mount', '-t', 'tmpfs', '-o', f'size={size}',
                         'tmpfs', str(mount)], capture_output=True, text=True)
  if proc.returncode != 0:
    if os.environ.get('CI') == 'true':
      pytest.fail(f'cannot mount a tmpfs for the full disk: {proc.stderr}')
    pytest.skip(f'cannot mount a tmpfs (root needed): {proc.stderr.strip()}')
  try:
    yield str(mount)
  finally:
    subprocess.run(['umount', '-l', str(mount)], check=False)


@pytest.fixture
def full_disk(tmp_path):
  yield from _Tmpfs(tmp_path / 'full', '16k')


@pytest.fixture
def small_disk(tmp_path):
  """A tmpfs with room for a run's directory, until the test fills it."""
  yield from _Tmpfs(tmp_path / 'small', '256k')


def _Fill(mount):
  """Takes every free block of the tmpfs at `mount`."""
  fd = os.open(os.path.join(mount, 'filler'), os.O_WRONLY | os.O_CREAT)
  try:
    while True:
      os.write(fd, b'\0' * 4096)
  except OSError:
    pass
  finally:
    os.close(fd)


def _TmpFiles(root):
  return [os.path.join(d, f) for d, _, files in os.walk(root)
          for f in files if f.endswith('.tmp')]


@pytest.mark.e2e
def test_full_disk_is_one_line_and_the_run_still_cleans_up(tmp_path,
                                                           full_disk):
  memtier = memtier_replay.Path()
  results = str(tmp_path / 'results')
  json_path = os.path.join(full_disk, 'results.json')
  csv_path = os.path.join(full_disk, 'results.csv')
  proc, run_uri = e2e.Run(
      SHORT + [f'--memtier_path={memtier}', f'--json_path={json_path}',
               f'--csv_path={csv_path}'], results)
  assert proc.returncode not in (0, 130), proc.stderr
  assert 'Traceback' not in proc.stderr + proc.stdout
  lines = [l for l in proc.stderr.splitlines() if l.strip()]
  assert len(lines) == 1, proc.stderr
  assert 'No space left on device' in lines[0]
  assert json_path in lines[0] or csv_path in lines[0], lines
  # Samples written before are kept, whole; no partial copy is left.
  assert sorted(os.listdir(full_disk)) == ['results.csv', 'results.json']
  kept = _JsonRows(json_path)
  assert kept and all(r['run_uri'] for r in kept)
  assert 1 <= len(_CsvRows(csv_path)) <= len(kept)
  # Cleanup and teardown ran; the record says the run failed.
  assert not e2e.LeftoverProcesses(results, run_uri)
  record = e2e.Record(results, run_uri)
  assert record['status'] == 'failed'
  shards = [e for e in record['resources'] if e['kind'] in e2e.SHARD_KINDS]
  assert shards and all(e['status'] == 'deleted' for e in shards)


@pytest.mark.e2e
@pytest.mark.parametrize('how', ['full', 'read-only'])
def test_run_record_on_a_full_disk_goes_on_from_memory(small_disk, how):
  run_dir = os.path.join(small_disk, 'r1')
  record = run_record.RunRecord.Create(run_dir, 'r1')
  record.AddResource('thing', 'a', pid=1)
  if how == 'full':
    _Fill(small_disk)
    cause = 'No space left on device'
  else:
    subprocess.run(['mount', '-o', 'remount,ro', small_disk], check=True)
    cause = 'Read-only file system'
  # Nothing may be created that the file does not hold.
  with pytest.raises(run_record.RecordNotSaved) as refused:
    record.AddResource('thing', 'b')
  assert str(refused.value) == (
      f'could not write the run record {record.path}: {cause}')
  assert isinstance(refused.value, errors.Error)  # One line, no traceback.
  assert not _TmpFiles(small_disk)
  with pytest.raises(run_record.RecordNotSaved):
    record.UpdateResource('thing', 'a', port=7001)  # A fact teardown needs.
  assert 'delete what is left with ./pkb.py --run_stage=teardown ' \
         '--run_uri=r1' in record.WriteProblem()
  # Retiring writes never raise; memory drives cleanup.
  assert [e['name'] for e in record.LiveResources()] == ['b', 'a']
  record.UpdateResource('thing', 'b', status='deleted')
  record.UpdateResource('thing', 'a', status='deleted')
  record.MarkStageDone('teardown')
  record.SetStatus('failed')
  assert not _TmpFiles(small_disk)
  on_disk = run_record.RunRecord.Load(run_dir, 'r1')
  if how == 'full':  # Nothing is left, so the final state went in place.
    assert record.WriteProblem() is None
    assert on_disk.status == 'failed'
    assert [(e['name'], e['status']) for e in on_disk.Resources()] == [
        ('a', 'deleted'), ('b', 'deleted')]
  else:
    assert record.WriteProblem() == (
        f'could not write the run record {record.path}: {cause}, so it is '
        'out of date; nothing of the run is left.')
    assert on_disk.status == 'running'
    assert [e['name'] for e in on_disk.Resources()] == ['a']


@pytest.fixture
def root_logging():
  """The root logger's handlers and level, restored after the test."""
  root = logging.getLogger()
  handlers, level = list(root.handlers), root.level
  yield
  for h in list(root.handlers):
    root.removeHandler(h)
    if isinstance(h, run_log.RunLogHandler):
      h.close()
  for h in handlers:
    root.addHandler(h)
  root.setLevel(level)


@pytest.mark.e2e
def test_log_on_a_full_disk_stops_quietly(small_disk, root_logging, capfd):
  run_dir = os.path.join(small_disk, 'r2')
  run_log.SetUp(run_dir)
  logging.info('before the disk filled')
  _Fill(small_disk)
  for i in range(200):  # More than the log's last block holds.
    logging.debug('line %d %s', i, 'x' * 100)
  for h in logging.getLogger().handlers:  # As logging.shutdown at exit.
    h.flush()
    h.close()
  path = os.path.join(run_dir, run_log.LOG_FILE)
  assert run_log.Failure() == (
      f'could not write the log {path}: No space left on device; the log '
      'stops there.')
  out, err = capfd.readouterr()
  assert not out + err
  with open(path) as f:
    assert 'before the disk filled' in f.readline()


def _ScratchEnv(tmp_path):
  scratch = tmp_path / 'scratch'
  scratch.mkdir()
  return str(scratch), dict(os.environ, PKB_LOCAL_SCRATCH=str(scratch))


@pytest.mark.e2e
def test_results_dir_full_from_the_start_is_refused(tmp_path, small_disk):
  memtier = memtier_replay.Path()
  scratch, env = _ScratchEnv(tmp_path)
  _Fill(small_disk)
  proc, run_uri = e2e.Run(e2e.FAST + [f'--memtier_path={memtier}'],
                          small_disk, env=env)
  assert proc.returncode == 1, proc.stderr
  assert 'Traceback' not in proc.stderr + proc.stdout
  lines = [l for l in proc.stderr.splitlines() if l.strip()]
  assert len(lines) == 1, proc.stderr
  run_dir = os.path.join(small_disk, run_uri)
  assert f' {run_dir}/' in lines[0], lines
  assert lines[0].endswith(': No space left on device; nothing was started.')
  assert not os.listdir(scratch)  # No VM, no shard.
  assert not os.path.exists(os.path.join(run_dir, run_record.RECORD_FILE))
  assert not _TmpFiles(small_disk)


def _ShardPids(record_path, scratch_dir):
  """Shard PIDs in the record on disk and in the shards' pidfiles."""
  pids = set()
  try:
    with open(record_path) as f:
      record = json.load(f)
  except (OSError, ValueError):  # Not there yet, or being rewritten.
    record = {}
  for entry in record.get('resources', []):
    if entry['kind'] in e2e.SHARD_KINDS and entry['data'].get('pid'):
      pids.add(entry['data']['pid'])
  for path in glob.glob(os.path.join(scratch_dir, '*', '*.pid')):
    try:
      with open(path) as f:
        pids.add(int(f.read()))
    except (OSError, ValueError):
      pass
  return pids


def _RedisServerAlive(pid):
  try:
    proc = psutil.Process(pid)
    return (proc.status() != psutil.STATUS_ZOMBIE and
            'redis-server' in ' '.join(proc.cmdline()))
  except psutil.Error:
    return False


@pytest.mark.e2e
def test_results_dir_filling_up_mid_run(tmp_path, small_disk):
  """The disk fills as the shard starts: one line, nothing left behind."""
  memtier = memtier_replay.Path()
  scratch, env = _ScratchEnv(tmp_path)
  run_uri = e2e.NewRunUri()
  run_dir = os.path.join(small_disk, run_uri)
  proc = subprocess.Popen(
      e2e.Command(e2e.FAST + [f'--memtier_path={memtier}'], run_uri,
                  small_disk),
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
      cwd=e2e.REPO)
  seen, filled = set(), threading.Event()

  def Watch():  # Fills the disk once a shard has started (its PID known).
    while proc.poll() is None:
      pids = _ShardPids(
          os.path.join(run_dir, run_record.RECORD_FILE),
          os.path.join(scratch, f'pkb-{run_uri}.*'))
      seen.update(pids)
      # Not at the record's entry for a shard: it is written before the
      # shard starts, and a hog flake hunt filled the disk in that gap
      # (no shard ever ran, so none could be checked gone).
      if pids and not filled.is_set():
        _Fill(small_disk)
        filled.set()
      time.sleep(0.005)

  watcher = threading.Thread(target=Watch, daemon=True)
  watcher.start()
  try:
    out, err = proc.communicate(timeout=120)
  finally:
    if proc.poll() is None:
      proc.kill()
  watcher.join()
  # The whole story on failure: the run directory and its pkb.log are on
  # the tmpfs, which is gone once the test ends.
  log = os.path.join(run_dir, 'pkb.log')
  told = e2e.Told(out, err) + '\npkb.log: '
  if os.path.exists(log):
    with open(log, errors='replace') as f:
      told += f.read()[-6000:]
  assert filled.is_set() and seen, told
  # Gone within LeftoverProcesses' settle of pkb's exit (reaped once
  # scheduled, later on a busy machine).
  e2e.WaitFor(lambda: not [p for p in seen if _RedisServerAlive(p)],
              'the shards gone', timeout=3.0)
  assert proc.returncode == 1, err
  assert 'Traceback' not in out + err and 'Logging error' not in err
  lines = [l for l in err.splitlines() if l.strip()]
  assert len(lines) == 1, err
  assert f' {run_dir}/' in lines[0] and 'No space left on device' in lines[0]
  assert not os.listdir(scratch)
  assert not _TmpFiles(small_disk)
  # With nothing left, the record's final state was written in place.
  record = e2e.Record(small_disk, run_uri)
  assert record['status'] == 'failed'
  assert record['resources'] and all(e['status'] == 'deleted'
                                     for e in record['resources'])
  assert not e2e.LeftoverProcesses(small_disk, run_uri)
  # A later --run_stage=teardown would accept it and find nothing to do.
  assert not list(run_record.RunRecord.Load(run_dir, run_uri).LiveResources())
