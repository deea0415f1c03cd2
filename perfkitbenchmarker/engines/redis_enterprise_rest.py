"""A small client of the Redis Enterprise REST API (documented endpoints only).

Cluster: POST /v1/bootstrap/create_cluster on the first node and
/v1/bootstrap/join_cluster on the others, each to the node's own API; the
request is asynchronous, so GET /v1/bootstrap is polled until `completed` or
`error`. Credentials are always sent: a node answers without them only until
it is in a cluster. Databases: /v1/bdbs (status goes pending -> active;
deleted once GET answers 404); the load generators' restricted user:
/v1/redis_acls, /v1/roles, /v1/users, bound through `roles_permissions`.

The HTTP session, base URL, clock and sleep are injected: tests pass a
requests.Session and a local fake (tests/fake_redis_enterprise.py); a cloud
run passes `CurlOnVm` (curl on the first server VM to its own
https://localhost:9443, the password on curl's stdin, never its argv).
"""

import dataclasses
import json as json_lib
import shlex
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import tenacity

from perfkitbenchmarker import errors
from perfkitbenchmarker import vm_util
from perfkitbenchmarker import waits

API_PORT = 9443
ACTIVE = 'active'
FAILED_STATUSES = ('creation-failed',)
BOOTSTRAP_DONE = 'completed'
BOOTSTRAP_FAILED = 'error'
CREATE_CLUSTER = 'create_cluster'
JOIN_CLUSTER = 'join_cluster'
# GETs are retried on these (the API answers 503 while the cluster settles).
_RETRY_STATUSES = (500, 502, 503, 504)
_GET_ATTEMPTS = 3


class RestError(errors.Error):
  """The API refused a request; says which, with its error code."""

  def __init__(self, what: str, status: int, error_code: str = '',
               description: str = ''):
    self.status = status
    self.error_code = error_code
    detail = f'{error_code}: {description}' if error_code else description
    detail = ' '.join(detail.split())  # one line, whatever the API sent
    super().__init__(f'Redis Enterprise API {what} failed with HTTP {status}'
                     + (f' ({detail})' if detail else ''))


@dataclasses.dataclass(frozen=True)
class DatabaseSpec:
  """One database (bdb) as the benchmark creates it."""
  name: str
  memory_size: int  # bytes
  password: str = dataclasses.field(repr=False, default='')
  shards: int = 1
  replication: bool = False
  proxy_policy: str = 'all-master-shards'
  oss_cluster: bool = False
  port: Optional[int] = None
  flash: bool = False
  flash_ram_ratio: float = 0.2
  # (role uid, Redis ACL uid) pairs: who may log in to the database, how.
  roles_permissions: Tuple[Tuple[int, int], ...] = ()

  def ToJson(self) -> Dict[str, Any]:
    """The bdb object of POST /v1/bdbs."""
    body: Dict[str, Any] = {
        'name': self.name,
        'type': 'redis',
        'memory_size': self.memory_size,
        'replication': self.replication,
        'proxy_policy': self.proxy_policy,
        'sharding': self.shards > 1,
        'shards_count': self.shards,
    }
    if self.password:
      body['authentication_redis_pass'] = self.password
    if self.port is not None:
      body['port'] = self.port
    if self.roles_permissions:
      body['roles_permissions'] = [
          {'role_uid': role, 'redis_acl_uid': acl}
          for role, acl in self.roles_permissions]
    if self.shards > 1:
      body.update({
          'shards_placement': 'sparse',
          'oss_cluster': self.oss_cluster,
          # Hash tags {...} pick the shard, else the whole key (the
          # documented default regex pair for a sharded database).
          'shard_key_regex': [{'regex': r'.*\{(?<tag>.*)\}.*'},
                              {'regex': r'(?<tag>.*)'}],
      })
    if self.flash:  # Redis on Flash: RAM share of memory_size, rest flash.
      body['bigstore'] = True
      body['bigstore_ram_size'] = int(self.memory_size * self.flash_ram_ratio)
    return body


@dataclasses.dataclass(frozen=True)
class ClusterBootstrap:
  """The bootstrap object of POST /v1/bootstrap/<action>: create a cluster
  (`cluster_name`, `license`) or join one (`nodes`, addresses of members)."""
  action: str
  username: str
  password: str = dataclasses.field(repr=False)
  cluster_name: str = ''
  nodes: Tuple[str, ...] = ()
  license: str = dataclasses.field(repr=False, default='')

  def __post_init__(self):
    if self.action == CREATE_CLUSTER and not self.cluster_name:
      raise ValueError('create_cluster needs a cluster name')
    if self.action == JOIN_CLUSTER and not self.nodes:
      raise ValueError('join_cluster needs the address of a cluster node')
    if self.action not in (CREATE_CLUSTER, JOIN_CLUSTER):
      raise ValueError(f'not a bootstrap action: {self.action}')

  def ToJson(self) -> Dict[str, Any]:
    body: Dict[str, Any] = {
        'action': self.action,
        'credentials': {'username': self.username,
                        'password': self.password},
    }
    if self.action == CREATE_CLUSTER:
      body['cluster'] = {'name': self.cluster_name, 'nodes': []}
      if self.license:  # Without one, the documented default is a trial.
        body['license'] = self.license
    else:
      body['cluster'] = {'nodes': list(self.nodes)}
    return body


class RestClient:
  """Forms the cluster; creates, checks and deletes databases."""

  def __init__(self, session, base_url: str, auth: Tuple[str, str],
               verify: bool = False,
               sleep: Callable[[float], None] = time.sleep,
               clock: Callable[[], float] = time.monotonic,
               request_timeout_s: float = 30):
    self._session = session
    self._base = base_url.rstrip('/')
    self._auth = auth
    self._verify = verify
    self._sleep = sleep
    self._clock = clock
    self._timeout = request_timeout_s
    vm_util.RegisterSecret(auth[1])

  def _Request(self, method: str, path: str, what: str,
               body: Optional[dict] = None, ok=(200,), allow_404=False):
    def Send():
      return self._session.request(
          method, f'{self._base}{path}', json=body, auth=self._auth,
          verify=self._verify, timeout=self._timeout)

    # A GET is retried on a server error; the last answer is judged below.
    response = tenacity.Retrying(
        retry=tenacity.retry_if_result(
            lambda answer: answer.status_code in _RETRY_STATUSES),
        stop=tenacity.stop_after_attempt(
            _GET_ATTEMPTS if method == 'GET' else 1),
        wait=tenacity.wait_fixed(1.0), sleep=self._sleep,
        retry_error_callback=lambda state: state.outcome.result())(Send)
    if response.status_code in ok:
      return response
    if allow_404 and response.status_code == 404:
      return None
    code, description = _ErrorFields(response)
    raise RestError(what, response.status_code, code, description)

  def _Until(self, check: Callable[[], Any], timeout_s: float, poll_s: float,
             timed_out: Callable[[], str]) -> Any:
    """check() every poll_s s until it returns something other than None,
    then that; after timeout_s, a ResourceError saying timed_out()."""
    done, result = waits.Poll(check, lambda result: result is not None,
                              timeout_s, poll_s, self._clock, self._sleep,
                              inclusive=True)
    if not done:
      raise errors.ResourceError(' '.join(timed_out().split()))
    return result

  def _Create(self, path: str, what: str, body: dict) -> Dict[str, Any]:
    """The object the POST created (with its uid)."""
    answer = self._Request('POST', path, what, body).json()
    if not isinstance(answer, dict) or 'uid' not in answer:
      raise errors.ResourceError(
          f'Redis Enterprise API {what}: the answer has no uid.')
    return answer

  # Cluster bootstrap -----------------------------------------------------

  def Bootstrap(self, bootstrap: ClusterBootstrap) -> None:
    """POSTs the bootstrap request; the node works on it asynchronously."""
    vm_util.RegisterSecret(bootstrap.password)
    self._Request('POST', f'/v1/bootstrap/{bootstrap.action}',
                  f'bootstrap {bootstrap.action}', bootstrap.ToJson())

  def BootstrapStatus(self) -> Dict[str, Any]:
    """The `bootstrap_status` object of GET /v1/bootstrap."""
    answer = self._Request('GET', '/v1/bootstrap', 'read bootstrap status')
    status = answer.json()
    if not isinstance(status, dict) or not isinstance(
        status.get('bootstrap_status'), dict):
      raise errors.ResourceError(
          'Redis Enterprise API bootstrap status: the answer has no '
          'bootstrap_status.')
    return status['bootstrap_status']

  def WaitBootstrapped(self, what: str, timeout_s: float = 600,
                       poll_s: float = 2) -> Dict[str, Any]:
    """Polls the bootstrap status until `completed`; raises one line on
    `error` or timeout. While the node restarts its services the API may
    answer 5xx or not at all; that counts as still working."""
    last = {'state': 'unknown', 'problem': ''}

    def Check() -> Optional[Dict[str, Any]]:
      try:
        status = self.BootstrapStatus()
        last.update(state=str(status.get('state')), problem='')
      except (RestError, TransportError) as e:
        if isinstance(e, RestError) and e.status not in _RETRY_STATUSES:
          raise
        last['problem'] = f' (last answer: {e})'
        status = {}
      if last['state'] == BOOTSTRAP_DONE:
        return status
      if last['state'] == BOOTSTRAP_FAILED:
        details = status.get('error_details') or {}
        message = (details.get('message', '') if isinstance(details, dict)
                   else str(details))
        raise errors.ResourceError(' '.join(
            f'Redis Enterprise {what} failed: {status.get("error_code", "")} '
            f'{message}'.split()))
      return None

    return self._Until(
        Check, timeout_s, poll_s,
        lambda: f'Redis Enterprise {what} is still {last["state"]} after '
        f'{timeout_s:g} s{last["problem"]}.')

  # Databases --------------------------------------------------------------

  def ListDatabases(self) -> List[Dict[str, Any]]:
    return list(self._Request('GET', '/v1/bdbs', 'list databases').json())

  def GetDatabase(self, uid: int) -> Optional[Dict[str, Any]]:
    response = self._Request('GET', f'/v1/bdbs/{int(uid)}',
                             f'read database {uid}', allow_404=True)
    return None if response is None else response.json()

  def CreateDatabase(self, spec: DatabaseSpec) -> Dict[str, Any]:
    """POSTs the database; returns its bdb object (status may be pending)."""
    return self._Create('/v1/bdbs', f'create database {spec.name}',
                        spec.ToJson())

  def WaitActive(self, uid: int, timeout_s: float = 600,
                 poll_s: float = 5) -> Dict[str, Any]:
    """Polls until the database is active; raises on failure or timeout."""
    last = {}

    def Check() -> Optional[Dict[str, Any]]:
      bdb = self.GetDatabase(uid)
      if bdb is None:
        raise errors.ResourceError(
            f'Redis Enterprise database {uid} disappeared while waiting for '
            'it to become active.')
      last['status'] = status = bdb.get('status')
      if status in FAILED_STATUSES:
        raise errors.ResourceError(
            f'Redis Enterprise database {uid} is {status}; see the cluster '
            'log (rladmin status).')
      return bdb if status == ACTIVE else None

    return self._Until(
        Check, timeout_s, poll_s,
        lambda: f'Redis Enterprise database {uid} is still {last["status"]} '
        f'after {timeout_s:g} s.')

  def DeleteDatabase(self, uid: int, timeout_s: float = 300,
                     poll_s: float = 5) -> None:
    """Deletes the database and waits until the API no longer has it."""
    response = self._Request('DELETE', f'/v1/bdbs/{int(uid)}',
                             f'delete database {uid}', ok=(200, 204),
                             allow_404=True)
    if response is None:
      return
    self._Until(
        lambda: True if self.GetDatabase(uid) is None else None, timeout_s,
        poll_s, lambda: f'Redis Enterprise database {uid} still exists '
        f'{timeout_s:g} s after DELETE.')

  # Access control: a Redis ACL, a role and a user ------------------------

  def CreateRedisAcl(self, name: str, acl: str) -> int:
    return int(self._Create('/v1/redis_acls', f'create Redis ACL {name}',
                            {'name': name, 'acl': acl})['uid'])

  def CreateRole(self, name: str) -> int:
    """A role with no cluster management rights (database access only)."""
    return int(self._Create('/v1/roles', f'create role {name}',
                            {'name': name, 'management': 'none'})['uid'])

  def CreateUser(self, name: str, email: str, password: str,
                 role_uids: List[int]) -> int:
    vm_util.RegisterSecret(password)
    return int(self._Create('/v1/users', f'create user {name}',
                            {'name': name, 'email': email,
                             'password': password,
                             'role_uids': [int(r) for r in role_uids]})['uid'])

  def Delete(self, kind: str, uid: int) -> None:
    """DELETE /v1/<kind>/<uid> of users, roles or redis_acls; gone is fine."""
    self._Request('DELETE', f'/v1/{kind}/{int(uid)}',
                  f'delete {kind} {uid}', ok=(200, 204), allow_404=True)

  def Endpoints(self, uids: Optional[List[int]] = None
                ) -> List[Tuple[str, int]]:
    """(address, port) of each database's first endpoint, by uid (only
    those of `uids` when given)."""
    result = []
    for bdb in sorted(self.ListDatabases(), key=lambda b: b['uid']):
      if uids is not None and bdb['uid'] not in uids:
        continue
      endpoint = (bdb.get('endpoints') or [{}])[0]
      addresses = endpoint.get('addr') or []
      if not addresses or 'port' not in endpoint:
        raise errors.ResourceError(
            f'Redis Enterprise database {bdb["uid"]} has no endpoint yet.')
      result.append((addresses[0], int(endpoint['port'])))
    return result


def _ErrorFields(response) -> Tuple[str, str]:
  try:
    body = response.json()
  except ValueError:
    return '', (response.text or '')[:200]
  if isinstance(body, dict):
    return (str(body.get('error_code', '')),
            str(body.get('description', body.get('message', ''))))
  return '', str(body)[:200]


# A session that runs curl on a server VM ------------------------------------


class TransportError(errors.ResourceError):
  """The request got no HTTP answer (curl could not connect, timed out)."""


@dataclasses.dataclass(frozen=True)
class CurlResponse:
  status_code: int
  text: str

  def json(self):
    return json_lib.loads(self.text)


def _CurlQuote(value: str) -> str:
  return '"' + value.replace('\\', '\\\\').replace('"', '\\"') + '"'


def CurlConfig(method: str, auth: Tuple[str, str],
               body: Optional[dict]) -> str:
  """curl's -K config (read from stdin): credentials and body stay off the
  command line, so `ps` on the VM never shows them."""
  lines = [f'request = {_CurlQuote(method)}',
           f'user = {_CurlQuote(auth[0] + ":" + auth[1])}']
  if body is not None:
    lines += ['header = "Content-Type: application/json"',
              f'data = {_CurlQuote(json_lib.dumps(body))}']
  return '\n'.join(lines) + '\n'


def CurlCommand(url: str, timeout_s: float, verify: bool) -> str:
  return ('curl -sS -K - ' + ('' if verify else '-k ') +
          f'--max-time {int(timeout_s)} -w "\\n%{{http_code}}" ' +
          shlex.quote(url))


class CurlOnVm:
  """requests-like session: each request is curl on `vm` to its own API."""

  def __init__(self, vm):
    self._vm = vm

  def request(self, method, url, json=None, auth=None, verify=False,
              timeout=30):  # pylint: disable=redefined-outer-name
    out, err, rc = self._vm.RemoteCommandWithReturnCode(
        CurlCommand(url, timeout, verify), timeout=timeout + 10,
        stdin=CurlConfig(method, auth, json))
    if rc != 0:
      raise TransportError(
          f'curl to the Redis Enterprise API on {self._vm.name} failed: '
          f'{vm_util.Mask(err.strip())[:200]}')
    text, _, code = out.rpartition('\n')
    return CurlResponse(int(code), text)


def LocalApiUrl(port: int = API_PORT) -> str:
  """The API as a server VM sees it (9443; another port only in tests)."""
  return f'https://localhost:{int(port)}'
