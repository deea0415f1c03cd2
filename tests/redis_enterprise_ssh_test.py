"""redis_enterprise's real-VM path, run for real over SSH with stand-ins.

A whole `./pkb.py --benchmarks=redis_enterprise --static_vm_file=...` run:
one server VM and one client VM, both this machine reached through a real
loopback sshd; install, cluster, proxy tuning, load user, one database,
preload, a two-step memtier walk, cleanup and teardown.

Redis Enterprise itself cannot be obtained here (its installer and licence
come from Redis, and this machine has no internet), so these parts are
stand-ins, each only as far as the harness sees it:

  * The installer tarball: built by this test. Its `install.sh` takes the
    options the harness passes (-y, -n, --install-dir; CONFIG_systune from
    the environment), refuses others, refuses to install without
    --install-dir (so it never touches /opt/redislabs here), logs what it
    was asked and which files it found beside it (with their sha256), and
    installs the stand-in programs into the test's prefix.
  * `rladmin` and `dmc_ctl`: small programs answering only the commands the
    harness sends (tune proxy, status nodes in the documented output shape;
    restart), logging each; anything else, `cluster create` included, fails.
  * The REST API: tests/fake_redis_enterprise.py over https (a certificate
    made here with openssl; curl on the "server VM" runs with -k as against
    the real API's self-signed one) on a free port, given to the harness
    with --enterprise_redis_api_port (the real API's is 9443). It implements
    the documented endpoints the harness calls. It starts as a node in no
    cluster: the harness creates the cluster with POST
    /v1/bootstrap/create_cluster (the admin credentials it generated and
    the licence text) and polls GET /v1/bootstrap through `creating_cluster`
    to `completed`. Creating a database starts a REAL redis-server on the
    database's port with the database's password and the load generators'
    ACL user, deleting it stops that server. One process per database: no
    proxy, no sharding, no replication.
  * `sudo` on the VM's PATH only runs its command (the test needs no
    privilege); apt-get, dnf, yum and systemctl there refuse to run.

Everything else is real: ssh and the harness's SshVirtualMachine, the copy
of the tarball, curl (also for the bootstrap), the harness's argv_secret
library, Redis, the run
record and teardown. memtier is the replay stand-in (tests/memtier_replay.py,
given by --memtier_path): it logs in to the database for real and answers
with recorded memtier outputs. The VM's PATH (the stubs first) comes from a forced
command on the test's own key, so the harness's commands run unchanged.

Not covered here: cluster join (one server VM), worker pinning, CPU
offlining and the shard x proxy optimizer (tests/redis_enterprise_cluster_
test.py covers them). Neither the admin password nor the load user's is in
the argv of any process sampled during the run.
"""

import hashlib
import json
import os
import shutil
import sys

import pytest

import argv_secret_test
import e2e_support as e2e
import memtier_replay
import stand_ins
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker.engines import redis_enterprise_rladmin as rladmin_lib
from tests import fake_redis_enterprise

from sshd_fixture import FreePort
from sshd_fixture import sshd  # pylint: disable=unused-import  (fixture)

pytestmark = [
    pytest.mark.e2e,  # Every test here starts a process (tier_guard.py).
    e2e.NeedsTools('redis-server', 'openssl', 'curl', 'tar', 'base64', 'cc',
                   'python3', 'ssh-keygen', how='scripts/setup.sh'),
]

TARBALL = 'redislabs-6.2.4-54-standin-x86_64.tar'
LICENCE_TEXT = '----- Redis Enterprise licence (stand-in) -----\nkey: 42\n'

_INSTALL_SH = r'''#!/bin/bash
# Stand-in for Redis Enterprise's install.sh
# (tests/redis_enterprise_ssh_test.py).
set -eu
log='@LOG@'
asked="$*"
install_dir='' yes=no no_tune=no
while [ $# -gt 0 ]; do
  case $1 in
    -y) yes=yes ;;
    -n) no_tune=yes ;;
    --install-dir) install_dir=${2:?}; shift ;;
    *) echo "install.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ $yes = yes ] || { echo 'install.sh: needs -y unattended' >&2; exit 2; }
[ -n "$install_dir" ] ||
  { echo 'stand-in install.sh: no --install-dir' >&2; exit 2; }
{
  echo "install.sh $asked"
  echo "cwd $PWD"
  echo "CONFIG_systune ${CONFIG_systune:-unset} no_tune $no_tune"
  for f in *; do
    if [ -f "$f" ]; then echo "file $f $(sha256sum < "$f" | cut -d' ' -f1)"; fi
  done
} >> "$log"
mkdir -p "$install_dir/bin"
install -m 0755 standin/rladmin standin/dmc_ctl "$install_dir/bin/"
'''

_RLADMIN = r'''#!/usr/bin/env python3
"""Stand-in for rladmin (tests/redis_enterprise_ssh_test.py)."""
import sys

LOG = '@LOG@'
args = sys.argv[1:]
with open(LOG, 'a') as f:
  f.write('rladmin ' + ' '.join(args) + '\n')


def Options(words):
  if len(words) % 2:
    sys.exit('rladmin: expected name value pairs: ' + ' '.join(words))
  return dict(zip(words[::2], words[1::2]))


if args[:3] == ['tune', 'proxy', 'all']:
  Options(args[3:])
  print('Configuring proxies:\n- proxy:1: ok')
elif args == ['status', 'nodes']:
  print('CLUSTER NODES:\n'
        'NODE:ID ROLE   ADDRESS   EXTERNAL_ADDRESS HOSTNAME SHARDS CORES '
        'FREE_RAM        PROVISIONAL_RAM VERSION  STATUS\n'
        '*node:1 master 127.0.0.1                  standin  0/100  2     '
        '1.8GB/2GB       1.5GB/1.6GB     6.2.4-54 OK')
else:
  sys.exit('rladmin (stand-in): unknown command ' + ' '.join(args))
'''

_DMC_CTL = '''#!/bin/sh
echo "dmc_ctl $*" >> '@LOG@'
[ "$*" = restart ]
'''

_REFUSE = '''#!/bin/sh
echo "$0 must not run in tests/redis_enterprise_ssh_test.py" >&2
exit 97
'''


def _Sha256(path: str) -> str:
  with open(path, 'rb') as f:
    return hashlib.sha256(f.read()).hexdigest()


@pytest.fixture
def vm_login(sshd, tmp_path):  # pylint: disable=redefined-outer-name
  """A key whose login puts the stubs first on the VM's PATH."""
  keyfile = sshd.AuthorizeStubbedKey(
      str(tmp_path),
      {'sudo': '#!/bin/sh\n[ "$1" = -n ] && shift\nexec "$@"\n',
       'apt-get': _REFUSE, 'dnf': _REFUSE, 'yum': _REFUSE,
       'systemctl': _REFUSE})
  machine = {'ip_address': sshd.host, 'user_name': sshd.user,
             'keyfile_path': keyfile, 'ssh_port': sshd.port}
  path = tmp_path / 'vms.json'
  path.write_text(json.dumps({'servers': [machine], 'clients': [machine]}))
  return str(path)


@pytest.fixture
def api(tmp_path):
  """The fake REST API over https, its databases real redis-servers."""
  data = tmp_path / 'databases'
  data.mkdir()
  servers = fake_redis_enterprise.RedisServers(shutil.which('redis-server'),
                                               str(data))
  tls = fake_redis_enterprise.SelfSignedCertificate(str(tmp_path))
  # A node in no cluster yet, whose bootstrap reads `creating_cluster`
  # once, then `completed` (one 2 s poll). A new bdb is `pending` in the
  # POST answer and `active` at the first read once its server answers; a
  # deleted one is gone at the first read (the client polls every 5 s, as
  # suits the real API).
  with fake_redis_enterprise.FakeRedisEnterprise(
      user=None, password=None, polls_to_bootstrap=2, polls_to_active=1,
      polls_to_delete=0, tls=tls, databases=servers) as fake:
    yield fake
  # The fake stopped any server still running on exit; the test itself
  # checks that the run left none.


def _Installer(tmp_path):
  """The stand-in tarball and the logs its programs write."""
  logs = {n: str(tmp_path / f'{n}.log') for n in ('install', 'rladmin')}
  path = str(tmp_path / TARBALL)
  stand_ins.WriteTar(path, [
      ('install.sh', stand_ins.Fill(_INSTALL_SH, LOG=logs['install']), 0o755),
      ('standin/rladmin', stand_ins.Fill(_RLADMIN, LOG=logs['rladmin']),
       0o755),
      ('standin/dmc_ctl', stand_ins.Fill(_DMC_CTL, LOG=logs['rladmin']), 0o755)])
  licence = tmp_path / 'licence.txt'
  licence.write_text(LICENCE_TEXT)
  return path, str(licence), logs


def _Lines(path: str):
  with open(path) as f:
    return f.read().splitlines()


def _KeptFiles(*roots):
  """Files under the given directories, and the given files."""
  files = [r for r in roots if os.path.isfile(r)]
  return files + [os.path.join(d, f) for root in roots
                  for d, _, names in os.walk(root) for f in names]


@pytest.mark.timeout(180)  # Hang guard: no wait may run out its timeout.
def test_static_vm_run_installs_forms_measures_and_leaves_nothing(
    tmp_path, vm_login, api):  # pylint: disable=redefined-outer-name
  memtier = memtier_replay.Path()
  prefix = str(tmp_path / 'opt-redislabs')
  tarball, licence, logs = _Installer(tmp_path)
  results = str(tmp_path / 'results')
  run_uri = e2e.NewRunUri()
  db_port = FreePort()
  args = [
      '--benchmarks=redis_enterprise', f'--static_vm_file={vm_login}',
      '--config_override=redis_enterprise.vm_groups.clients.vm_count=1',
      f'--enterprise_redis_tarball={tarball}',
      f'--enterprise_redis_license_path={licence}',
      f'--enterprise_redis_install_dir={prefix}',
      f'--enterprise_redis_api_port={api.bound_port}',
      f'--redis_start_port={db_port}',
      '--enterprise_redis_proxy_threads=2',
      '--enterprise_redis_load_records=2000',
      '--enterprise_redis_min_threads=1', '--enterprise_redis_max_threads=2',
      '--enterprise_redis_loadgen_clients=1',
      '--enterprise_redis_pipeline=1',
      '--enterprise_redis_probe_seconds=1',
      f'--memtier_path={memtier}', '--nosystem_tuning',
      '--timeout_minutes=3']
  sampler = argv_secret_test.CmdlineSampler()
  sampler.start()
  try:
    proc, _ = e2e.Run(args, results, run_uri=run_uri)
  finally:
    sampler.stop.set()
    sampler.join(10)
  assert proc.returncode == 0, proc.stderr[-3000:]

  # Installed: the tarball copied beside install.sh, which ran unattended
  # (with the installer's OS tuning) into the given directory. The licence
  # is not copied: it goes to the API in the bootstrap request.
  workdir = f'{e2e.ScratchDir(results, run_uri)}/redislabs'
  install = _Lines(logs['install'])
  assert install[:3] == [f'install.sh -y --install-dir {prefix}',
                         f'cwd {workdir}', 'CONFIG_systune unset no_tune no']
  assert f'file {TARBALL} {_Sha256(tarball)}' in install
  assert not any('licen' in line for line in install[3:]), install

  # The cluster: created through the API's bootstrap request with the
  # licence, polled until complete; then proxies tuned and restarted.
  assert api.license == LICENCE_TEXT
  assert api.cluster == {'name': rladmin_lib.CLUSTER_NAME,
                         'username': 'pkb@example.com'}
  assert api.bootstrap['state'] == 'completed'
  assert api.requests[:3] == [('POST', '/v1/bootstrap/create_cluster'),
                              ('GET', '/v1/bootstrap'),
                              ('GET', '/v1/bootstrap')]
  assert _Lines(logs['rladmin']) == [
      'rladmin tune proxy all max_threads 2 threads 2',
      'dmc_ctl restart',
      'rladmin status nodes']

  # The REST API: the load user's access objects, one database, then all
  # of it deleted again (the database first).
  calls = [(m, p) for m, p in api.requests if m != 'GET']
  assert calls == [
      ('POST', '/v1/bootstrap/create_cluster'),
      ('POST', '/v1/redis_acls'), ('POST', '/v1/roles'),
      ('POST', '/v1/users'), ('POST', '/v1/bdbs'),
      ('DELETE', '/v1/bdbs/1'), ('DELETE', '/v1/users/1'),
      ('DELETE', '/v1/roles/1'), ('DELETE', '/v1/redis_acls/1')]
  assert api.bdbs == {} and not any(api.access.values())
  # One real redis-server served the database, and it is gone.
  assert len(api.databases.started) == 1
  assert api.databases.Running() == []

  # Samples from the memtier stand-in's steps against that server.
  samples = e2e.Samples(results, run_uri)
  probes = [s for s in samples if s['metric'] == 'throughput']
  assert len(probes) == 2 and all(s['value'] > 0 for s in probes)
  # The version of the memtier given by --memtier_path, not of the PATH's.
  versions = {e2e.Labels(s).get('load_generator_version') for s in probes}
  assert versions == {memtier_replay.VERSION}
  assert {e2e.Labels(s).get('engine') for s in samples} == {
      'redis_enterprise'}
  capped = [s for s in samples if s['metric'] == 'latency_capped_throughput']
  assert capped and capped[0]['value'] > 0

  # Nothing of the run is left on the "VMs".
  assert e2e.Workspaces(run_uri) == []

  # No password in any argv at all (the cluster was created through the
  # API, credentials on curl's stdin), nor in a kept file or the output.
  assert any('memtier_benchmark' in a for a in sampler.argvs)
  assert any('/v1/bootstrap/create_cluster' in a for a in sampler.argvs)
  password = api.password
  for secret in (password, redis_shard.LoadPassword(password)):
    leaks = [a for a in sampler.argvs if secret in a]
    assert not leaks, leaks[:2]
    assert secret not in proc.stdout + proc.stderr
    for path in _KeptFiles(results, *logs.values()):
      with open(path, 'rb') as f:
        assert secret.encode() not in f.read(), path
  assert sys.platform.startswith('linux')
