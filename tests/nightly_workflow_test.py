""".github/workflows/nightly.yml: actionlint clean, and the promises it makes.

actionlint is built by scripts/setup.sh (scripts/build_actionlint.sh, which
pins its version) into build/actionlint/, not here: building it took ~97 s
of a test run. Where setup could not build it, the test skips on a
workstation, saying so, and fails in CI (CI=true), so the check never goes
quietly missing there.
"""

import json
import os
import re
import subprocess

import pytest
import yaml

from tests import e2e_support as e2e

BUILD_SCRIPT = os.path.join(e2e.REPO, 'scripts', 'build_actionlint.sh')
ACTIONLINT = os.path.join(e2e.REPO, 'build', 'actionlint', 'actionlint')
WORKFLOW = os.path.join(e2e.REPO, '.github', 'workflows', 'nightly.yml')
NIGHTLY = os.path.join(e2e.REPO, 'configs', 'nightly_gcp_aws.yaml')


def _PinnedVersion() -> str:
  with open(BUILD_SCRIPT) as f:
    return re.search(r'^ACTIONLINT_VERSION=(v[0-9.]+)$', f.read(),
                     re.MULTILINE).group(1)


def _Actionlint() -> str:
  """The actionlint setup built, at the version its script pins."""
  how = 'scripts/setup.sh builds it with scripts/build_actionlint.sh'
  if not os.access(ACTIONLINT, os.X_OK):
    e2e.Unavailable(f'actionlint ({ACTIONLINT})', how)
  version = subprocess.run([ACTIONLINT, '-version'], capture_output=True,
                           text=True, check=False).stdout.split('\n')[0]
  if version != _PinnedVersion():
    e2e.Unavailable(f'actionlint {_PinnedVersion()} (found {version})', how)
  return ACTIONLINT


def _Workflow():
  with open(WORKFLOW) as f:
    return yaml.safe_load(f)


@pytest.mark.e2e
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


PINNED = os.path.join(e2e.REPO, 'tests', 'data', 'pinned_actions.json')
# What a job may ask for: its checkout, and an OIDC token for the clouds.
ALLOWED_PERMISSIONS = {'contents': 'read', 'id-token': 'write'}


def test_actions_are_pinned_to_reviewed_commits_with_their_tags():
  """Issue 35 class 8: a tag can be moved to other code (in jobs that can
  mint cloud credentials); a commit cannot. Each pin is the commit its
  release tag named (tests/data/pinned_actions.json says where it was read),
  and the tag beside it says which release that is."""
  with open(PINNED) as f:
    pinned = json.load(f)['actions']
  with open(WORKFLOW) as f:
    lines = [l for l in f if re.match(r'\s*(- )?uses:', l)]
  assert lines
  for line in lines:
    match = re.fullmatch(
        r'\s*(?:- )?uses: ([\w.-]+/[\w.-]+)@([0-9a-f]{40})  # (v[\d.]+)\n',
        line)
    assert match, line
    action, commit, tag = match.groups()
    assert pinned[action] == {'tag': tag, 'commit': commit}, line


def test_checkout_keeps_no_token_and_each_job_has_least_privilege():
  workflow = _Workflow()
  assert workflow['permissions'] == {}  # Nothing unless a job asks.
  for name, job in workflow['jobs'].items():
    granted = job['permissions']
    assert set(granted.items()) <= set(ALLOWED_PERMISSIONS.items()), name
    checkouts = [s for s in job['steps']
                 if s.get('uses', '').startswith('actions/checkout@')]
    for step in checkouts:
      assert step['with']['persist-credentials'] is False, name
  # The report job needs cloud credentials only for a BigQuery history.
  report = workflow['jobs']['report']
  auth = next(s for s in report['steps']
              if s.get('uses', '').startswith('google-github-actions/auth@'))
  assert auth['if'] == "vars.PKB_BIGQUERY_TABLE != ''"
