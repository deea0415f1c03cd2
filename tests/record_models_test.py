"""Each resource kind's run-record fields, read back through its model.

A hostile or corrupt entry is refused in one line that names the kind, the
entry, the field and what is wrong, before anything is built from it; the
same entries with good fields are rebuilt. (End to end, through
`./pkb.py --run_stage=teardown`: tests/teardown_record_test.py.)
"""

import pytest

from perfkitbenchmarker import providers
from perfkitbenchmarker import record_checks
from perfkitbenchmarker import resource
from perfkitbenchmarker import run_record
from perfkitbenchmarker import probe_processes  # pylint: disable=unused-import
from perfkitbenchmarker.linux_packages import redis_server  # pylint: disable=unused-import

RUN = 'rm1'
FAKE_API = 'http://127.0.0.1:9'  # Loopback: clients are made, never called.
_SSH = {'cloud': 'Static', 'group': 'servers', 'user': 'pkb',
        'ip_address': '10.0.0.5', 'internal_ip': 'fd00::5', 'port': 2222,
        'keyfile': '/home/pkb/.ssh/id_ed25519',
        'scratch_dir': f'/tmp/pkb-{RUN}.Ab3dE6gH/x-0', 'num_cpus': 4,
        'memory_mib': None}
_GOOD = {
    'static_vm': _SSH,
    'gcp_vm': dict(_SSH, cloud='GCP', machine_type='n2d-standard-2',
                   zone='us-central1-a', project='p', api_endpoint=FAKE_API,
                   ip_address=None),
    'aws_vm': dict(_SSH, cloud='AWS', region='us-east-1', user=None,
                   instance_id='i-1'),
    'gcp_network': {'project': 'p', 'api_endpoint': FAKE_API},
    'gcp_subnetwork': {'project': 'p', 'region': 'us-central1',
                       'api_endpoint': FAKE_API, 'ip_range': '10.0.0.0/20'},
    'aws_vpc': {'region': 'us-east-1', 'profile': None, 'id': 'vpc-1'},
    'gcp_ssh_key': {'directory': 'RUN_DIR',
                    'private_key_path': 'RUN_DIR/key'},
    'redis_process': {'vm_name': 'servers-0', 'port': 7001},
    'probe_process': {'vm_name': 'clients-0',
                      'mark': f'{RUN}-0123456789abcdef'},
}


@pytest.fixture(name='record')
def _Record(tmp_path, monkeypatch):
  # boto3 would look for credentials on the instance metadata service.
  for name in ('AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'):
    monkeypatch.setenv(name, 'testing')
  monkeypatch.setenv('AWS_EC2_METADATA_DISABLED', 'true')
  providers.LoadKindsOf(providers.KIND_PREFIXES.values())  # Every one.
  return run_record.RunRecord.Create(str(tmp_path / RUN), RUN)


def _Entry(record, kind, **changes):
  data = {k: (v.replace('RUN_DIR', record.run_dir) if isinstance(v, str)
              else v) for k, v in _GOOD[kind].items()}
  return {'kind': kind, 'name': 'x-0', 'status': 'created',
          'data': dict(data, **changes)}


@pytest.mark.parametrize('kind,attribute,value', [
    ('static_vm', 'port', 2222), ('gcp_vm', 'project', 'p'),
    ('aws_vm', 'instance_id', 'i-1'), ('gcp_network', 'project', 'p'),
    ('gcp_subnetwork', 'region', 'us-central1'), ('aws_vpc', 'id', 'vpc-1'),
    ('gcp_ssh_key', 'private_key_path', 'RUN_DIR/key')])
def test_good_entries_are_rebuilt(record, kind, attribute, value):
  rebuilt = resource.FromRecord(_Entry(record, kind), record)
  if isinstance(value, str):
    value = value.replace('RUN_DIR', record.run_dir)
  assert (rebuilt.KIND, getattr(rebuilt, attribute)) == (kind, value)


def test_an_ssh_vm_is_rebuilt_with_what_was_recorded(record):
  vm = resource.FromRecord(_Entry(record, 'static_vm'), record)
  assert (vm.user, vm.ip_address, vm.internal_ip, vm.port, vm.keyfile,
          vm.scratch_dir, vm.num_cpus, vm.memory_mib, vm.group_name) == (
              'pkb', '10.0.0.5', 'fd00::5', 2222, '/home/pkb/.ssh/id_ed25519',
              f'/tmp/pkb-{RUN}.Ab3dE6gH/x-0', 4, None, 'servers')


@pytest.mark.parametrize('kind,changes,words', [
    # Fields that become ssh arguments: never readable as an option.
    ('static_vm', {'user': '-oProxyCommand=touch /tmp/x'},
     "user '-oProxyCommand=touch /tmp/x' is not a user name"),
    ('gcp_vm', {'user': '-oProxyCommand=x'}, 'user '),
    ('aws_vm', {'keyfile': '-oProxyCommand=x'}, 'keyfile '),
    ('aws_vm', {'ip_address': '10.0.0.1 -p 2'}, 'is not an IP address'),
    # Paths: only the run's own, here and on the VM.
    ('gcp_vm', {'scratch_dir': '/home/pkb'}, 'scratch_dir '),
    ('static_vm', {'scratch_dir': f'/tmp/pkb-{RUN}.Ab3dE6gH/../../home'},
     'scratch_dir '),
    # The name a scratch directory had before workspaces: anyone's to make.
    ('static_vm', {'scratch_dir': f'/tmp/pkb-{RUN}/x-0'},
     f'is not a scratch directory of run {RUN}'),
    ('gcp_vm', {'known_hosts_file': '/etc/ssh/ssh_known_hosts'},
     'known_hosts_file '),
    # The run's Google access token goes with every call to the endpoint.
    ('gcp_network', {'api_endpoint': 'https://evil.example'},
     "api_endpoint 'https://evil.example' is neither https on "
     '*.googleapis.com'),
    ('gcp_vm', {'api_endpoint': 'http://compute.googleapis.com'},
     'api_endpoint '),
    ('gcp_ssh_key', {'private_key_path': '/etc/passwd'},
     'private_key_path '),
    ('gcp_ssh_key', {'directory': '/'}, 'directory '),
    # Types and bounds.
    ('static_vm', {'port': True}, 'port True: input should be a valid '
     'integer'),
    ('static_vm', {'port': 70000}, 'port 70000'),
    ('static_vm', {'user': None}, 'user is missing'),
    ('gcp_vm', {'project': None}, 'project is missing'),
    ('gcp_subnetwork', {'region': 7}, 'region 7'),
    ('aws_vpc', {'region': 'evil.example/x'}, 'region '),
    ('redis_process', {'pid': 1}, 'pid 1: input should be greater than 1'),
    ('redis_process', {'pid': '1; touch /tmp/x'}, 'pid '),
    ('redis_process', {'start_time': 'soon'}, 'start_time '),
    ('redis_process', {'port': '7001; touch /tmp/x'}, 'port '),
    ('probe_process', {'mark': 'other1-0123456789abcdef'},
     'is not one of run rm1'),
])
def test_a_hostile_entry_is_refused_in_one_line(record, kind, changes, words):
  with pytest.raises(record_checks.RecordRefused) as raised:
    resource.FromRecord(_Entry(record, kind, **changes), record)
  message = str(raised.value)
  assert '\n' not in message and len(message) < 500
  assert message.startswith(f'{kind} x-0: ') and words in message, message
  assert message.endswith('; left alone')


def test_every_bad_field_is_named_at_once(record):
  with pytest.raises(record_checks.RecordRefused) as raised:
    resource.FromRecord(_Entry(record, 'static_vm', user=7, port=0,
                               ip_address=[], num_cpus='4', group=1),
                        record)
  assert '(and 2 more)' in str(raised.value)


def test_each_providers_kinds_start_with_its_prefix(record):
  # A teardown imports only the providers whose prefixes the record's kinds
  # start with (providers.LoadKindsOf): a kind named otherwise could not be
  # torn down.
  del record  # Its fixture loaded every provider.
  checked = set()
  for kind, factory in resource._KINDS.items():  # pylint: disable=protected-access
    module = getattr(factory, '__self__', factory).__module__
    for cloud, prefix in providers.KIND_PREFIXES.items():
      if module.startswith(f'perfkitbenchmarker.providers.{cloud.lower()}.'):
        assert kind.startswith(prefix), (kind, module)
        checked.add(cloud)
  assert checked == set(providers.KIND_PREFIXES)
