"""A local fake of the Redis Enterprise REST API's database endpoints.

Serves, on 127.0.0.1 only, the documented behaviour the client relies on:
  POST   /v1/bdbs        create; 400 on a malformed body, 409 when the name
                         is taken; the new bdb starts `pending`
  GET    /v1/bdbs        list
  GET    /v1/bdbs/<uid>  read; `pending` -> `active` after `polls_to_active`
                         reads; 404 with error_code db_not_exist when absent
  DELETE /v1/bdbs/<uid>  `delete-pending`, gone after `polls_to_delete` reads
Errors are JSON {"error_code", "description"}; wrong credentials get 401.
Tests script failures: `fail_next` maps a method to status codes answered
before normal service (e.g. {'GET': [503]} or {'POST': [500]}).
"""

import base64
import collections
import http.server
import json
import re
import threading
from typing import Deque, Dict, List


class FakeRedisEnterprise:
  """The fake API; `url` once started; use as a context manager."""

  def __init__(self, user: str = 'admin@example.com', password: str = 'pw',
               polls_to_active: int = 2, polls_to_delete: int = 1,
               fail_creation: bool = False):
    self.user, self.password = user, password
    self.polls_to_active = polls_to_active
    self.polls_to_delete = polls_to_delete
    self.fail_creation = fail_creation
    self.bdbs: Dict[int, dict] = {}
    self.reads: Dict[int, int] = collections.Counter()
    self.fail_next: Dict[str, Deque[int]] = collections.defaultdict(
        collections.deque)
    self.requests: List[tuple] = []
    self._next_uid = 1
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

    self._server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    self._thread = threading.Thread(target=self._server.serve_forever,
                                    daemon=True)
    self._thread.start()
    return self

  def __exit__(self, *exc):
    self._server.shutdown()
    self._server.server_close()
    self._thread.join(5)

  @property
  def url(self) -> str:
    host, port = self._server.server_address[:2]
    return f'http://{host}:{port}'

  # The API -----------------------------------------------------------------

  @staticmethod
  def _Error(status, code, description):
    return status, {'error_code': code, 'description': description}

  def Handle(self, method: str, path: str, authorization: str, raw: bytes):
    with self._lock:
      self.requests.append((method, path))
      expected = 'Basic ' + base64.b64encode(
          f'{self.user}:{self.password}'.encode()).decode()
      if authorization != expected:
        return self._Error(401, 'unauthorized', 'bad credentials')
      if self.fail_next[method]:
        status = self.fail_next[method].popleft()
        return self._Error(status, 'internal_error' if status >= 500 else
                           'scripted', f'scripted {status}')
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

  def _Create(self, raw: bytes):
    try:
      body = json.loads(raw or b'null')
    except ValueError:
      return self._Error(400, 'invalid_schema', 'body is not JSON')
    if not isinstance(body, dict) or not isinstance(body.get('name'), str):
      return self._Error(400, 'invalid_schema', 'name is required')
    size = body.get('memory_size')
    if not isinstance(size, int) or size <= 0:
      return self._Error(400, 'invalid_schema', 'memory_size must be > 0')
    shards = body.get('shards_count', 1)
    if not isinstance(shards, int) or shards < 1:
      return self._Error(400, 'invalid_schema', 'shards_count must be >= 1')
    if body.get('bigstore') and not body.get('bigstore_ram_size'):
      return self._Error(400, 'invalid_schema',
                         'bigstore needs bigstore_ram_size')
    if any(b['name'] == body['name'] for b in self.bdbs.values()):
      return self._Error(409, 'name_in_use', 'database name is in use')
    uid = self._next_uid
    self._next_uid += 1
    port = body.get('port') or 12000 + uid
    bdb = dict(body, uid=uid, status='pending', shards_count=shards,
               endpoints=[{'addr': ['127.0.0.1'], 'port': port,
                           'dns_name': f'redis-{port}.local'}])
    self.bdbs[uid] = bdb
    self.reads[uid] = 0
    return 200, {k: v for k, v in bdb.items()
                 if k != 'authentication_redis_pass'}

  def _Read(self, uid: int, count: bool):
    bdb = self.bdbs[uid]
    if count:
      self.reads[uid] += 1
      if bdb['status'] == 'pending' and (
          self.reads[uid] >= self.polls_to_active):
        bdb['status'] = ('creation-failed' if self.fail_creation else
                         'active')
      elif bdb['status'] == 'delete-pending' and (
          self.reads[uid] > self.polls_to_delete):
        del self.bdbs[uid]
        return None
    return {k: v for k, v in bdb.items() if k != 'authentication_redis_pass'}
