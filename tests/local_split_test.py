"""How a Local run splits the machine: pure planning, no process started.

A 2-core machine's default split (server on core 0, client on core 1) holds
the server to half its core by a CPU quota, since there the load generator
fills its core before the server fills its own; a machine with cores to
spare keeps the plain split; the flag sets or removes the quota; a quota
this machine cannot make is a warning by default and a one-line refusal
when asked for. The quota's cgroup is read back from a record only as the
run's own. (End to end, a real run on 2 cores: tests/local_cpu_quota_test.py.)
"""

import os

import pandas as pd
import pytest

from perfkitbenchmarker import errors
from perfkitbenchmarker import record_checks
from perfkitbenchmarker import run_record
from perfkitbenchmarker.providers.local import cpu_quota
from perfkitbenchmarker.providers.local import provider as local
from perfkitbenchmarker.providers.local import split
from perfkitbenchmarker.results_history import cells

DEFAULT = [('servers-0', 1), ('clients-0', 1)]


def test_two_cores_hold_the_server_to_half_its_core():
  plan = split.Plan(DEFAULT, [0, 1], None, can_make_quota=True)
  assert plan.cores == {'servers-0': [0], 'clients-0': [1]}
  assert plan.server_quota == split.DEFAULT_SERVER_QUOTA == 0.5
  assert plan.QuotaCores('servers-0') == 0.5
  assert plan.QuotaCores('clients-0') is None
  assert not plan.problem
  line = plan.Line()
  assert line.startswith('Local split of 2 cores: servers-0 on core 0 held '
                         'to 50 % of it by a CPU quota, clients-0 on core 1 ')
  assert 'drive the server to its limit' in line


def test_a_vm_given_fewer_cores_than_it_asked_for_says_so():
  # A config's num_cpus=4 for the clients on 2 cores gave them one, and the
  # plan's line said only 'clients-0 on core 1'.
  plan = split.Plan([('servers-0', 1), ('clients-0', 4)], [0, 1], None,
                    can_make_quota=True)
  assert plan.cores == {'servers-0': [0], 'clients-0': [1]}
  assert plan.short == {'clients-0': 4}
  assert ('servers-0 on core 0 held to 50 % of it by a CPU quota, clients-0 '
          'on core 1 instead of the 4 cores it asked for (') in plan.Line()
  # Unpinned (more VMs than cores) is said as such, not as a shortfall.
  assert not split.Plan([('servers-0', 2), ('clients-0', 2)], [0], None,
                        can_make_quota=True).short


@pytest.mark.parametrize('requests,cores', [
    (DEFAULT, [0, 1, 2, 3]),  # Cores to spare: today's split stays.
    ([('servers-0', 1), ('clients-0', 3)], [0, 1, 2, 3]),  # Client larger.
    (DEFAULT, [0]),  # One core: nothing is pinned.
    ([('servers-0', 1), ('clients-0', 1), ('clients-1', 1)], [0, 1]),
])
def test_where_the_client_is_not_outrun_the_split_is_plain(requests, cores):
  plan = split.Plan(requests, cores, None, can_make_quota=True)
  assert plan.server_quota is None and not plan.problem
  assert plan.QuotaCores('servers-0') is None
  assert 'quota' not in plan.Line()


def test_a_server_of_several_cores_gets_the_fraction_of_each():
  plan = split.Plan([('servers-0', 2), ('clients-0', 2)], [0, 1, 2, 3],
                    None, can_make_quota=True)
  assert plan.cores == {'servers-0': [0, 1], 'clients-0': [2, 3]}
  assert plan.QuotaCores('servers-0') == 1.0
  assert 'servers-0 on cores 0,1 held to 50 % of them' in plan.Line()


@pytest.mark.parametrize('statistic', ['p99', 'p99.9', 'p95'])
def test_a_percentile_cap_keeps_the_plain_split(statistic):
  # The quota's waits are milliseconds: a percentile cap would read them.
  plan = split.Plan(DEFAULT, [0, 1], None, can_make_quota=True,
                    cap_statistic=statistic)
  assert plan.server_quota is None and not plan.problem
  assert plan.cores == {'servers-0': [0], 'clients-0': [1]}
  assert (f'(no server quota: a {statistic} cap would measure the quota\'s '
          'throttling waits') in plan.Line()
  # The average keeps it, and a quota asked for by flag is made whatever
  # the statistic.
  assert split.Plan(DEFAULT, [0, 1], None, can_make_quota=True,
                    cap_statistic='avg').server_quota == 0.5
  assert split.Plan(DEFAULT, [0, 1], 0.5, can_make_quota=True,
                    cap_statistic=statistic).server_quota == 0.5


def test_the_flag_sets_or_removes_the_quota():
  off = split.Plan(DEFAULT, [0, 1], 0, can_make_quota=True)
  assert off.server_quota is None
  assert '--local_server_cpu_quota=0' in off.Line()
  asked = split.Plan(DEFAULT, [0, 1, 2, 3], 0.3, can_make_quota=True)
  assert asked.QuotaCores('servers-0') == pytest.approx(0.3)
  assert 'held to 30 % of it' in asked.Line()


def test_a_quota_this_machine_cannot_make():
  # By default: the plain split, and a warning saying what to expect.
  plan = split.Plan(DEFAULT, [0, 1], None, can_make_quota=False)
  assert plan.server_quota is None
  assert plan.problem.startswith('WARNING: on this 2-core machine')
  assert 'client-bound' in plan.problem
  # Asked for by flag: refused in one line before anything starts.
  with pytest.raises(errors.UsageError) as refused:
    split.Plan(DEFAULT, [0, 1], 0.5, can_make_quota=False)
  assert '\n' not in str(refused.value)
  assert str(refused.value).startswith('--local_server_cpu_quota=0.5 needs')


@pytest.mark.parametrize('quota,expected', [
    (0.5, (1000, 2000)), (1.0, (2000, 2000)),
    # Under the kernel's smallest quota (1 ms) the period grows instead.
    (0.25, (1000, 4000)), (0.3, (1000, 3334))])
def test_the_cgroup_quota_and_period(quota, expected):
  group = cpu_quota.LocalCpuQuota('r1', 'servers-0', quota,
                                  path='/sys/fs/cgroup/cpu/pkb-r1-servers-0')
  assert group.Period() == expected
  quota_us, period_us = group.Period()
  assert quota_us / period_us == pytest.approx(quota, rel=1e-3)


def test_entering_the_cgroup_is_shell_quoted():
  command = cpu_quota.EnterCommand('/sys/fs/cgroup/cpu/pkb-r1-servers-0',
                                   'taskset -c 0 redis-server /x/redis.conf')
  assert command == (
      'sh -c \'echo $$ > "$0" && exec "$@"\' '
      '/sys/fs/cgroup/cpu/pkb-r1-servers-0/cgroup.procs '
      'taskset -c 0 redis-server /x/redis.conf')


def _Record(tmp_path):
  return run_record.RunRecord.Create(str(tmp_path / 'r1'), 'r1')


def _Root():
  v1, v2 = cpu_quota.Mounts()
  if not (v1 or v2):
    pytest.skip('no cgroup filesystem mounted here')
  return v1 or v2


def test_a_recorded_cgroup_is_read_back_only_as_the_runs_own(tmp_path):
  record, root = _Record(tmp_path), _Root()

  def Entry(name, path):
    return {'kind': cpu_quota.KIND, 'name': name, 'status': 'created',
            'data': {'path': path, 'quota_cores': 0.5}}

  own = os.path.join(root, 'pkb-r1-servers-0')
  group = cpu_quota.LocalCpuQuota.FromRecord(Entry('pkb-r1-servers-0', own),
                                             record)
  assert (group.path, group.quota_cores) == (own, 0.5)
  for name, path, words in [
      ('pkb-r2-servers-0', os.path.join(root, 'pkb-r2-servers-0'),
       'is not a cgroup name of run r1'),
      ('pkb-r1-servers-0', '/etc', 'directly under'),
      ('pkb-r1-servers-0', os.path.join(root, 'x', 'pkb-r1-servers-0'),
       'directly under'),
      ('pkb-r1-servers-0', os.path.join(root, 'pkb-r1-clients-0'),
       'directly under')]:
    with pytest.raises(record_checks.RecordRefused) as refused:
      cpu_quota.LocalCpuQuota.FromRecord(Entry(name, path), record)
    message = str(refused.value)
    assert words in message and message.endswith('; left alone'), message


def test_a_local_vm_enters_only_its_own_recorded_cgroup(tmp_path):
  record, root = _Record(tmp_path), _Root()

  def Vm(cgroup):
    return local.LocalVirtualMachine.FromRecord(
        {'kind': 'local_vm', 'name': 'servers-0', 'status': 'created',
         'data': {'cloud': 'Local', 'group': 'servers', 'cpu_set': [0],
                  'cpu_quota': 0.5, 'cgroup': cgroup}}, record)

  vm = Vm(os.path.join(root, 'pkb-r1-servers-0'))
  assert vm.cpu_quota == 0.5
  assert vm.Pinned('redis-server x.conf') == cpu_quota.EnterCommand(
      os.path.join(root, 'pkb-r1-servers-0'), 'taskset -c 0 redis-server '
      'x.conf')
  with pytest.raises(record_checks.RecordRefused):
    Vm(os.path.join(root, 'pkb-r1-clients-0'))
  assert Vm('').Pinned('redis-server x.conf') == (
      'taskset -c 0 redis-server x.conf')


def test_a_workspace_under_another_scratch_root_names_the_runs(
    tmp_path, monkeypatch):
  """A run made with PKB_LOCAL_SCRATCH=X, torn down (or resumed) without
  it: its VMs are refused (their shards keep running), and the line says
  which PKB_LOCAL_SCRATCH the run had, the one way to reach them."""
  record = _Record(tmp_path)
  monkeypatch.setattr(local, 'SCRATCH_ROOT', '/tmp')

  def Vm(scratch_dir):
    return local.LocalVirtualMachine.FromRecord(
        {'kind': 'local_vm', 'name': 'servers-0', 'status': 'created',
         'data': {'cloud': 'Local', 'group': 'servers',
                  'scratch_dir': scratch_dir}}, record)

  with pytest.raises(record_checks.RecordRefused) as refused:
    Vm('/srv/scratch/pkb-r1.ab12cd/servers-0')
  message = str(refused.value)
  assert 'PKB_LOCAL_SCRATCH=/srv/scratch' in message, message
  assert message.endswith('; left alone'), message
  # Not of the run's shape anywhere: refused without that advice.
  for path in ('/srv/scratch/pkb-r2.ab12cd/servers-0', '/etc/x',
               '/srv/scratch/other/servers-0'):
    with pytest.raises(record_checks.RecordRefused) as refused:
      Vm(path)
    assert 'PKB_LOCAL_SCRATCH' not in str(refused.value), path


def test_an_empty_pkb_local_scratch_is_the_default():
  # 'PKB_LOCAL_SCRATCH= ./pkb.py' made the run's workspace in the current
  # directory (abspath('')), wherever the run was started.
  scratch_root = local._ScratchRoot  # pylint: disable=protected-access
  assert scratch_root({'PKB_LOCAL_SCRATCH': ''}) == '/tmp'
  assert scratch_root({}) == '/tmp'
  assert scratch_root({'PKB_LOCAL_SCRATCH': '/srv/s'}) == '/srv/s'
  assert local.SCRATCH_ROOT == scratch_root(os.environ)


def test_a_scratch_root_that_is_not_utf8_is_refused(monkeypatch):
  # PKB_LOCAL_SCRATCH=$'/tmp/s\xff': the shards' config files (text) name
  # their directories, and the run stopped as it started them ('internal
  # error UnicodeEncodeError').
  monkeypatch.setattr(local, 'SCRATCH_ROOT', '/tmp/s\udcff')
  with pytest.raises(errors.UsageError,
                     match=r'is not UTF-8 text \(byte 0xff at offset 6\)'):
    local.CheckRunDirs()


def test_a_quota_figure_is_a_cell_of_its_own():
  # compare never ranks a 0.5-CPU server's figure beside a whole core's.
  frame = pd.DataFrame([
      {'run_uri': 'a', 'cloud': 'Local', 'local_priced_as': 'GCP:n2d-standard-2',
       'servers_cpu_quota': 0.5},
      {'run_uri': 'b', 'cloud': 'Local',
       'local_priced_as': 'GCP:n2d-standard-2'}])
  labels = list(cells.AddCellColumns(frame)['machine_type'])
  assert labels == ['local as GCP:n2d-standard-2, server 0.5 CPU',
                    'local as GCP:n2d-standard-2']
