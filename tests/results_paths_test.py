"""Results paths that would lose results are refused before the run has a
directory; a refusal leaves nothing behind; a long value is quoted short
(issue 35 classes 1 and 8).

--json_path and --csv_path naming one file (directly, through a relative
form, a symlink or a hard link) ended as CSV rows with JSON inside; naming
the run's own run_record.json, its rewrite left 0 samples. Each row runs
./pkb.py as a user would.
"""

import os

import pytest

import e2e_support as e2e

pytestmark = pytest.mark.e2e


def _Refused(proc, results_dir, run_uri, *words):
  assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith('pkb: '), proc.stderr
  assert 'Traceback' not in proc.stderr
  for word in words:
    assert word in lines[0], lines[0]
  assert not os.path.exists(os.path.join(results_dir, run_uri))
  return lines[0]


def _SameDirectly(t):
  return [f'--json_path={t / "out"}', f'--csv_path={t / "out"}']


def _SameRelative(t):
  return [f'--json_path={t / "out"}',
          f'--csv_path={t / "sub" / ".." / "." / "out"}']


def _SameThroughSymlink(t):
  (t / 'out').write_text('')
  os.symlink(t / 'out', t / 'link')
  return [f'--json_path={t / "link"}', f'--csv_path={t / "out"}']


def _SameThroughHardLink(t):
  (t / 'out').write_text('')
  os.link(t / 'out', t / 'hard')
  return [f'--json_path={t / "hard"}', f'--csv_path={t / "out"}']


@pytest.mark.parametrize('dry_run', [True, False], ids=['dry-run', 'run'])
@pytest.mark.parametrize('build', [_SameDirectly, _SameRelative,
                                   _SameThroughSymlink, _SameThroughHardLink],
                         ids=['directly', 'relative', 'symlink', 'hard-link'])
def test_json_and_csv_naming_one_file_are_refused(tmp_path, build, dry_run):
  (tmp_path / 'sub').mkdir()
  results = tmp_path / 'results'
  proc, run_uri = e2e.Run(['--dry_run'] * dry_run + build(tmp_path),
                          str(results))
  _Refused(proc, str(results), run_uri, 'name the same file')
  assert not results.exists() or os.listdir(results) == []


@pytest.mark.parametrize('flag,rel,words', [
    ('json_path', 'run_record.json', ['its run record']),
    ('csv_path', 'pkb.log', ['its log']),
    ('json_path', 'results.csv', ["CSV results' default path",
                                  'name the same file']),
    ('csv_path', 'perfkitbenchmarker_results.json',
     ["JSON results' default path", 'name the same file']),
    ('json_path', 'raw/clients-0/x.json', ['inside its raw output']),
    ('json_path', '../{uri}/./run_record.json', ['its run record']),
], ids=['record', 'log', 'default-csv', 'default-json', 'raw', 'relative'])
def test_a_file_of_the_run_itself_is_refused(tmp_path, flag, rel, words):
  results = tmp_path / 'results'
  run_uri = e2e.NewRunUri()
  path = results / run_uri / rel.format(uri=run_uri)
  proc, _ = e2e.Run([f'--{flag}={path}'], str(results), run_uri=run_uri)
  _Refused(proc, str(results), run_uri, f'--{flag}=', *words)


@e2e.Needs('root (to give a results file to user nobody)',
           lambda: os.geteuid() == 0, 'run the tests as root, as CI does')
def test_a_refused_results_file_leaves_no_run_directory(tmp_path):
  # Refused when its publisher opens it, after the run directory was
  # made: that directory, still empty, goes again.
  # Nor the directories made for it: a results directory two levels new
  # and the CSV's new directory stayed, empty.
  theirs = tmp_path / 'theirs.json'
  theirs.write_text('')
  os.chown(theirs, 65534, 65534)
  results = tmp_path / 'results' / 'nested'
  proc, run_uri = e2e.Run([f'--json_path={theirs}',
                           f'--csv_path={tmp_path / "csv" / "r.csv"}',
                           '--load_generator=redis_benchmark'],
                          str(results))
  _Refused(proc, str(results), run_uri, 'uid 65534')
  assert sorted(os.listdir(tmp_path)) == ['theirs.json']


@pytest.mark.parametrize('flag', ['memtier_clients', 'redis_server_options',
                                  'memtier_latency_cap'])
def test_an_overlong_config_value_is_quoted_short(tmp_path, flag):
  config = tmp_path / 'long.yaml'
  config.write_text(f'redis_memtier:\n  flags:\n    {flag}: {"x" * 300000}\n')
  proc, run_uri = e2e.Run(['--dry_run', f'--benchmark_config_file={config}'],
                          str(tmp_path / 'results'))
  line = _Refused(proc, str(tmp_path / 'results'), run_uri, flag,
                  '(300,0')
  assert len(line) < 1000 and line.count('x' * 30) == 1, line[:2000]
