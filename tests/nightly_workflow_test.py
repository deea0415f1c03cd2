""".github/workflows/nightly.yml: actionlint clean, and the promises it makes.

actionlint is built from source through the Go module proxy, pinned, into
.venv/bin (kept there between runs). Where it cannot be installed the test
skips on a workstation but fails in CI (CI=true), so the check never goes
quietly missing there.
"""

import os
import shutil
import subprocess

import yaml

from tests import e2e_support as e2e

ACTIONLINT_MODULE = 'github.com/rhysd/actionlint/cmd/actionlint'
ACTIONLINT_VERSION = 'v1.7.7'
WORKFLOW = os.path.join(e2e.REPO, '.github', 'workflows', 'nightly.yml')
NIGHTLY = os.path.join(e2e.REPO, 'configs', 'nightly_gcp_aws.yaml')
CACHE_BIN = os.path.join(e2e.REPO, '.venv', 'bin')


def _Unavailable(reason: str):
  e2e.Unavailable('actionlint', reason)


def _Actionlint() -> str:
  cached = os.path.join(CACHE_BIN, 'actionlint')
  if os.access(cached, os.X_OK):
    version = subprocess.run([cached, '-version'], capture_output=True,
                             text=True, check=False).stdout
    if ACTIONLINT_VERSION.lstrip('v') in version:
      return cached
  go = shutil.which('go') or '/usr/local/go/bin/go'
  if not os.access(go, os.X_OK):
    _Unavailable('no Go toolchain (go on PATH or /usr/local/go/bin/go)')
  os.makedirs(CACHE_BIN, exist_ok=True)
  env = dict(os.environ, GOBIN=CACHE_BIN)
  proc = subprocess.run(
      [go, 'install', f'{ACTIONLINT_MODULE}@{ACTIONLINT_VERSION}'],
      capture_output=True, text=True, env=env, timeout=300, check=False)
  if proc.returncode != 0 or not os.access(cached, os.X_OK):
    _Unavailable(f'go install failed: {proc.stderr.strip()[-500:]}')
  return cached


def _Workflow():
  with open(WORKFLOW) as f:
    return yaml.safe_load(f)


def test_actionlint_passes():
  proc = subprocess.run([_Actionlint(), '-no-color', WORKFLOW],
                        capture_output=True, text=True, timeout=120,
                        cwd=e2e.REPO, check=False)
  assert proc.returncode == 0, proc.stdout + proc.stderr


def test_one_job_per_cell_with_oidc_and_teardown_always():
  workflow = _Workflow()
  triggers = workflow[True]  # YAML 1.1 reads the key `on` as True.
  assert triggers['schedule'][0]['cron']
  cell_job = workflow['jobs']['cell']
  assert cell_job['timeout-minutes'] <= 360
  assert cell_job['permissions']['id-token'] == 'write'
  cells = [c['cell'] for c in cell_job['strategy']['matrix']['include']]
  with open(NIGHTLY) as f:
    config = yaml.safe_load(f)
  servers = {config[c]['vm_groups']['servers']['vm_spec'][
      config[c]['flags']['cloud']]['machine_type'] for c in cells}
  assert len(cells) == 4 and len(servers) == 4
  steps = cell_job['steps']
  uses = {s.get('uses', '').split('@')[0]: s for s in steps}
  gcp = uses['google-github-actions/auth']['with']
  assert set(gcp) == {'workload_identity_provider', 'service_account'}
  aws = uses['aws-actions/configure-aws-credentials']['with']
  assert 'role-to-assume' in aws and not any('key' in k for k in aws)
  run = next(s for s in steps if s.get('name') == 'Run')
  assert '--run_uri="$RUN_URI"' in run['run']
  assert '--bigquery_table="$BQ_TABLE"' in run['run']
  # Exit 4 (an answer that is not confirmed) is "no result", not success:
  # noted in the job summary, and the job still fails.
  assert '[ "$status" -eq 4 ]' in run['run'] and 'no result' in run['run']
  assert run['run'].rstrip().endswith('exit "$status"')
  assert cell_job['env']['BQ_TABLE'].startswith('${{ vars.')
  teardown = next(s for s in steps if s.get('name') == 'Teardown')
  assert teardown['if'] == 'always()'
  assert '--run_stage=teardown --run_uri="$RUN_URI"' in teardown['run']
  assert steps.index(teardown) > steps.index(run)


def test_report_job_compares_and_fails_on_regression():
  report = _Workflow()['jobs']['report']
  assert report['needs'] == 'cell'
  script = '\n'.join(s.get('run', '') for s in report['steps'])
  for needle in ('./scripts/compare.py', '--report=report.html',
                 '--markdown=summary.md', '--fail_on_regression',
                 'GITHUB_STEP_SUMMARY'):
    assert needle in script
  upload = [s for s in report['steps']
            if s.get('uses', '').startswith('actions/upload-artifact')]
  assert upload and upload[0]['with']['path'] == 'report.html'


def test_no_long_lived_keys_and_no_secret_in_a_script():
  with open(WORKFLOW) as f:
    text = f.read()
  for forbidden in ('credentials_json', 'aws-access-key-id',
                    'aws-secret-access-key', 'AWS_SECRET_ACCESS_KEY'):
    assert forbidden not in text
  for job in _Workflow()['jobs'].values():
    for step in job['steps']:
      # Secrets reach scripts through env only, never interpolated.
      assert '${{ secrets.' not in step.get('run', '')
