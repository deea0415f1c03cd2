"""Kept evidence and the command that rechecks a run from it.

Real runs (redis-benchmark on Local; the memtier replay stand-in,
tests/memtier_replay.py) keep every probe's command line and raw output in
the run directory; `scripts/recompute.py` recomputes each published figure
from them and the dated price rows, says 0 differences, and exits non-zero
once one raw number is edited.
"""

import gzip
import json
import os
import shutil
import signal
import stat
import sys

import pytest

import e2e_support as e2e
import pkb_forkserver
from perfkitbenchmarker import evidence
from perfkitbenchmarker import measurement
from perfkitbenchmarker import recompute
from perfkitbenchmarker import regular_files
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.linux_packages import argv_secret
from perfkitbenchmarker.load_generators import memtier
from tests import memtier_replay

SCRIPT = os.path.join(e2e.REPO, 'scripts', 'recompute.py')


def _Recompute(run_dir):
  return pkb_forkserver.Run([sys.executable, SCRIPT, str(run_dir)],
                            timeout=120,
                            cwd=e2e.REPO)


def _ProbeDirs(run_dir):
  root = os.path.join(run_dir, evidence.RAW_DIR)
  return sorted(os.path.join(vm, name) for vm in os.listdir(root)
                for name in os.listdir(os.path.join(root, vm)))


def _AssertAgrees(run_dir):
  proc = _Recompute(run_dir)
  assert proc.returncode == 0, proc.stdout + proc.stderr
  lines = proc.stdout.splitlines()
  assert len(lines) == 1 and lines[0].startswith(
      'pkb-recompute: 0 differences: '), proc.stdout
  return lines[0]


def _EditAndExpectDifference(run_dir, tmp_path, rel, edit):
  """A copy of the run with one raw file of probe `rel` edited must fail
  the recomputation, naming the probe."""
  copy = tmp_path / 'edited'
  shutil.copytree(run_dir, copy)
  directory = copy / evidence.RAW_DIR / rel
  for name in sorted(os.listdir(directory)):
    if edit(directory / name):
      break
  else:
    pytest.fail(f'nothing to edit in {rel}')
  proc = _Recompute(copy)
  assert proc.returncode == 1, proc.stdout + proc.stderr
  assert 'DIFFERENT line' in proc.stdout
  assert '1 difference' not in proc.stderr or 'DIFFERENT' in proc.stdout
  assert proc.stderr.startswith('pkb-recompute: ') and len(
      proc.stderr.splitlines()) == 1
  return proc.stdout


@pytest.mark.e2e
@e2e.NeedsTools('redis-server', 'redis-benchmark', 'redis-cli')
def test_redis_benchmark_run_recomputes_after_teardown(tmp_path):
  results = str(tmp_path / 'results')
  run_uri = e2e.NewRunUri()
  proc, _ = e2e.Run(['--run_stage=provision,prepare,run',
                     '--load_generator=redis_benchmark',
                     '--accept_unconfirmed'] + e2e.FAST, results,
                    run_uri=run_uri)
  assert proc.returncode == 0, proc.stderr
  proc, _ = e2e.Run(['--run_stage=cleanup,teardown'], results,
                    run_uri=run_uri)
  assert proc.returncode == 0, proc.stderr
  run_dir = os.path.join(results, run_uri)
  # The evidence outlived cleanup and teardown, 0700 directories of 0600
  # files, the password only as argv_secret's placeholder.
  probes = _ProbeDirs(run_dir)
  assert any(p.endswith('/redis-benchmark-1') for p in probes)
  assert any(p.endswith('/redis-cli-pipe') for p in probes)  # The preload.
  for rel in probes:
    directory = os.path.join(run_dir, evidence.RAW_DIR, rel)
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    for name in os.listdir(directory):
      assert stat.S_IMODE(os.stat(os.path.join(directory, name)).st_mode) == (
          0o600)
  first = next(p for p in probes if p.endswith('/redis-benchmark-1'))
  with open(os.path.join(run_dir, evidence.RAW_DIR, first,
                         evidence.COMMAND_FILE)) as f:
    commands = f.read()
  assert 'redis-benchmark -h 127.0.0.1' in commands
  assert f'-a {argv_secret.TOKEN}' in commands
  with open(os.path.join(run_dir, 'pkb.log')) as f:
    assert f'-a {argv_secret.TOKEN}' in f.read()  # The command line, logged.
  summary = _AssertAgrees(run_dir)
  assert ' 0 price rows' not in summary

  def EditThroughput(path):
    if not path.name.startswith('out.'):
      return False
    text = path.read_text()
    edited = text.replace('throughput summary: ', 'throughput summary: 1', 1)
    path.write_text(edited)
    return edited != text

  out = _EditAndExpectDifference(run_dir, tmp_path, first, EditThroughput)
  assert '(probe 0): value published' in out


@pytest.mark.e2e
@e2e.NeedsTools('redis-server', 'redis-cli')
def test_memtier_run_recomputes_and_one_edited_count_fails(tmp_path):
  results = str(tmp_path / 'results')
  # Found on PATH, as an installed memtier is.
  path = os.path.dirname(memtier_replay.Path())
  proc, run_uri = e2e.Run(['--load_generator=memtier',
                           '--accept_unconfirmed'] + e2e.FAST, results,
                          env=dict(os.environ,
                                   PATH=f'{path}:{os.environ["PATH"]}'))
  assert proc.returncode == 0, proc.stderr
  run_dir = os.path.join(results, run_uri)
  probes = _ProbeDirs(run_dir)
  assert any(p.endswith('/memtier-preload') for p in probes)
  first = next(p for p in probes if p.endswith('/memtier-1'))
  parts = evidence.Read(run_dir, os.path.join(evidence.RAW_DIR, first))
  doc = json.loads(next(v for k, v in parts.items() if k.endswith('.json')))
  # memtier copies -a into its JSON: kept masked.
  assert vm_util.MASK in doc['configuration']['authenticate']
  assert 'pkb-load' in doc['configuration']['authenticate']
  manifest = json.loads(parts[evidence.MANIFEST])
  assert manifest['load_generator'] == 'memtier_benchmark'
  _AssertAgrees(run_dir)

  def EditCount(path):
    if not path.name.endswith('.json'):
      return False
    data = json.loads(path.read_text())
    data['ALL STATS']['Totals']['Count'] += 1000
    path.write_text(json.dumps(data))
    return True

  out = _EditAndExpectDifference(run_dir, tmp_path, first, EditCount)
  assert '(probe 0): value published' in out


@pytest.mark.e2e
def test_bad_input_is_one_line_exit_2(tmp_path):
  proc = _Recompute(tmp_path / 'nope')
  assert proc.returncode == 2
  assert proc.stderr == f'pkb-recompute: {tmp_path / "nope"}: no such run directory\n'
  proc = _Recompute(tmp_path)
  assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
  assert 'perfkitbenchmarker_results.json' in proc.stderr
  (tmp_path / recompute.RESULTS_FILE).write_text(json.dumps({
      'metric': 'throughput', 'value': 1.0, 'unit': 'ops/sec',
      'timestamp': 1.0, 'test': 'redis_memtier', 'official': False,
      'owner': 'x', 'run_uri': 'abc-1', 'sample_uri': 'u', 'product_name':
      'PerfKitBenchmarker', 'labels': '|probe_index:0|'}) + '\n')
  proc = _Recompute(tmp_path)
  assert proc.returncode == 2 and 'name no raw files' in proc.stderr
  assert len(proc.stderr.splitlines()) == 1


class _Record:
  def __init__(self, run_dir):
    self.run_dir = run_dir


class _Vm:
  name = 'clients-0'

  def __init__(self, run_dir):
    self.record = _Record(run_dir)


def test_a_run_whose_samples_went_elsewhere_is_not_called_no_run(tmp_path):
  # A run of --json_path=/tmp/x.json keeps its record, log and raw files
  # but no results file: recompute said '(not a run directory)'.
  run_dir = tmp_path / 'abc123'
  run_dir.mkdir()
  (run_dir / 'run_record.json').write_text('{}')
  with pytest.raises(recompute.BadInput) as refused:
    recompute.Recompute(str(run_dir))
  assert 'not a run directory' not in str(refused.value)
  assert '--json_path put them elsewhere' in str(refused.value)
  (run_dir / 'run_record.json').unlink()
  with pytest.raises(recompute.BadInput, match=r'\(not a run directory\)'):
    recompute.Recompute(str(run_dir))


def test_keep_masks_compresses_and_never_overwrites(tmp_path):
  run_dir = tmp_path / 'run'
  os.mkdir(run_dir, 0o700)
  vm = _Vm(str(run_dir))
  big = 'x' * (evidence.GZIP_ABOVE + 1)
  rel = evidence.Keep(vm, 'memtier-1', ['memtier -a s3cret'],
                      {'out.0': 'password s3cret', 'file.big.json': big},
                      secrets=('s3cret',))
  assert rel == os.path.join(evidence.RAW_DIR, 'clients-0', 'memtier-1')
  directory = run_dir / rel
  assert sorted(os.listdir(directory)) == ['command.txt', 'file.big.json.gz',
                                           'out.0']
  with gzip.open(directory / 'file.big.json.gz', 'rt') as f:
    assert f.read() == big
  parts = evidence.Read(str(run_dir), rel)
  assert parts['out.0'] == f'password {vm_util.MASK}'
  assert parts['command.txt'] == f'0\tmemtier -a {vm_util.MASK}\n'
  # A name used again (a resumed stage, YCSB's phases) gets a new directory.
  again = evidence.Keep(vm, 'memtier-1', [], {'out.0': 'second'})
  assert again.endswith('memtier-1-2')
  assert evidence.Read(str(run_dir), rel)['out.0'].startswith('password')
  # Outside a run (a bare VM) nothing is written.
  bare = _Vm(None)
  assert evidence.Keep(bare, 'x', [], {'out.0': ''}) is None


def test_keep_gives_up_in_one_line_when_it_cannot_write(tmp_path):
  run_dir = tmp_path / 'run'
  os.mkdir(run_dir, 0o700)
  vm = _Vm(str(run_dir))
  (run_dir / evidence.RAW_DIR).write_text('a file where raw/ goes')
  assert evidence.Keep(vm, 'memtier-1', ['memtier'], {'out.0': 'x'}) is None
  failure = evidence.Failure(str(run_dir))
  assert failure.startswith("could not keep the raw output of clients-0's "
                            f'memtier-1 in {run_dir}/raw/clients-0 (')
  assert '\n' not in failure and 'pkb-recompute cannot recheck' in failure
  # It does not try again (nor say it again) for the rest of the run.
  os.remove(run_dir / evidence.RAW_DIR)
  assert evidence.Keep(vm, 'memtier-2', [], {'out.0': 'y'}) is None
  assert not os.path.exists(run_dir / evidence.RAW_DIR)
  assert evidence.Failure(str(run_dir)) == failure
  assert evidence.Failure(str(tmp_path / 'other')) is None


_MEMTIER = os.path.join(e2e.REPO, 'tests', 'data',
                        'memtier_single_t1c32_tt5_under1ms')


@pytest.mark.parametrize('section,key,value,words', [
    ('Sets', None, None, 'not an object where a section was'),
    ('Totals', 'Count', 1e400, 'too large or infinite'),
    ('Totals', 'Count', 10**400, 'too large or infinite'),
    ('Gets', 'Ops/sec', 10**400, 'too large or infinite'),
], ids=['null-section', 'infinite-count', 'huge-count', 'huge-rate'])
def test_a_damaged_memtier_json_is_one_line(tmp_path, section, key, value,
                                            words):
  # These were tracebacks (AttributeError, OverflowError) from
  # pkb-recompute on a downloaded run whose memtier JSON said so.
  probe = tmp_path / 'run' / evidence.RAW_DIR / 'clients-0' / 'memtier-1'
  probe.mkdir(parents=True)
  shutil.copy(_MEMTIER + '.json', probe / 'file.m.json')
  shutil.copy(_MEMTIER + '.txt', probe / 'out.0')
  (probe / evidence.MANIFEST).write_text(json.dumps({
      'load_generator': 'memtier_benchmark', 'load': [1, 32, 1],
      'json': ['file.m.json'], 'stdout': ['out.0'], 'test_time_s': 5}))
  rel = os.path.join(evidence.RAW_DIR, 'clients-0', 'memtier-1')
  with regular_files.Directory(str(tmp_path / 'run')) as directory:
    assert recompute.ProbeMeasurement(directory, rel).throughput > 0
    doc = json.loads((probe / 'file.m.json').read_text())
    if key is None:
      doc['ALL STATS'][section] = value
    else:
      doc['ALL STATS'][section][key] = value
    (probe / 'file.m.json').write_text(json.dumps(doc))
    with pytest.raises(recompute.BadInput) as e:
      recompute.ProbeMeasurement(directory, rel)
  line = str(e.value)
  assert line.startswith(f'the raw files in {tmp_path}/run/{rel} cannot be '
                         'recomputed: '), line
  assert words in line and '\n' not in line


def test_a_key_twice_in_a_probe_manifest_is_one_line_exit_2(tmp_path,
                                                            capsys):
  """A manifest naming "load" twice was read as its last (pydantic's JSON
  parser keeps it, silently): a probe of 1 client recomputed as one of 99
  with exit 0 or 1, not refused as the results file's key twice is."""
  run_dir = tmp_path / 'run'
  probe = run_dir / evidence.RAW_DIR / 'clients-0' / 'memtier-1'
  probe.mkdir(parents=True)
  shutil.copy(_MEMTIER + '.json', probe / 'file.m.json')
  shutil.copy(_MEMTIER + '.txt', probe / 'out.0')
  manifest = probe / evidence.MANIFEST
  manifest.write_text(
      '{"load_generator": "memtier_benchmark", "load": [1, 32, 1], '
      '"json": ["file.m.json"], "stdout": ["out.0"], "test_time_s": 5, '
      '"load": [1, 99, 1]}')
  rel = os.path.join(evidence.RAW_DIR, 'clients-0', 'memtier-1')
  with regular_files.Directory(str(run_dir)) as directory:
    with pytest.raises(recompute.BadInput) as refused:
      recompute.ProbeMeasurement(directory, rel)
  assert str(refused.value) == (
      f'{manifest}: the key "load" is given twice in one object, which a run '
      'never writes; refused rather than reading either (the file was '
      'edited or damaged)')
  # pkb-recompute: that line, exit 2 (the results file names the probe).
  (run_dir / recompute.RESULTS_FILE).write_text(json.dumps({
      'metric': 'throughput', 'value': 1.0, 'unit': 'ops/sec',
      'timestamp': 1.0, 'test': 'redis_memtier', 'official': False,
      'owner': 'x', 'run_uri': 'abc-1', 'sample_uri': 'u', 'product_name':
      'PerfKitBenchmarker', 'labels': '|probe_index:0|,|threads:1|,'
      f'|clients:32|,|raw_output:{rel}|'}) + '\n')
  handler = signal.getsignal(signal.SIGINT)  # Main sets its own.
  try:
    assert recompute.Main([str(run_dir)]) == recompute.EXIT_USAGE
  finally:
    signal.signal(signal.SIGINT, handler)
  out, err = capsys.readouterr()
  assert out == '' and err == (
      f'pkb-recompute: {refused.value}\n'), err


def _MemtierProbe(tmp_path, parts=1, load_generator='memtier_benchmark'):
  """A kept memtier probe of `parts` processes (the recorded JSON and
  stdout each): (run dir, probe dir, its path from the run dir)."""
  probe = tmp_path / 'run' / evidence.RAW_DIR / 'clients-0' / 'memtier-1'
  probe.mkdir(parents=True)
  for n in range(parts):
    shutil.copy(_MEMTIER + '.json', probe / f'file{n}.m.json')
    shutil.copy(_MEMTIER + '.txt', probe / f'out.{n}')
  (probe / evidence.MANIFEST).write_text(json.dumps({
      'load_generator': load_generator, 'load': [1, 32, 1],
      'json': [f'file{n}.m.json' for n in range(parts)],
      'stdout': [f'out.{n}' for n in range(parts)], 'test_time_s': 5}))
  return (tmp_path / 'run', probe,
          os.path.join(evidence.RAW_DIR, 'clients-0', 'memtier-1'))


def test_a_key_twice_in_a_kept_memtier_json_is_one_line_naming_it(
    tmp_path):
  """memtier's JSON naming "ALL STATS" twice was read as its last, silently:
  a second copy with every count doubled appended to one process's file
  recomputed twice its throughput, which then passed for the run's own
  (exit 0 against an edited results file too). Refused now, in one line
  naming that file and the key, as a manifest's is."""
  run_dir, probe, rel = _MemtierProbe(tmp_path, parts=2)
  with regular_files.Directory(str(run_dir)) as directory:
    honest = recompute.ProbeMeasurement(directory, rel).throughput
  text = (probe / 'file1.m.json').read_text()
  doubled = json.loads(text)['ALL STATS']
  for section in doubled.values():
    if isinstance(section, dict) and 'Count' in section:
      section['Count'] *= 2
  (probe / 'file1.m.json').write_text(
      text.rstrip()[:-1] + f', "ALL STATS": {json.dumps(doubled)}}}')
  with regular_files.Directory(str(run_dir)) as directory:
    with pytest.raises(recompute.BadInput) as refused:
      recompute.ProbeMeasurement(directory, rel)
  assert str(refused.value) == (
      f'{run_dir}/{rel}/file1.m.json: the key "ALL STATS" is given twice in '
      'one object, which a run never writes; refused rather than reading '
      'either (the file was edited or damaged)'), honest


def test_a_manifest_of_a_load_generator_unknown_is_one_line(tmp_path):
  """A manifest naming a load generator this command does not know was a
  NameError (a traceback) since the manifest's path became an argument."""
  run_dir, _, rel = _MemtierProbe(tmp_path, load_generator='ycsb')
  with regular_files.Directory(str(run_dir)) as directory:
    with pytest.raises(recompute.BadInput) as refused:
      recompute.ProbeMeasurement(directory, rel)
  assert str(refused.value) == (
      f'{run_dir}/{rel}/{evidence.MANIFEST}: a load generator this command '
      'does not know (it knows memtier_benchmark and redis-benchmark)')


def test_a_kept_probe_whose_requests_were_refused_is_a_difference(tmp_path):
  """A run from before the runs stopped at error replies kept its probes'
  stderr: the recorded probe against a shard past its maxmemory (408 SETs
  refused with -OOM, counted by memtier as operations) was recomputed and
  agreed ('0 differences'), its figures confirmed."""
  run_dir = tmp_path / 'run'
  os.mkdir(run_dir, 0o700)
  stem = os.path.join(e2e.REPO, 'tests', 'data',
                      'memtier_single_t1c4_tt2_rate100_oom')
  parts = {}
  for key, ext in (('file.probe-1-7001.json', '.json'), ('out.0', '.txt'),
                   ('err.0', '.err')):
    with open(stem + ext) as f:
      parts[key] = f.read()
  manifest = memtier.Manifest(measurement.Load(1, 4), ['probe-1-7001.json'],
                              2, 0)
  rel = evidence.Keep(_Vm(str(run_dir)), 'memtier-1', [],
                      {**parts, evidence.MANIFEST: json.dumps(manifest)})
  with regular_files.Directory(str(run_dir)) as directory:
    m = recompute.ProbeMeasurement(directory, rel)
    assert m.ops == 812
    assert m.metadata[recompute.UNSERVED] == (
        'its raw files say the server did not serve every request (408 '
        'error replies), which its figures count as served')
    # Its GETs were served: without the stderr, nothing is said.
    os.unlink(run_dir / rel / 'err.0')
    assert recompute.UNSERVED not in recompute.ProbeMeasurement(
        directory, rel).metadata
    # A stderr that cannot be read (here a symlink, not followed; a flood
    # of error lines past the 32 MiB bound) confirms nothing either.
    os.symlink(stem + '.err', run_dir / rel / 'err.0')
    assert recompute.ProbeMeasurement(directory, rel).metadata[
        recompute.UNSERVED].startswith('its stderr err.0 could not be read: ')
