"""What prepare would fail on, refused before anything is created.

The checks take a spec; here a small stand-in with the catalog's real
prices (the same four methods BenchmarkSpec has), plus two dry runs of
./pkb.py as a user types them.
"""

import sys
import types

import pytest

import e2e_support as e2e
import pkb_forkserver
from perfkitbenchmarker import errors
from perfkitbenchmarker import pricing
from perfkitbenchmarker import prepare_checks
from perfkitbenchmarker import providers
from perfkitbenchmarker import virtual_machine

CATALOG = pricing.PriceCatalog.Load()


class _Spec:
  """The part of BenchmarkSpec the checks read."""

  def __init__(self, module, cloud='AWS', servers=('i4i.4xlarge', 2),
               client_os='debian12', client_image=None):
    self.name, self.cloud, self.module = 'redis_memtier', cloud, module
    self.can = providers.CapabilitiesOf(cloud)
    zone = 'us-east-1a' if cloud == 'AWS' else 'us-central1-a'
    self._specs = {
        'servers': virtual_machine.VmSpec(cloud=cloud,
                                          machine_type=servers[0],
                                          zone=zone, os_type='debian12'),
        'clients': virtual_machine.VmSpec(
            cloud=cloud, machine_type='m5.8xlarge' if cloud == 'AWS' else
            'n2-standard-32', zone=zone, os_type=client_os,
            image=client_image)}
    self._counts = {'servers': servers[1], 'clients': 1}
    self.catalog = CATALOG

  def GroupSpecs(self):
    return self._specs

  def GroupCounts(self):
    return self._counts

  def GroupPrice(self, group):
    s = self._specs[group]
    return self.catalog.Lookup(s.cloud, s.zone, s.machine_type)


def _Module(generator='memtier', keys=0, value=100, copies=1):
  return types.SimpleNamespace(
      ClientLoadGenerator=lambda spec: generator,
      DatasetEstimate=lambda spec: prepare_checks.DatasetEstimate(
          keys=keys, bytes_per_key=value + 110, copies=copies,
          memory_fraction=0.7, fraction_flag='--redis_memory_fraction'))


@pytest.mark.parametrize('os_type', ['rocky9', 'al2023'])
def test_memtier_on_rhel_like_clients_is_refused(os_type):
  with pytest.raises(errors.UsageError) as e:
    prepare_checks.Check(_Spec(_Module(), client_os=os_type))
  text = str(e.value)
  assert '\n' not in text
  assert f'clients boot {os_type}' in text
  assert "Redis's APT repository" in text
  assert 'vm_groups.clients.os_type=debian12' in text


@pytest.mark.parametrize('generator,os_type,image', [
    ('memtier', 'debian12', None), ('memtier', 'ubuntu2404', None),
    (None, 'rocky9', None),  # redis-benchmark, or the user's memtier
    ('memtier', 'rocky9', 'projects/p/global/images/mine'),
])
def test_what_installs_passes(generator, os_type, image):
  prepare_checks.Check(_Spec(_Module(generator), client_os=os_type,
                             client_image=image))


def test_redis_on_flash_preload_is_refused_with_what_fits():
  """771M x 1000 B keys with a replica each on 2 x i4i.4xlarge (128 GiB)."""
  module = _Module(keys=771141855, value=1000, copies=2)
  with pytest.raises(errors.UsageError) as e:
    prepare_checks.Check(_Spec(module))
  text = str(e.value)
  assert '\n' not in text
  assert '771,141,855 keys' in text and '2 x i4i.4xlarge' in text
  # 2 x 128 GiB x 0.7 over 1,110 B x 2 copies per key.
  fits = int(2 * 128 * 2**30 * 0.7 // (1110 * 2))
  assert f'--memtier_key_maximum to at most {fits:,}' in text
  prepare_checks.Check(_Spec(_Module(keys=fits, value=1000, copies=2)))
  with pytest.raises(errors.UsageError):
    prepare_checks.Check(_Spec(_Module(keys=fits + 1, value=1000, copies=2)))


def test_local_and_unknown_memory_are_not_judged():
  huge = _Module(keys=10**12)
  # Local "VMs" are this machine: nothing is installed or provisioned.
  prepare_checks.Check(types.SimpleNamespace(
      cloud='Local', can=providers.CAPABILITIES['Local'], module=huge))
  user_priced = _Spec(huge)
  user_priced.catalog = CATALOG.ForRun('on_demand',
                                       {'x9.huge': 1.0})
  user_priced._specs['servers'] = virtual_machine.VmSpec(
      cloud='AWS', machine_type='x9.huge', zone='us-west-2a',
      os_type='debian12')
  prepare_checks.Check(user_priced)  # No memory figure: not judged.


def test_real_run_needs_names_missing_flags_and_credentials(monkeypatch,
                                                            tmp_path):
  monkeypatch.setenv('HOME', str(tmp_path))
  for name in ('GOOGLE_APPLICATION_CREDENTIALS', 'AWS_ACCESS_KEY_ID',
               'AWS_WEB_IDENTITY_TOKEN_FILE', 'AWS_SHARED_CREDENTIALS_FILE',
               'AWS_CONFIG_FILE'):
    monkeypatch.delenv(name, raising=False)
  module = types.SimpleNamespace()
  flags = types.SimpleNamespace(gcp_ssh_source_range=[], project=None,
                                aws_ssh_source_cidr=None, aws_profile=None)
  gcp = prepare_checks.RealRunNeeds(_Spec(module, cloud='GCP'), flags)
  assert gcp[0] == '--project=<GCP project id>'
  assert gcp[1].startswith('--gcp_ssh_source_range=<your address>/32')
  assert 'application-default credentials (none found' in gcp[2]
  aws = prepare_checks.RealRunNeeds(_Spec(module), flags)
  assert aws[0].startswith('--aws_ssh_source_cidr=')
  assert 'AWS credentials (none found' in aws[1]
  key = tmp_path / 'key.json'
  key.write_text('{}')
  monkeypatch.setenv('GOOGLE_APPLICATION_CREDENTIALS', str(key))
  (tmp_path / '.aws').mkdir()
  (tmp_path / '.aws' / 'credentials').write_text('[default]\n')
  flags = types.SimpleNamespace(gcp_ssh_source_range=['1.2.3.4/32'],
                                project='p', aws_ssh_source_cidr='1.2.3.4/32',
                                aws_profile=None)
  assert prepare_checks.RealRunNeeds(_Spec(module, cloud='GCP'), flags) == []
  assert prepare_checks.PlanLines(_Spec(module), flags) == []


def _DryRun(args, tmp_path):
  return pkb_forkserver.Run(
      [sys.executable, e2e.PKB, f'--results_dir={tmp_path}', '--dry_run'] +
      args, timeout=120, cwd=e2e.REPO,
      check=False)


@pytest.mark.e2e
def test_enterprise_clients_on_the_rhel_successor_are_refused(tmp_path):
  """The study's --os_type=centos7 line: the servers boot Rocky 9, the
  clients (memtier only) Debian 12; clients pinned to Rocky 9 (what the T2D
  preset did to every VM) are refused before anything is created."""
  args = ['--benchmarks=redis_enterprise', '--cloud=GCP', '--project=p',
          '--os_type=centos7']
  proc = _DryRun(args, tmp_path)
  assert proc.returncode == 0, proc.stderr
  assert 'clients: boot debian12 (they run only memtier' in proc.stdout
  assert ('A real run also needs: --gcp_ssh_source_range=<your address>/32'
          in proc.stdout)
  assert '--enterprise_redis_tarball=<file you obtained>' in proc.stdout
  proc = _DryRun(args + ['--config_override=redis_enterprise.vm_groups.'
                         'clients.os_type=rocky9'], tmp_path)
  assert proc.returncode == 2
  assert proc.stderr.count('\n') == 1
  assert 'clients boot rocky9 (RHEL-like)' in proc.stderr


def test_enterprise_databases_are_judged_against_the_cluster():
  """The T2D cluster cell: 6 replicated databases of 50M x 100 B fit 3 x
  t2d-standard-16 (64 GiB) at 80 %; 4x the records does not."""
  from perfkitbenchmarker.enterprise import options as enterprise_options  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker.enterprise import plan as enterprise_plan  # pylint: disable=g-import-not-at-top

  def Module(records):
    opts = enterprise_options.EnterpriseOptions(
        cloud='GCP', os=enterprise_options.ChooseOs('centos7', 'GCP'),
        load_records=records, db_count=6, db_replication=True)
    return types.SimpleNamespace(
        DatasetEstimate=lambda spec: enterprise_plan.DatasetEstimate(opts))

  servers = ('t2d-standard-16', 3)
  prepare_checks.Check(_Spec(Module(50_000_000), 'GCP', servers))
  with pytest.raises(errors.UsageError,
                     match='--enterprise_redis_memory_size_percentage'):
    prepare_checks.Check(_Spec(Module(200_000_000), 'GCP', servers))


def test_a_local_machine_without_a_c_compiler_is_refused_up_front(
    pkb_flags, monkeypatch):
  # Without cc the load generator's library (argv_secret) cannot be built:
  # the dry run said nothing and the run stopped at its first probe, after
  # its shards and preload ('pkb: redis_memtier stopped: No C compiler on
  # clients-0 ...', exit 1).
  from perfkitbenchmarker.linux_benchmarks import redis_memtier_benchmark as bench  # pylint: disable=g-import-not-at-top
  which = bench.shutil.which
  monkeypatch.setattr(bench.shutil, 'which',
                      lambda name, *a, **k: None if name == 'cc' else
                      which(name, *a, **k))
  with pytest.raises(errors.UsageError, match='No C compiler on this '
                     'machine: .*install gcc'):
    bench.CheckPrerequisites({})
  pkb_flags.cloud = 'GCP'  # Client VMs get one from their packages.
  bench.CheckPrerequisites({})


def test_local_memtier_asked_for_but_not_installed_is_refused_up_front(
    pkb_flags, monkeypatch):
  # Local installs nothing: `./pkb.py --load_generator=memtier` without a
  # memtier on PATH passed its dry run, provisioned and stopped at prepare
  # ('memtier_benchmark not found on clients-0', exit 1).
  from perfkitbenchmarker.linux_benchmarks import redis_memtier_benchmark as bench  # pylint: disable=g-import-not-at-top
  which = bench.shutil.which
  monkeypatch.setattr(bench.shutil, 'which',
                      lambda name, *a, **k: None
                      if name == 'memtier_benchmark' else which(name, *a, **k))
  pkb_flags.load_generator = 'memtier'
  with pytest.raises(errors.UsageError, match='--load_generator=memtier: '
                     'memtier_benchmark is not on PATH on this machine'):
    bench.CheckPrerequisites({})
  pkb_flags.load_generator = 'auto'  # Falls back to redis-benchmark.
  bench.CheckPrerequisites({})
  pkb_flags.load_generator = 'memtier'
  pkb_flags.cloud = 'GCP'  # Client VMs install it.
  bench.CheckPrerequisites({})


def test_the_library_is_compiled_with_the_scratch_directory_as_tmpdir():
  """cc writes its assembly and object files in TMPDIR and reads them back
  by name: in one others can rename things in (no sticky bit; strace of a
  Local run with TMPDIR=/tmp/h3c/open showed ccwLpwUb.s and ccQmOhbU.o
  there) they could be swapped between the writing and the reading, and
  the preloaded library built from another user's code."""
  import types  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker import providers  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker.linux_packages import argv_secret  # pylint: disable=g-import-not-at-top
  commands = []
  vm = types.SimpleNamespace(
      name='clients-0', CAN=providers.CAPABILITIES['Local'],
      scratch_dir='/s/pkb-r1.ab/clients 0', HasCommand=lambda program: True,
      WriteFile=lambda *args: None,
      RemoteCommand=lambda command, **kwargs: commands.append(command))
  argv_secret.Install(vm)
  assert "TMPDIR='/s/pkb-r1.ab/clients 0' cc " in commands[-1], commands


@pytest.mark.parametrize('choice,path,refused', [
    ('auto', None, True), ('memtier', None, True),
    ('redis_benchmark', None, False), ('auto', '/opt/memtier', False)])
def test_the_default_auto_installs_memtier_on_rhel_like_clients_too(
    choice, path, refused):
  # './pkb.py --cloud=GCP --project=p --zone=us-central1-a --os_type=rocky9
  # --dry_run' planned 'load generator memtier_benchmark (auto: installed on
  # the client VMs from Redis's APT repository)' and passed; prepare would
  # have failed on every client (ChooseGenerator installs memtier on a VM
  # the run made). --load_generator=memtier was refused.
  from perfkitbenchmarker.linux_benchmarks import redis_memtier_benchmark  # pylint: disable=g-import-not-at-top
  from perfkitbenchmarker.study import options as options_lib  # pylint: disable=g-import-not-at-top
  spec = _Spec(types.SimpleNamespace(
      ClientLoadGenerator=redis_memtier_benchmark.ClientLoadGenerator),
               cloud='GCP', servers=('t2d-standard-16', 1), client_os='rocky9')
  spec.CachedOptions = lambda build: types.SimpleNamespace(
      generator=options_lib.GeneratorOptions(choice=choice,
                                             memtier_path=path))
  if refused:
    with pytest.raises(errors.UsageError, match='clients boot rocky9'):
      prepare_checks.Check(spec)
  else:
    prepare_checks.Check(spec)
