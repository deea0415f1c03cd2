"""A fake Compute Engine REST API on 127.0.0.1, for provider tests.

Test support code, not product code. It implements just the calls the GCP
provider makes, with the real URL shapes, so the real google-cloud-compute
clients (REST transport) talk to it unchanged:
  instances, firewalls, networks, subnetworks, resourcePolicies:
      insert (POST), get, delete;
  machineTypes get; images getFromFamily;
  zone, region and global operations get, wait and list (filtered on
      an insert's or delete's requestId: clientOperationId = "<id>").
Missing things are 404s, duplicate names 409s, and deleting something still
used by another resource a 400 (resourceInUseByAnotherResource), as in GCE,
so teardown order is checked too. Inserts and deletes return operations that
are RUNNING until they are waited on (or DONE at once with
`operations_done=True`); an insert's, with `insert_looks=n`, only at the nth
wait or get. With `visible_when_done=True` what an insert makes is found
(get, delete, a name taken) only once its operation is DONE, as a slow
insert in GCE: a delete sent before then gets a 404, and the object appears
later all the same (`Live` lists it from the insert on).

Instances get natIP <nat_prefix>.n (127.0.2.n unless told) and a networkIP
from their subnetwork's range (10.128.0.n without one), n never reused. A
test that backs instances with real hosts passes `on_instance_insert` /
`on_instance_delete` (called with the instance's JSON, under the fake's
lock, before the insert or delete answers; tests/rehearsal_hosts.py).

Every request is recorded (`requests`). Failures are injected per
collection: the nth insert returns an HTTP error or an operation that ends
in an error, once or from then on (`FailInsert`); deletes can fail a few
times (`FailDelete`: refused with the reason GCE gives, e.g.
resourceNotReady, or taken with an operation that ends in an error code,
the object left), and so can reads (`FailGet`: a get of an instance, a
machine type, an image family or an operation) and operation waits
(`FailWait`, answered before the operation is looked at). A test may act
as an injected failure is answered (`then`: e.g. send the run a signal), or
as any nth insert is (`AtInsert`).

A call can stall (`Stall`): the fake does what it asks (an insert is made,
a delete taken) and holds the answer, or all of it but its headers, for
STALL_HOLD_S or until the fake stops, whichever is first, so a client
without a timeout of its own waits that long and no longer (a test of the
timeout fails, not hangs), and none is left held after the test; or it
drops the answer, closing the connection unanswered (`drop`).

An insert or delete may carry a requestId (a UUID, not the zero one: else a
400), as GCE takes them: one whose requestId an earlier insert or delete of
the project carried, and was answered with an operation, is answered with
that operation as it is now and does nothing (no object made or removed, no
409 or 404, no failure injected). A refused one (an error status) leaves
its requestId unknown, as does a call without one. Requests keep it
(`Request.request_id`), and the operation answering it holds it as its
clientOperationId, which a list of the operations where it lives finds it
by (GCE keeps a done operation listed for at least an hour; the fake keeps
every one).
"""

import collections
import contextlib
import dataclasses
import http.server
import ipaddress
import json
import re
import threading
import urllib.parse
import uuid
from typing import Any, Callable, Dict, List, Optional, Tuple

API = 'https://www.googleapis.com/compute/v1'
# Bounds on the fake's own reads: a stalled client, an endless body.
READ_TIMEOUT_S = 60.0
MAX_REQUEST_BYTES = 16 << 20
# The longest a stalled call's answer is held (Stall).
STALL_HOLD_S = 10.0
_PATH = re.compile(
    r'/compute/v1/projects/(?P<project>[^/]+)/'
    r'(?P<scope>global|zones/[^/]+|regions/[^/]+)/(?P<collection>[A-Za-z]+)'
    r'(?:/(?P<name>[^/]+))?(?:/(?P<extra>[^/]+))?')
_SCOPES = {
    'instances': 'zones', 'machineTypes': 'zones', 'firewalls': 'global',
    'networks': 'global', 'images': 'global', 'subnetworks': 'regions',
    'resourcePolicies': 'regions',
}
_MEMORY_PER_CPU_MB = {'standard': 4096, 'highmem': 8192, 'highcpu': 1024}


@dataclasses.dataclass
class _Failure:
  collection: str
  nth: int
  mode: str  # 'http' or 'operation'
  status: int
  code: str
  persistent: bool
  # Called (under the fake's lock) as the injected failure is answered.
  then: Optional[Callable[[], None]] = None


@dataclasses.dataclass(frozen=True)
class _DeleteFailure:
  status: int
  reason: str
  mode: str  # 'http' or 'operation'
  code: str


@dataclasses.dataclass
class _Stall:
  collection: str
  method: str
  times: int
  headers: bool  # Answer the headers, then stall the body.
  drop: bool  # Close the connection, unanswered.
  # Called (not under the fake's lock) as the stall begins.
  then: Optional[Callable[[], None]] = None


@dataclasses.dataclass(frozen=True)
class Request:
  method: str
  path: str
  body: Optional[Dict[str, Any]]
  request_id: Optional[str] = None


class FakeGce:
  """The fake API's state, failure plan and HTTP server."""

  def __init__(self, operations_done: bool = False,
               missing_families: Tuple[str, ...] = (),
               on_instance_insert: Optional[Callable[[Dict[str, Any]],
                                                     None]] = None,
               on_instance_delete: Optional[Callable[[Dict[str, Any]],
                                                     None]] = None,
               nat_prefix: str = '127.0.2', insert_looks: int = 1,
               visible_when_done: bool = False):
    self.operations_done = operations_done
    self.insert_looks = insert_looks
    self.visible_when_done = visible_when_done
    self.on_instance_insert = on_instance_insert
    self.on_instance_delete = on_instance_delete
    self._addresses = iter(range(2, 255))
    self.nat_prefix = nat_prefix
    self.missing_families = set(missing_families)
    # (collection, project, scope, name) -> resource JSON.
    self.resources: Dict[Tuple[str, str, str, str], Dict[str, Any]] = {}
    self.operations: Dict[Tuple[str, str, str], Dict[str, Any]] = {}
    # (project, requestId) -> the key of the operation that answered it.
    self._by_request_id: Dict[Tuple[str, str], Tuple[str, str, str]] = {}
    # operation key -> how many more looks it stays RUNNING for.
    self._looks_left: Dict[Tuple[str, str, str], int] = {}
    # insert operation key -> (resource key, JSON) it makes once DONE
    # (visible_when_done).
    self._pending: Dict[Tuple[str, str, str], Tuple[Tuple, Dict]] = {}
    self._insert_hooks: List[Tuple[str, int, Callable[[], None]]] = []
    self.requests: List[Request] = []
    self._inserts = collections.Counter()
    # collection -> [[deletes left to fail so, _DeleteFailure], ...], the
    # first answering the next delete.
    self._delete_failures: Dict[str, List[List[Any]]] = (
        collections.defaultdict(list))
    # Operation key -> the error it ends with once DONE.
    self._errors_when_done: Dict[Tuple[str, str, str], Dict[str, Any]] = {}
    # Operation waits left to fail, and their status.
    self._wait_failures: List[int] = [0, 503]
    # collection -> [GETs left to fail, status].
    self._get_failures: Dict[str, List[Any]] = {}
    self._failures: List[_Failure] = []
    self._stalls: List[_Stall] = []
    # Set as the fake stops: every stalled answer is let go.
    self._released = threading.Event()
    self.stalled = 0  # Answers that have been held.
    self._ids = iter(range(1000, 10**9))
    self._lock = threading.RLock()
    self._server: Optional[http.server.ThreadingHTTPServer] = None
    self.endpoint = ''

  # Server -------------------------------------------------------------------

  def Start(self, bind: Optional[Callable[[], Any]] = None) -> str:
    """Serves on a free port of 127.0.0.1; returns the endpoint URL.

    `bind`, if given, is a context manager factory entered while the
    listening socket is made (e.g. one that enters a network namespace).
    """
    fake = self

    class Handler(http.server.BaseHTTPRequestHandler):
      protocol_version = 'HTTP/1.1'
      wbufsize = 1 << 16  # One send per response: no Nagle stalls.
      timeout = READ_TIMEOUT_S  # The fake's own reads are bounded too.

      def _Serve(self, method):
        length = int(self.headers.get('Content-Length') or 0)
        if length > MAX_REQUEST_BYTES:
          self.send_error(413)
          return
        raw = self.rfile.read(length) if length else b''
        body = json.loads(raw) if raw else None
        status, payload = fake.Handle(method, self.path, body)
        stall = fake.TakeStall(method, self.path)
        data = json.dumps(payload).encode()
        try:
          if stall and stall.drop:
            if stall.then:
              stall.then()
            self.close_connection = True
            return
          if stall and not stall.headers:
            fake.Hold(stall)
          self.send_response(status)
          self.send_header('Content-Type', 'application/json')
          self.send_header('Content-Length', str(len(data)))
          self.end_headers()
          if stall and stall.headers:
            self.wfile.write(data[:1])
            self.wfile.flush()
            fake.Hold(stall)
            data = data[1:]
          self.wfile.write(data)
          self.wfile.flush()
        except OSError:  # The client gave up on a stalled answer.
          self.close_connection = True

      def do_GET(self):  # pylint: disable=invalid-name
        self._Serve('GET')

      def do_POST(self):  # pylint: disable=invalid-name
        self._Serve('POST')

      def do_DELETE(self):  # pylint: disable=invalid-name
        self._Serve('DELETE')

      def log_message(self, *args):  # Quiet: requests are recorded instead.
        pass

    with (bind or contextlib.nullcontext)():
      self._server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                     Handler)
    self._server.daemon_threads = True
    threading.Thread(target=self._server.serve_forever, args=(0.05,),
                     daemon=True).start()
    self.endpoint = f'http://127.0.0.1:{self._server.server_address[1]}'
    return self.endpoint

  def Stop(self) -> None:
    self._released.set()
    if self._server:
      self._server.shutdown()
      self._server.server_close()

  def __enter__(self) -> 'FakeGce':
    self.Start()
    return self

  def __exit__(self, *exc) -> None:
    self.Stop()

  # Failure injection --------------------------------------------------------

  def FailInsert(self, collection: str, nth: int = 1, mode: str = 'http',
                 status: int = 500, code: str = 'QUOTA_EXCEEDED',
                 persistent: bool = True,
                 then: Optional[Callable[[], None]] = None) -> None:
    """Makes the nth insert into `collection` (and later ones) fail;
    `then()` is called each time, before the failure is answered."""
    self._failures.append(_Failure(collection, nth, mode, status, code,
                                   persistent, then))

  def AtInsert(self, collection: str, nth: int,
               then: Callable[[], None]) -> None:
    """Calls then() (under the fake's lock) as the nth insert into
    `collection` is answered, whatever the answer."""
    self._insert_hooks.append((collection, nth, then))

  def FailDelete(self, collection: str, times: int = 1,
                 status: int = 503, reason: str = 'backendError',
                 mode: str = 'http', code: str = 'RESOURCE_NOT_READY'
                 ) -> None:
    """Answers the next `times` deletes in `collection` with `status` and
    `reason` (GCE's error reason: a 400 resourceNotReady while the object
    is still being created or another operation on it runs); with
    mode='operation', deletes of an object that exists are taken, with an
    operation that ends (DONE) in the error `code`, the object left. A
    second call's failures answer the deletes after the first's."""
    self._delete_failures[collection].append(
        [times, _DeleteFailure(status, reason, mode, code)])

  def FailGet(self, collection: str, times: int = 1,
              status: int = 503) -> None:
    """Answers the next `times` GETs in `collection` (instances,
    machineTypes, images, operations...) with `status`."""
    self._get_failures[collection] = [times, status]

  def FailWait(self, times: int = 1, status: int = 503) -> None:
    """Answers the next `times` operation waits (any scope) with `status`,
    the operation not looked at."""
    self._wait_failures[:] = [times, status]

  def Stall(self, collection: str, method: str, times: int = 1,
            headers: bool = False, drop: bool = False,
            then: Optional[Callable[[], None]] = None) -> None:
    """Stalls the answers to the next `times` calls of `method` in
    `collection` ('operations', 'POST': an operation's wait): each call is
    done as asked, and its answer held (module docstring); with `headers`,
    its headers and first byte are sent before the rest is held; with
    `drop`, the connection is closed unanswered instead. `then()` is
    called as each stall begins (e.g. the run's stop)."""
    with self._lock:
      self._stalls.append(_Stall(collection, method, times, headers, drop,
                                 then))

  def TakeStall(self, method: str, raw_path: str) -> Optional[_Stall]:
    """The stall this call's answer gets (the handler's), taken."""
    route = _Route(urllib.parse.urlsplit(raw_path).path)
    with self._lock:
      for stall in self._stalls:
        if (route and stall.times > 0 and stall.method == method and
            stall.collection == route['collection']):
          stall.times -= 1
          self.stalled += 1
          return stall
    return None

  def Hold(self, stall: _Stall) -> None:
    """Holds a stalled answer (the handler's): STALL_HOLD_S at most."""
    if stall.then:
      stall.then()
    self._released.wait(STALL_HOLD_S)

  def ClearFailures(self) -> None:
    with self._lock:
      self._stalls.clear()
    self._failures.clear()
    self._delete_failures.clear()
    self._get_failures.clear()
    self._wait_failures[0] = 0

  # Inspection ---------------------------------------------------------------

  def Live(self, collection: Optional[str] = None) -> List[Dict[str, Any]]:
    """What exists, including what an insert still makes (not yet found)."""
    with self._lock:
      made = dict(self.resources)
      made.update(self._pending.values())
      return [r for (c, _, _, _), r in sorted(made.items())
              if collection in (None, c)]

  def Inserted(self, collection: str) -> List[Dict[str, Any]]:
    """The bodies of every insert request into `collection`."""
    return [r.body for r in self.requests
            if r.method == 'POST' and r.body is not None and
            _Route(r.path) and _Route(r.path)['collection'] == collection and
            not _Route(r.path)['name']]

  def Calls(self, collection: str, method: str) -> List[Request]:
    return [r for r in self.requests if r.method == method and
            _Route(r.path) and _Route(r.path)['collection'] == collection]

  # Request handling ---------------------------------------------------------

  def Handle(self, method: str, raw_path: str,
             body: Optional[Dict[str, Any]]) -> Tuple[int, Dict[str, Any]]:
    parts = urllib.parse.urlsplit(raw_path)
    path = parts.path
    request_id = urllib.parse.parse_qs(parts.query).get('requestId', [None])[0]
    with self._lock:
      self.requests.append(Request(method, path, body, request_id))
      route = _Route(path)
      if route is None:
        return _Error(404, f'No such API path {path}')
      project, scope = route['project'], route['scope']
      collection, name = route['collection'], route['name']
      extra = route['extra']
      failing = self._get_failures.get(collection)
      if method == 'GET' and failing and failing[0] > 0:
        failing[0] -= 1
        return _Error(failing[1], f'Injected failure of {collection} get')
      if collection == 'operations':
        if method == 'GET' and not name:
          return self._ListOperations(project, scope, parts.query)
        if extra == 'wait' and self._wait_failures[0] > 0:
          self._wait_failures[0] -= 1
          return _Error(self._wait_failures[1],
                        f'Injected failure of the wait on {name}')
        return self._Operation(project, scope, name)
      if collection == 'images' and name == 'family' and method == 'GET':
        return self._ImageFromFamily(project, extra)
      if collection == 'machineTypes' and method == 'GET':
        return self._MachineType(project, scope, name)
      if collection not in _SCOPES or extra:
        return _Error(404, f'Unsupported call {method} {path}')
      key = (collection, project, scope, name)
      if method == 'GET' and name:
        if key not in self.resources:
          return _NotFound(collection, name)
        return 200, self.resources[key]
      if not ((method == 'POST' and not name) or
              (method == 'DELETE' and name)):
        return _Error(404, f'Unsupported call {method} {path}')
      if request_id is not None:
        if not _IsRequestId(request_id):
          return _Error(400, f'Invalid value for field requestId: '
                        f'{request_id!r}', 'invalid')
        taken = self._by_request_id.get((project, request_id))
        if taken:  # The same request again: its operation, nothing done.
          return 200, dict(self.operations[taken])
      if method == 'POST':
        status, payload = self._Insert(project, scope, collection, body or {})
      else:
        status, payload = self._Delete(key)
      if request_id is not None and status == 200:
        op_key = (project, scope, payload['name'])
        self._by_request_id[(project, request_id)] = op_key
        self.operations[op_key]['clientOperationId'] = request_id
        payload['clientOperationId'] = request_id
      return status, payload

  def _Insert(self, project, scope, collection, body):
    name = body.get('name')
    if not name:
      return _Error(400, 'Required field "name" is missing.', 'required')
    self._inserts[collection] += 1
    for hooked, nth, then in self._insert_hooks:
      if hooked == collection and nth == self._inserts[collection]:
        then()
    failure = self._FailureFor(collection)
    if failure and failure.then:
      failure.then()
    if failure and failure.mode == 'http':
      return _Error(failure.status, f'Injected failure of {collection} insert')
    key = (collection, project, scope, name)
    if key in self.resources or any(
        key == made for made, _ in self._pending.values()):
      return _Error(409, f'The resource {collection}/{name} already exists',
                    'alreadyExists')
    if failure:
      return 200, self._NewOperation(
          project, scope, 'insert', _SelfLink(project, scope, collection,
                                              name),
          error={'errors': [{'code': failure.code,
                             'message': f'Injected {failure.code}'}]})
    problem = self._MissingReference(project, collection, body)
    if problem:
      return _Error(400, problem, 'invalid')
    item = dict(body, id=str(next(self._ids)),
                selfLink=_SelfLink(project, scope, collection, name),
                creationTimestamp='2026-11-21T00:00:00.000-08:00')
    if scope != 'global':
      item[scope.split('/')[0][:-1]] = f'{API}/projects/{project}/{scope}'
    if collection == 'instances':
      self._StartInstance(item)
      if self.on_instance_insert:
        self.on_instance_insert(item)
    operation = self._NewOperation(project, scope, 'insert', item['selfLink'])
    op_key = (project, scope, operation['name'])
    if operation['status'] == 'DONE' or not self.visible_when_done:
      self.resources[key] = item
    else:
      self._pending[op_key] = (key, item)
    if operation['status'] != 'DONE':
      self._looks_left[op_key] = self.insert_looks
    return 200, operation

  def _StartInstance(self, item):
    n = next(self._addresses)
    for nic_index, nic in enumerate(item.get('networkInterfaces', [])):
      nic['name'] = f'nic{nic_index}'
      nic['networkIP'] = self._InternalAddress(nic.get('subnetwork'), n)
      for access in nic.get('accessConfigs', []):
        # Loopback, so even a stray SSH attempt never leaves this machine.
        access['natIP'] = f'{self.nat_prefix}.{n}'
    item['status'] = 'RUNNING'

  def _InternalAddress(self, subnetwork_url: Optional[str], n: int) -> str:
    """The nth address of the subnetwork's range, as GCE hands them out."""
    route = _Route('/compute/v1/' + subnetwork_url.split('/compute/v1/')[
        -1].lstrip('/')) if subnetwork_url else None
    subnet = route and self.resources.get(
        ('subnetworks', route['project'], route['scope'], route['name']))
    if not subnet or not subnet.get('ipCidrRange'):
      return f'10.128.0.{n}'
    return str(ipaddress.ip_network(subnet['ipCidrRange'])[n])

  def _MissingReference(self, project, collection, body) -> Optional[str]:
    """What a new resource names that does not exist (GCE refuses those)."""
    wanted = []
    if collection in ('firewalls', 'subnetworks'):
      wanted.append(body.get('network', ''))
    if collection == 'instances':
      for nic in body.get('networkInterfaces', []):
        wanted += [nic.get('network', ''), nic.get('subnetwork', '')]
      wanted += body.get('resourcePolicies', [])
    for url in filter(None, wanted):
      route = _Route('/compute/v1/' + url.split('/compute/v1/')[-1].lstrip(
          '/'))
      if route is None or (route['collection'], route['project'],
                           route['scope'], route['name']) not in self.resources:
        if not (route and route['collection'] == 'networks' and
                route['name'] == 'default'):
          return f'The resource {url} was not found'
    return None

  def _NextDeleteFailure(self, collection) -> Optional[_DeleteFailure]:
    """The failure the next delete in `collection` answers, taken."""
    script = self._delete_failures[collection]
    if not script:
      return None
    script[0][0] -= 1
    failure = script[0][1]
    if script[0][0] <= 0:
      script.pop(0)
    return failure

  def _Delete(self, key):
    collection, project, scope, name = key
    script = self._delete_failures[collection]
    failing = script[0][1] if script else None
    if failing and failing.mode == 'http':
      self._NextDeleteFailure(collection)
      return _Error(failing.status,
                    f'Injected failure of {collection} delete',
                    failing.reason)
    if key not in self.resources:
      return _NotFound(collection, name)
    user = self._UserOf(key)
    if user:
      return _Error(400, f'The {collection[:-1]} resource {name} is already '
                    f'being used by {user}',
                    'resourceInUseByAnotherResource')
    if failing:  # Taken, and its operation fails: the object stays.
      self._NextDeleteFailure(collection)
      code = failing.code
      return 200, self._NewOperation(
          project, scope, 'delete', self.resources[key]['selfLink'],
          error_when_done={'errors': [{'code': code,
                                       'message': f'Injected {code}'}]})
    item = self.resources.pop(key)
    if collection == 'instances' and self.on_instance_delete:
      self.on_instance_delete(item)
    return 200, self._NewOperation(project, scope, 'delete', item['selfLink'])

  def _UserOf(self, key) -> Optional[str]:
    collection, _, _, name = key
    suffix = f'/{collection}/{name}'
    for (other_collection, _, _, other_name), item in self.resources.items():
      refs = [item.get('network', '')] + list(item.get('resourcePolicies', []))
      for nic in item.get('networkInterfaces', []):
        refs += [nic.get('network', ''), nic.get('subnetwork', '')]
      if any(ref.endswith(suffix) for ref in refs if ref):
        return f'{other_collection}/{other_name}'
    return None

  def _FailureFor(self, collection) -> Optional[_Failure]:
    count = self._inserts[collection]
    for failure in self._failures:
      if failure.collection == collection and (
          count == failure.nth or (failure.persistent and count > failure.nth)):
        return failure
    return None

  def _NewOperation(self, project, scope, kind, target, error=None,
                    error_when_done=None):
    """An operation; with `error`, DONE with it at once; with
    `error_when_done`, it ends with that error (at once when
    operations_done)."""
    if error_when_done and self.operations_done:
      error, error_when_done = error_when_done, None
    name = f'operation-{next(self._ids)}'
    operation = {
        'kind': 'compute#operation', 'id': name.split('-')[1], 'name': name,
        'operationType': kind, 'targetLink': target,
        'status': ('DONE' if self.operations_done or error else 'RUNNING'),
        'progress': 100 if self.operations_done or error else 0,
        'selfLink': _SelfLink(project, scope, 'operations', name),
    }
    if scope != 'global':
      operation[scope.split('/')[0][:-1]] = f'{API}/projects/{project}/{scope}'
    if error:
      operation['error'] = error
      operation['httpErrorStatusCode'] = 403
    self.operations[(project, scope, name)] = operation
    if error_when_done:
      self._errors_when_done[(project, scope, name)] = error_when_done
    return dict(operation)

  def _Operation(self, project, scope, name):
    op_key = (project, scope, name)
    operation = self.operations.get(op_key)
    if operation is None:
      return _NotFound('operations', name)
    self._looks_left[op_key] = self._looks_left.get(op_key, 1) - 1
    if self._looks_left[op_key] <= 0:
      operation['status'] = 'DONE'
      operation['progress'] = 100
      if op_key in self._errors_when_done:
        operation['error'] = self._errors_when_done.pop(op_key)
        operation['httpErrorStatusCode'] = 400
      if op_key in self._pending:
        key, item = self._pending.pop(op_key)
        self.resources[key] = item
    return 200, dict(operation)

  def _ListOperations(self, project, scope, query):
    """The operations where they live (zone, region, global) whose
    clientOperationId the filter names, as they are now (no look); the
    only filter the fake reads is one AIP-160 comparison of it."""
    wanted = re.fullmatch(r'clientOperationId\s*=\s*"([^"]*)"',
                          urllib.parse.parse_qs(query).get('filter', [''])[0])
    if not wanted:
      return _Error(400, 'The fake lists operations by clientOperationId '
                    'only', 'invalid')
    return 200, {
        'kind': 'compute#operationList',
        'selfLink': _SelfLink(project, scope, 'operations', '').rstrip('/'),
        'items': [dict(operation) for (p, s, _), operation
                  in self.operations.items() if (p, s) == (project, scope)
                  and operation.get('clientOperationId') == wanted[1]]}

  def _ImageFromFamily(self, project, family):
    if family in self.missing_families:
      return _NotFound('images', f'family/{family}')
    name = f'{family}-v20261101'
    return 200, {'kind': 'compute#image', 'name': name, 'family': family,
                 'status': 'READY',
                 'selfLink': _SelfLink(project, 'global', 'images', name)}

  def _MachineType(self, project, scope, name):
    match = re.fullmatch(r'[a-z0-9]+-(standard|highmem|highcpu)-(\d+)',
                         name or '')
    if not match:
      return _NotFound('machineTypes', name)
    cpus = int(match.group(2))
    return 200, {'kind': 'compute#machineType', 'name': name,
                 'guestCpus': cpus,
                 'memoryMb': cpus * _MEMORY_PER_CPU_MB[match.group(1)],
                 'selfLink': _SelfLink(project, scope, 'machineTypes', name)}


def RuleAdmits(ports, port: int) -> bool:
  """Whether a firewall rule's ports ('22', '7001-65535') hold `port`, as
  GCE reads them."""
  for item in ports:
    low, _, high = item.partition('-')
    if int(low) <= port <= int(high or low):
      return True
  return False


def _Route(path: str) -> Optional[Dict[str, str]]:
  match = _PATH.fullmatch(path)
  return match.groupdict() if match else None


def _IsRequestId(text: str) -> bool:
  """Whether GCE takes `text` as a requestId: a UUID, not the zero one."""
  try:
    return uuid.UUID(text).int != 0 and len(text) == 36
  except ValueError:
    return False


def _SelfLink(project, scope, collection, name) -> str:
  return f'{API}/projects/{project}/{scope}/{collection}/{name}'


def _Error(status: int, message: str, reason: str = 'backendError'):
  return status, {'error': {'code': status, 'message': message,
                            'errors': [{'message': message, 'domain': 'global',
                                        'reason': reason}]}}


def _NotFound(collection, name):
  return _Error(404, f'The resource \'{collection}/{name}\' was not found',
                'notFound')
