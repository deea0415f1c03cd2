"""A local fake of one Redis Enterprise node's REST API.

Serves, on 127.0.0.1 only, the documented behaviour the client relies on:
  POST   /v1/bootstrap/create_cluster, /v1/bootstrap/join_cluster
                         a bootstrap object: `credentials` (non-empty
                         `username`, `password`) and `cluster` (create: a
                         `name` of at most 64 letters, digits, '-' and '.';
                         join: `nodes`, addresses of cluster members) and an
                         optional `license` string; 400 invalid_schema when a
                         field is missing or of the wrong type, 409 unless the
                         node's bootstrap state is idle or error (as
                         documented); no credentials needed. Asynchronous:
  GET    /v1/bootstrap   {"bootstrap_status": {"state", ...}}: `initiated`
                         after the POST, then `creating_cluster` or
                         `joining_cluster`, `completed` at the
                         `polls_to_bootstrap`-th read (the credentials and
                         licence take effect then), or `error` with
                         `error_code` and `error_details.message`
                         (`bootstrap_error`; a join also fails with
                         connect_error when no member of `peers` has one of
                         the addresses, access_denied on other credentials).
                         Without credentials until the node is in a cluster.
  POST   /v1/bdbs        create; 400 on a malformed body, 409 when the name
                         is taken; the new bdb starts `pending`
  GET    /v1/bdbs        list
  GET    /v1/bdbs/<uid>  read; `pending` -> `active` after `polls_to_active`
                         reads; 404 with error_code db_not_exist when absent
  DELETE /v1/bdbs/<uid>  `delete-pending`, gone after `polls_to_delete` reads
  POST, GET, DELETE /v1/redis_acls, /v1/roles, /v1/users (and /<uid>): the
                         access objects a database's `roles_permissions`
                         (role uid + Redis ACL uid pairs) refer to; 409 when a
                         name is taken or a bdb still refers to the object
Errors are JSON {"error_code", "description"}; wrong credentials get 401.
Tests script failures: `fail_next` maps a method to status codes answered
before anything else (e.g. {'GET': [503]} or {'POST': [500]}).

A cluster of several nodes is several fakes: each joining node's fake gets
`peers`, the members' fakes by address, and takes the cluster's credentials
when its join completes.

Two optional parts make it a cluster a real run can use:
  * `tls=(certfile, keyfile)` serves https, as the real API does on 9443
    (`port` picks the port; 0, the default, a free one);
  * `databases=RedisServers(...)` starts a real redis-server for each
    created bdb on its port, with the bdb's `authentication_redis_pass` as
    the default user's password and one ACL user per user whose role the
    bdb's `roles_permissions` names (that entry's Redis ACL as the rules); a
    bdb turns `active` only once its server answers, and its server is
    stopped when the bdb is gone. The configuration goes to redis-server on
    stdin, so no password is in its argv.
"""

import base64
import collections
import http.server
import json
import os
import re
import socket
import ssl
import subprocess
import threading
import time
from typing import Deque, Dict, List, Optional, Tuple

_ACCESS_KINDS = ('redis_acls', 'roles', 'users')
_BOOTSTRAP_ACTIONS = {'create_cluster': 'creating_cluster',
                      'join_cluster': 'joining_cluster'}
# A cluster name: an FQDN as RFC 952 / RFC 1123 section 2.1 allow, <= 64.
_CLUSTER_NAME = re.compile(
    r'(?=.{1,64}$)[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?'
    r'(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*')


def _ConfigQuote(value: str) -> str:
  return '"' + value.replace('\\', '\\\\').replace('"', '\\"') + '"'


class RedisServers:
  """Real redis-servers on 127.0.0.1, one per database; remembers them all."""

  def __init__(self, redis_server: str, directory: str,
               start_timeout_s: float = 10):
    self.redis_server = redis_server
    self.directory = directory
    self.start_timeout_s = start_timeout_s
    self.started: List[subprocess.Popen] = []
    self._by_port: Dict[int, subprocess.Popen] = {}

  def Start(self, port: int, password: str, users: List[Tuple[str, str, str]]
            ) -> None:
    """redis-server on `port`; users are (name, password, ACL rules)."""
    lines = [f'port {int(port)}', 'bind 127.0.0.1', 'save ""',
             'appendonly no', f'dir {_ConfigQuote(self.directory)}',
             'daemonize no', 'loglevel warning']
    if password:
      lines.append(f'requirepass {_ConfigQuote(password)}')
    for name, user_password, rules in users:
      lines.append(f'user {name} on >{user_password} {rules}')
    proc = subprocess.Popen([self.redis_server, '-'], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, text=True)
    proc.stdin.write('\n'.join(lines) + '\n')
    proc.stdin.close()
    self.started.append(proc)
    self._by_port[port] = proc

  def Answers(self, port: int) -> bool:
    """Whether the server on `port` takes connections (any reply counts)."""
    proc = self._by_port.get(port)
    if proc is None or proc.poll() is not None:
      return False
    try:
      with socket.create_connection(('127.0.0.1', port), timeout=1) as s:
        s.sendall(b'PING\r\n')
        return bool(s.recv(64))
    except OSError:
      return False

  def WaitAnswers(self, port: int) -> bool:
    deadline = time.monotonic() + self.start_timeout_s
    while time.monotonic() < deadline:
      if self.Answers(port):
        return True
      proc = self._by_port.get(port)
      if proc is None or proc.poll() is not None:
        return False
      time.sleep(0.02)
    return False

  def Stop(self, port: int) -> None:
    proc = self._by_port.pop(port, None)
    if proc is None:
      return
    proc.terminate()
    try:
      proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
      proc.kill()
      proc.wait()

  def Running(self) -> List[int]:
    """PIDs of servers started here that still run."""
    return [p.pid for p in self.started if p.poll() is None]

  def StopAll(self) -> None:
    for port in list(self._by_port):
      self.Stop(port)


class _Server(http.server.ThreadingHTTPServer):
  """Serves https when given a context; the TLS handshake runs in the
  request's own thread, so a stalled client never blocks the others."""
  daemon_threads = True
  ssl_context: Optional[ssl.SSLContext] = None

  def finish_request(self, request, client_address):
    if self.ssl_context is None:
      super().finish_request(request, client_address)
      return
    with self.ssl_context.wrap_socket(request, server_side=True) as tls:
      super().finish_request(tls, client_address)

  def handle_error(self, request, client_address):
    pass  # e.g. a client that refuses the self-signed certificate


class FakeRedisEnterprise:
  """The fake API; `url` once started; use as a context manager."""

  def __init__(self, user: Optional[str] = 'admin@example.com',
               password: Optional[str] = 'pw',
               polls_to_active: int = 2, polls_to_delete: int = 1,
               fail_creation: bool = False, port: int = 0,
               tls: Optional[Tuple[str, str]] = None,
               databases: Optional[RedisServers] = None,
               polls_to_bootstrap: int = 1,
               bootstrap_error: Optional[str] = None,
               address: str = '127.0.0.1',
               peers: Optional[Dict[str, 'FakeRedisEnterprise']] = None):
    """password=None: a node in no cluster yet (bootstrap state idle); a
    bootstrap request sets the credentials once it completes."""
    self.user, self.password = user, password
    self.polls_to_bootstrap = polls_to_bootstrap
    self.bootstrap_error = bootstrap_error
    self.address = address
    self.peers = peers or {}
    self.bootstrap: Dict[str, object] = {
        'state': 'idle' if password is None else 'completed'}
    self._bootstrap_request: Optional[dict] = None
    self._bootstrap_action = ''
    self._bootstrap_reads = 0
    self.members: List[str] = [address]  # the cluster's, on its first node
    self.joined: Optional[str] = None  # the member address a join used
    self.polls_to_active = polls_to_active
    self.polls_to_delete = polls_to_delete
    self.fail_creation = fail_creation
    self.port = port
    self.tls = tls
    self.databases = databases
    # From the bootstrap request: cluster name and admin user (not the
    # password, which is self.password), and the licence text.
    self.cluster: Optional[dict] = None
    self.license: Optional[str] = None
    self.bdbs: Dict[int, dict] = {}
    self.access: Dict[str, Dict[int, dict]] = {k: {} for k in _ACCESS_KINDS}
    self.reads: Dict[int, int] = collections.Counter()
    self.fail_next: Dict[str, Deque[int]] = collections.defaultdict(
        collections.deque)
    self.requests: List[tuple] = []
    self._next_uid = collections.Counter()
    self._lock = threading.Lock()
    self._server = None
    self._thread = None

  # Lifecycle ---------------------------------------------------------------

  def __enter__(self):
    fake = self

    class Handler(http.server.BaseHTTPRequestHandler):

      def log_message(self, *args):  # quiet
        pass

      def _Answer(self, status, body=None):
        data = b'' if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

      def _Handle(self, method):
        length = int(self.headers.get('Content-Length') or 0)
        raw = self.rfile.read(length) if length else b''
        status, body = fake.Handle(method, self.path,
                                   self.headers.get('Authorization', ''), raw)
        self._Answer(status, body)

      def do_GET(self):  # pylint: disable=invalid-name
        self._Handle('GET')

      def do_POST(self):  # pylint: disable=invalid-name
        self._Handle('POST')

      def do_DELETE(self):  # pylint: disable=invalid-name
        self._Handle('DELETE')

    self._server = _Server(('127.0.0.1', self.port), Handler)
    if self.tls:
      context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
      context.load_cert_chain(*self.tls)
      self._server.ssl_context = context
    self._thread = threading.Thread(target=self._server.serve_forever,
                                    kwargs={'poll_interval': 0.1},
                                    daemon=True)
    self._thread.start()
    return self

  def __exit__(self, *exc):
    self._server.shutdown()
    self._server.server_close()
    self._thread.join(5)
    if self.databases is not None:
      self.databases.StopAll()

  @property
  def url(self) -> str:
    host, port = self._server.server_address[:2]
    return f'{"https" if self.tls else "http"}://{host}:{port}'

  @property
  def bound_port(self) -> int:
    return self._server.server_address[1]

  # The API -----------------------------------------------------------------

  @staticmethod
  def _Error(status, code, description):
    return status, {'error_code': code, 'description': description}

  def _NewUid(self, kind: str) -> int:
    self._next_uid[kind] += 1
    return self._next_uid[kind]

  def Handle(self, method: str, path: str, authorization: str, raw: bytes):
    with self._lock:
      self.requests.append((method, path))
      if self.fail_next[method]:
        status = self.fail_next[method].popleft()
        return self._Error(status, 'internal_error' if status >= 500 else
                           'scripted', f'scripted {status}')
      match = re.fullmatch(r'/v1/bootstrap/([a-z_]+)', path)
      if match and method == 'POST':
        return self._StartBootstrap(match.group(1), raw)
      in_cluster = self.bootstrap['state'] == 'completed'
      if path == '/v1/bootstrap' and method == 'GET' and not in_cluster:
        return 200, self._ReadBootstrap()
      if self.password is None:
        return self._Error(401, 'unauthorized', 'no cluster yet')
      expected = 'Basic ' + base64.b64encode(
          f'{self.user}:{self.password}'.encode()).decode()
      if authorization != expected:
        return self._Error(401, 'unauthorized', 'bad credentials')
      if path == '/v1/bootstrap' and method == 'GET':
        return 200, self._ReadBootstrap()
      match = re.fullmatch(r'/v1/(redis_acls|roles|users)(?:/(\d+))?', path)
      if match:
        uid = match.group(2)
        return self._Access(method, match.group(1),
                            None if uid is None else int(uid), raw)
      if path == '/v1/bdbs' and method == 'GET':
        return 200, [self._Read(uid, count=False) for uid in sorted(self.bdbs)]
      if path == '/v1/bdbs' and method == 'POST':
        return self._Create(raw)
      match = re.fullmatch(r'/v1/bdbs/(\d+)', path)
      if not match:
        return self._Error(404, 'not_found', f'no route {path}')
      uid = int(match.group(1))
      if uid not in self.bdbs:
        return self._Error(404, 'db_not_exist', f'database {uid} not found')
      if method == 'GET':
        bdb = self._Read(uid, count=True)
        if bdb is None:
          return self._Error(404, 'db_not_exist', f'database {uid} not found')
        return 200, bdb
      if method == 'DELETE':
        self.bdbs[uid]['status'] = 'delete-pending'
        self.reads[uid] = 0
        return 200, {'uid': uid}
      return self._Error(405, 'method_not_allowed', method)

  # Bootstrap ---------------------------------------------------------------

  def _StartBootstrap(self, action: str, raw: bytes):
    if action not in _BOOTSTRAP_ACTIONS:
      return self._Error(400, 'invalid_schema',
                         f'unsupported bootstrap action {action}')
    if self.bootstrap['state'] not in ('idle', 'error'):
      return self._Error(409, 'bootstrap_in_progress',
                         f'bootstrap state is {self.bootstrap["state"]}')
    problem = _BootstrapProblem(action, raw)
    if problem:
      return self._Error(400, 'invalid_schema', problem)
    self._bootstrap_request = json.loads(raw)
    self._bootstrap_action = action
    self._bootstrap_reads = 0
    self.bootstrap = {'state': 'initiated', 'start_time': _Now()}
    return 200, {}

  def _ReadBootstrap(self) -> dict:
    """The status, one step further along for a bootstrap under way."""
    request = self._bootstrap_request
    if request is not None and self.bootstrap['state'] not in (
        'completed', 'error'):
      self._bootstrap_reads += 1
      action = self._bootstrap_action
      if self._bootstrap_reads < self.polls_to_bootstrap:
        self.bootstrap['state'] = _BOOTSTRAP_ACTIONS[action]
      else:
        self._FinishBootstrap(action, request)
    return {'bootstrap_status': dict(self.bootstrap),
            'local_node_info': {'uid': 1, 'software_version': '6.2.4-54',
                                'cores': os.cpu_count() or 1}}

  def _FinishBootstrap(self, action: str, request: dict) -> None:
    credentials = request['credentials']
    user, password = credentials['username'], credentials['password']
    error, message = self.bootstrap_error, 'scripted bootstrap failure'
    peer = None
    if not error and action == 'join_cluster':
      peer = next((self.peers[a] for a in request['cluster']['nodes']
                   if a in self.peers and self.peers[a].password), None)
      if peer is None:
        error, message = 'connect_error', 'no cluster node at those addresses'
      elif (user, password) != (peer.user, peer.password):
        error, message = 'access_denied', 'invalid credentials'
    self.bootstrap['end_time'] = _Now()
    if error:
      self.bootstrap.update(state='error', error_code=error,
                            error_details={'message': message})
      return
    self.user, self.password = user, password
    if peer is None:
      self.license = request.get('license')
      self.cluster = {'name': request['cluster']['name'], 'username': user}
    else:
      self.cluster = dict(peer.cluster or {}, username=user)
      self.joined = peer.address
      peer.members.append(self.address)
    self.bootstrap['state'] = 'completed'

  def _Access(self, method: str, kind: str, uid: Optional[int], raw: bytes):
    objects = self.access[kind]
    public = lambda o: {k: v for k, v in o.items() if k != 'password'}
    if uid is None and method == 'GET':
      return 200, [public(objects[u]) for u in sorted(objects)]
    if uid is None and method == 'POST':
      body, error = self._NamedBody(raw)
      if error:
        return error
      if any(o['name'] == body['name'] for o in objects.values()):
        return self._Error(409, 'name_in_use', f'{kind} name is in use')
      if kind == 'users' and (not body.get('password') or any(
          r not in self.access['roles'] for r in body.get('role_uids', ()))):
        return self._Error(400, 'invalid_schema',
                           'a password and existing role_uids are required')
      uid = self._NewUid(kind)
      objects[uid] = dict(body, uid=uid)
      return 200, public(objects[uid])
    if uid is None or uid not in objects:
      return self._Error(404, 'not_found', f'{kind} {uid} not found')
    if method == 'GET':
      return 200, public(objects[uid])
    if method == 'DELETE':
      field = {'roles': 'role_uid', 'redis_acls': 'redis_acl_uid'}.get(kind)
      if field and any(p.get(field) == uid for b in self.bdbs.values()
                       for p in b.get('roles_permissions') or ()):
        return self._Error(409, 'in_use', f'a database uses {kind} {uid}')
      if kind == 'roles' and any(uid in u.get('role_uids', ())
                                 for u in self.access['users'].values()):
        return self._Error(409, 'in_use', f'a user has role {uid}')
      del objects[uid]
      return 200, {}
    return self._Error(405, 'method_not_allowed', method)

  def _NamedBody(self, raw: bytes):
    """(the JSON object with a string name, None) or (None, a 400)."""
    try:
      body = json.loads(raw or b'null')
    except ValueError:
      return None, self._Error(400, 'invalid_schema', 'body is not JSON')
    if not isinstance(body, dict) or not isinstance(body.get('name'), str):
      return None, self._Error(400, 'invalid_schema', 'name is required')
    return body, None

  def _Create(self, raw: bytes):
    body, error = self._NamedBody(raw)
    if error:
      return error
    size = body.get('memory_size')
    if not isinstance(size, int) or size <= 0:
      return self._Error(400, 'invalid_schema', 'memory_size must be > 0')
    shards = body.get('shards_count', 1)
    if not isinstance(shards, int) or shards < 1:
      return self._Error(400, 'invalid_schema', 'shards_count must be >= 1')
    if body.get('bigstore') and not body.get('bigstore_ram_size'):
      return self._Error(400, 'invalid_schema',
                         'bigstore needs bigstore_ram_size')
    permissions = body.get('roles_permissions') or []
    if any(not isinstance(p, dict) or
           p.get('role_uid') not in self.access['roles'] or
           p.get('redis_acl_uid') not in self.access['redis_acls']
           for p in permissions):
      return self._Error(400, 'invalid_schema',
                         'roles_permissions name unknown roles or ACLs')
    if any(b['name'] == body['name'] for b in self.bdbs.values()):
      return self._Error(409, 'name_in_use', 'database name is in use')
    uid = self._NewUid('bdbs')
    port = body.get('port') or 12000 + uid
    bdb = dict(body, uid=uid, status='pending', shards_count=shards,
               endpoints=[{'addr': ['127.0.0.1'], 'port': port,
                           'dns_name': f'redis-{port}.local'}])
    if self.databases is not None:
      self.databases.Start(port, body.get('authentication_redis_pass', ''),
                           self._Users(permissions))
    self.bdbs[uid] = bdb
    self.reads[uid] = 0
    return 200, {k: v for k, v in bdb.items()
                 if k != 'authentication_redis_pass'}

  def _Users(self, permissions) -> List[Tuple[str, str, str]]:
    """(name, password, rules) of every user a bdb's permissions admit."""
    users = []
    for p in permissions:
      rules = self.access['redis_acls'][p['redis_acl_uid']]['acl']
      for user in self.access['users'].values():
        if p['role_uid'] in user.get('role_uids', ()):
          users.append((user['name'], user['password'], rules))
    return users

  def _Port(self, uid: int) -> int:
    return self.bdbs[uid]['endpoints'][0]['port']

  def _Read(self, uid: int, count: bool):
    bdb = self.bdbs[uid]
    if count:
      self.reads[uid] += 1
      if bdb['status'] == 'pending' and (
          self.reads[uid] >= self.polls_to_active):
        if self.fail_creation or (
            self.databases is not None and
            not self.databases.WaitAnswers(self._Port(uid))):
          bdb['status'] = 'creation-failed'
        else:
          bdb['status'] = 'active'
      elif bdb['status'] == 'delete-pending' and (
          self.reads[uid] > self.polls_to_delete):
        if self.databases is not None:
          self.databases.Stop(self._Port(uid))
        del self.bdbs[uid]
        return None
    return {k: v for k, v in bdb.items() if k != 'authentication_redis_pass'}


def _Now() -> str:
  return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())


def _BootstrapProblem(action: str, raw: bytes) -> str:
  """Why the bootstrap object is not valid for `action`; '' if it is."""
  try:
    body = json.loads(raw or b'null')
  except ValueError:
    return 'the body is not JSON'
  if not isinstance(body, dict):
    return 'the body is not a bootstrap object'
  if body.get('action', action) != action:
    return f'action {body.get("action")!r} does not match the path'
  credentials = body.get('credentials')
  if not isinstance(credentials, dict) or not all(
      isinstance(credentials.get(k), str) and credentials[k]
      for k in ('username', 'password')):
    return 'credentials.username and credentials.password are required'
  if not isinstance(body.get('license', ''), str):
    return 'license must be a string'
  cluster = body.get('cluster')
  if not isinstance(cluster, dict):
    return 'cluster is required'
  nodes = cluster.get('nodes', [])
  if not isinstance(nodes, list) or not all(
      isinstance(n, str) and n for n in nodes):
    return 'cluster.nodes must be a list of addresses'
  if action == 'create_cluster':
    name = cluster.get('name')
    if not isinstance(name, str) or not _CLUSTER_NAME.fullmatch(name):
      return 'cluster.name must be an FQDN of at most 64 characters'
  elif not nodes:
    return 'cluster.nodes must name a node of the cluster to join'
  return ''


def SelfSignedCertificate(directory: str) -> Tuple[str, str]:
  """(certfile, keyfile) for CN=localhost, made with the openssl command."""
  cert = os.path.join(directory, 'api-cert.pem')
  key = os.path.join(directory, 'api-key.pem')
  subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes',
                  '-keyout', key, '-out', cert, '-days', '1', '-subj',
                  '/CN=localhost'], check=True, capture_output=True,
                 timeout=60)
  return cert, key


class FakeClock:
  """A clock the client under test sleeps on: time passes only by Sleep."""

  def __init__(self):
    self.now = 0.0
    self.sleeps = []

  def Sleep(self, seconds):
    self.sleeps.append(seconds)
    self.now += seconds

  def Now(self):
    return self.now
