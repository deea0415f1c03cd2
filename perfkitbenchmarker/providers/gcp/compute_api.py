"""Compute Engine API access: clients, operations, errors, one resource shape.

Every GCP object a run creates is a `GceResource`: an insert call, a delete
call and a get call, each returning a long-running Operation that is waited
on through the zone, region or global operations service before the resource
counts as created or deleted. Extension seam: a new kind of Compute object
subclasses `GceResource` (or `RegionalResource`), names its client and
parameter (CLIENT, PARAM), builds its body in `_Body`, declares what else its
constructor takes from the record in `Fields`, and registers `FromRecord`
with `resource.RegisterKind`.

An insert's operation is recorded (`pending_insert`) before it is waited
on, and a stop of the run (a signal, the deadline) ends that wait: the run
is being torn down, and a thread waiting up to OPERATION_TIMEOUT_S would be
a straggler teardown waits out. Teardown's delete then waits (bounded) for
that insert first (or for one GCE never answered, found by its request_id:
below): deleting an object GCE is still inserting fails
(resourceNotReady) or does not find it yet (a 404, taken for "already
gone"), and it would be left behind. A delete's own wait is teardown's and
ignores the stop. A delete GCE refuses as not ready (resourceNotReady: the
object is still being created, or another operation on it runs), as the
call's HTTP 400 or as its operation's error (RESOURCE_NOT_READY), is sent
again after NOT_READY_PAUSE_S; one refused with a transient error (a 5xx, a
429, a lost connection, a retryable operation error) after 1, 2, 4 .. 30 s.
Both share one budget, DELETE_BUDGET_S from the first send (resource._Retry
sends none again on top), and the pauses go through waits.Pause, none
ending past the budget. Still refused at its end, or a stop since the delete
began, it fails in one line naming the object and the run's teardown
command. Teardown's worst case for one object is therefore the lookup of an
insert never answered, the wait for its insert, DELETE_BUDGET_S of sends,
and the wait on the operation of the last one sent; an operation's wait
ends at the first answer past OPERATION_TIMEOUT_S (a `wait` call is held up
to about two minutes, and one answered with a transient error is sent again
at most READ_ATTEMPTS times, none after OPERATION_TIMEOUT_S).

Every call goes out once (retry=None): the client library's own retry of a
get (503s and deadline errors, up to 600 s, sleeping on the real clock) is
one no stop can end. A read is tried again by `Read` instead: bounded, its
pauses through waits.Pause, none after the run's stop. An operation's
`wait` answered with a transient error (a 5xx, a 429, a lost connection)
is such a read: the same operation is waited on again, and only its own end
says whether the insert or delete was done; the insert or delete is not
sent again over it.

Every insert and delete carries a request_id (a UUID this side chooses):
GCE, given a request_id it already took, ignores the request and answers
with the first one's operation (whose clientOperationId is the request_id),
for a while (the API reference states no window; a run's sends again come
within minutes, a later teardown's may not: see below). One is chosen per
insert or delete and kept for every send of it until GCE answers it for
good: an operation, whose end is then its outcome, or a refusal (a 4xx). A
send not answered in time, or answered with a transient error (a 5xx, a 429,
a connection lost after it was sent), is sent again with the same
request_id, through the same bounded, stop-aware retries as any transient
error (resource._Retry for an insert, _Delete's budget for a delete), and
the operation it returns is waited on: an insert so sent twice makes one
object, and a delete sent twice is not answered with a 404 taken for "gone"
while the first one's operation may still fail. Once GCE has answered for
good, the request_id is done with: a send after that (over an operation that
ended in a retryable error, or a delete refused as not ready) is a new
request with a new request_id, as the old one would only bring back the old
operation. A 409 to an insert or a 404 to a delete therefore means the name
was made or removed by a request other than this one (or one GCE no longer
remembers): as before, it is taken for done, names being scoped by the run.
A delete's request_id is in the run record from before it is first sent
until its operation's end is seen or GCE refuses it, so a later teardown
(after a stop cut this one short) sends it again and waits on the first
delete's operation while GCE still knows it, or deletes anew when it does
not. An insert's is recorded too, from before its first send until the
resource is marked created, but teardown never sends it (a request_id GCE
no longer remembers would make the object anew): an insert GCE never
answered with its operation (no pending_insert: the stop came during its
call or the pause before its next send) is looked up by it. GCE lists the
operation a mutating call makes among its zone's, region's or the global
operations from the call on, a done one for at least an hour (the
documented retention: one hour to 14 days), its clientOperationId being
the call's request_id: the list's filter `clientOperationId =
"<request_id>"` (AIP-160) finds it, and it is waited for as a pending
insert. None listed, GCE never took the insert, or it ended over an hour
ago and what it made is there for the delete: a 404 then means gone
(without the lookup, a delete sent while GCE still made the object was
answered 404, taken for gone, and the object left). A lookup that fails (a
read, as above) fails the delete, the entry left for the teardown command.
A wait for the insert that ends without seeing it done (OPERATION_TIMEOUT_S
passed, or its reads failed) leaves the delete sent all the same, and one
GCE answers with an operation is waited on as ever; but a 404 to it (or its
operation's RESOURCE_NOT_FOUND) is not taken for "gone", GCE maybe still
making the object (which then appeared, left running): the delete fails,
the entry left live, its line naming the teardown command to run again
later. An insert's operation GCE no longer knows (a 404 to its `wait`)
ended over an hour ago: seen done.
An insert GCE takes only after teardown's lookup (held within GCE past its
call's timeout) is beyond what the API shows.

Every call also goes out with an explicit timeout (the library's default is
600 s, which no stop ends either): ComputeClients.call_timeout_s
(CALL_TIMEOUT_S, 60 s) for an insert, a delete or a get, and
wait_timeout_s (WAIT_CALL_TIMEOUT_S, 150 s) for an operation's `wait`,
which the server itself holds up to about two minutes. It bounds connecting
and each wait for the answer's next bytes, so an endpoint that accepts a
call and never answers, or answers its headers and stalls, ends it that long
after the stall (one that trickles bytes is bounded per read only). A call
so unanswered (NoAnswerError) is a transient error: a read or a `wait` goes
through `Read` again like a 503, and an insert or delete is sent again
with its request_id as above. A stop cannot cut a call in flight, so a stop
during a stalled call ends it at its timeout, and no call follows (Read,
_Delete and resource._Retry look at the stop first).

Worst cases, with T = CALL_TIMEOUT_S and W = WAIT_CALL_TIMEOUT_S (and the
pauses of READ_ATTEMPTS tries, 1 + 2 + 4 + 8 + 16 + 30 + 30 = 91 s):
  * one call: T (a `wait`: W) after the endpoint last sent anything;
  * one read (`Read`): READ_ATTEMPTS x T + 91 s = 571 s;
  * one operation's wait (`WaitForOperation`): its last `wait`, a first
    one or one sent again over a transient error, starts no later than
    OPERATION_TIMEOUT_S (no pause ends past it): 900 + 150 = 1050 s;
  * a resource's create (GceResource: its insert and the insert's
    operation): resource._Retry sends the insert at most CREATE_RETRIES
    times, again only over a transient error (the call's, no answer to it,
    or the operation's end), each T plus its operation's wait, pausing 1
    and 2 s: 3 x (60 + 1050) + 3 = 3333 s; a kind's readiness check comes
    on top (a VM's: gets for resource.READY_TIMEOUT_S, the last one a read
    of up to 571 s). A stop ends it within W + 1 s (the `wait` in flight, then a
    pause step);
  * a resource's delete: the lookup of an insert never answered (a read:
    571 s), the wait for its insert (1050 s), sends for DELETE_BUDGET_S
    (300 s), and the last one's call and operation's wait (60 + 1050 s):
    3031 s.

The clients are built once per run by `ComputeClients.Create` and handed to
every resource through its constructor (a teardown from the record: once
per endpoint, `ForTeardown`), so tests point them at a local fake
endpoint. The endpoint goes into the run record, so a later teardown talks to
the same API the run created things in.
"""

import dataclasses
import importlib.util
import logging
import re
import time
from typing import Annotated, Any, Callable, Dict, Optional, Tuple, Type
import urllib.parse
import uuid

from google.api_core import client_options as client_options_lib
from google.api_core import exceptions as api_exceptions
import google.auth
from google.auth import credentials as auth_credentials
from google.auth import exceptions as auth_exceptions
import pydantic
import requests
import tenacity
from urllib3 import exceptions as urllib3_exceptions

from perfkitbenchmarker import errors
from perfkitbenchmarker import record_checks
from perfkitbenchmarker import resource
from perfkitbenchmarker import vm_util
from perfkitbenchmarker import waits

OPERATION_TIMEOUT_S = 900
# Each call's timeout (module docstring): an insert, a delete or a get; an
# operation's `wait`, which the server holds up to about two minutes.
CALL_TIMEOUT_S = 60
WAIT_CALL_TIMEOUT_S = 150
CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform'
# Operation error codes after which the same request may well succeed.
RETRYABLE_OPERATION_ERRORS = frozenset({
    'RESOURCE_OPERATION_RATE_EXCEEDED', 'RATE_LIMIT_EXCEEDED',
    'INTERNAL_ERROR', 'SERVICE_UNAVAILABLE', 'RESOURCE_NOT_READY',
})
# A delete refused as not ready is sent again after this pause; one refused
# as not ready or with a transient error is sent again until this long after
# the first was sent (module docstring).
NOT_READY_PAUSE_S = 10
DELETE_BUDGET_S = 300
# The longest pause before a delete sent again over a transient error.
TRANSIENT_PAUSE_MAX_S = 30
NOT_READY_REASON = 'resourceNotReady'
# The same refusal as an operation's error code.
NOT_READY_CODE = 'RESOURCE_NOT_READY'
# A read (a get) is tried this often over transient errors (a 5xx, a 429, a
# lost connection), pausing 1, 2, 4, 8, 16, 30, 30 s between the tries.
READ_ATTEMPTS = 8
STOCKOUT_ERRORS = frozenset({
    'ZONE_RESOURCE_POOL_EXHAUSTED', 'ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS',
})


PACKAGE_NEEDED = ('--cloud=GCP needs the Python package google-cloud-compute; '
                  'run ./scripts/setup.sh.')


def ComputeV1():
  """google.cloud.compute_v1, imported at its first use.

  It takes 2 s of CPU to import (a hundred service clients), which a plan, a
  dry run or a refusal, never calling the API, need not pay: the clients and
  the request bodies get it here when they are made.
  """
  try:
    from google.cloud import compute_v1  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise errors.PrerequisiteError(PACKAGE_NEEDED) from None
  return compute_v1


def CheckInstalled() -> None:
  """Refuses a GCP run or plan on a machine without the Compute client,
  before anything starts, without importing it (ComputeV1)."""
  try:
    found = importlib.util.find_spec('google.cloud.compute_v1') is not None
  except ImportError:  # No google.cloud package at all.
    found = False
  if not found:
    raise errors.PrerequisiteError(PACKAGE_NEEDED)


def LastSegment(url: str) -> str:
  """'https://.../zones/us-central1-a' -> 'us-central1-a'."""
  return url.rstrip('/').rsplit('/', 1)[-1] if url else ''


def EndpointProblem(endpoint: Optional[str]) -> Optional[str]:
  """Why the run's Google credentials must not go to `endpoint`, or None.

  Only a Google API host (https, *.googleapis.com) gets them; a loopback one
  (a local fake) gets none. The endpoint is recorded and used again at
  teardown: a record naming another host would hand it the access token.
  """
  if not endpoint or vm_util.IsLoopbackEndpoint(endpoint):
    return None
  try:
    parts = urllib.parse.urlsplit(
        endpoint if '//' in endpoint else f'https://{endpoint}')
    parts.port  # pylint: disable=pointless-statement
  except ValueError as e:  # 'Invalid IPv6 URL', 'Port out of range ...'
    return f'{endpoint[:100]!r} is not a URL ({e})'
  host = parts.hostname or ''
  if parts.scheme == 'https' and (host == 'googleapis.com' or
                                  host.endswith('.googleapis.com')):
    return None
  return (f'{endpoint[:100]!r} is neither https on *.googleapis.com nor on '
          "this machine (loopback); the run's Google credentials go only to "
          'Google')


# A run record's Compute API endpoint.
Endpoint = record_checks.Checked(EndpointProblem)

# A project id (domain-scoped ones hold '.' and ':'): nothing an API call's
# path would read otherwise ('/', a space, '?').
_PROJECT = re.compile(r'[A-Za-z0-9][A-Za-z0-9.:_-]{0,99}')


def ProjectProblem(project: str) -> Optional[str]:
  """Why `project` cannot be a GCP project id, or None."""
  if _PROJECT.fullmatch(project or ''):
    return None
  return (f'{vm_util.Printable(repr(project))[:80]} is not a GCP project id '
          '(letters, digits, - . : _)')


# A run record's project (every call's path holds it).
Project = record_checks.Checked(ProjectProblem)

# A run record's operation name (a call's path holds it too): GCE's are
# 'operation-<digits>-<hex>-...'.
OperationName = Annotated[
    str, pydantic.Field(pattern=r'^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$')]

# A run record's request_id of an insert or a delete (module docstring): a
# UUID, as GCE takes them.
RequestId = Annotated[str, pydantic.Field(
    pattern=r'^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$')]


def NewRequestId() -> str:
  """A request_id for one insert or delete (module docstring)."""
  return str(uuid.uuid4())


# ComputeClients' fields that hold no client.
_SETTINGS = frozenset({'endpoint', 'call_timeout_s', 'wait_timeout_s'})


@dataclasses.dataclass(frozen=True)
class ComputeClients:
  """The Compute API clients one run uses, all on the same endpoint; each
  field holds compute_v1's client of its name (instances: InstancesClient)."""
  instances: Any
  firewalls: Any
  networks: Any
  subnetworks: Any
  resource_policies: Any
  images: Any
  machine_types: Any
  zone_operations: Any
  region_operations: Any
  global_operations: Any
  endpoint: Optional[str] = None
  # Each call's timeout, and an operation `wait`'s (module docstring).
  call_timeout_s: float = CALL_TIMEOUT_S
  wait_timeout_s: float = WAIT_CALL_TIMEOUT_S

  @classmethod
  def Create(cls, endpoint: Optional[str] = None, credentials=None,
             call_timeout_s: float = CALL_TIMEOUT_S,
             wait_timeout_s: float = WAIT_CALL_TIMEOUT_S
             ) -> 'ComputeClients':
    """REST clients for `endpoint` (default: the public Compute API).

    A loopback endpoint is a local fake or proxy: it gets anonymous
    credentials, so real ones are never sent over plain HTTP. Anything else
    uses the google-auth default credentials unless `credentials` is given.
    The timeouts are every call's (tests make them short).
    """
    compute_v1 = ComputeV1()
    options = (client_options_lib.ClientOptions(api_endpoint=endpoint)
               if endpoint else None)
    try:
      if credentials is None and vm_util.IsLoopbackEndpoint(endpoint):
        credentials = auth_credentials.AnonymousCredentials()
      elif credentials is None:
        # Looked up once for all clients rather than once per client.
        credentials, _ = google.auth.default(scopes=[CLOUD_PLATFORM_SCOPE])
      services = {
          field.name: getattr(compute_v1, field.name.title().replace('_', '')
                              + 'Client')(
              credentials=credentials, client_options=options,
              transport='rest')
          for field in dataclasses.fields(cls)
          if field.name not in _SETTINGS}
      return cls(endpoint=endpoint, call_timeout_s=call_timeout_s,
                 wait_timeout_s=wait_timeout_s, **services)
    except (auth_exceptions.DefaultCredentialsError, RecursionError) as e:
      # google-auth's first argument says which file it found and why it
      # cannot use it (the rest may quote the file); a JSON nested past
      # Python's limit is the one error it lets through.
      reason = 'a credentials file nested too deeply to read'
      if isinstance(e, auth_exceptions.DefaultCredentialsError) and e.args:
        reason = e.args[0]
      raise errors.PrerequisiteError(
          f'--cloud=GCP has no usable Google credentials '
          f'({vm_util.Printable(str(reason))[:300]}); run "gcloud auth '
          'application-default login" or set GOOGLE_APPLICATION_CREDENTIALS '
          'to a valid key file.') from None

  @classmethod
  def ForTeardown(cls, endpoint: Optional[str]) -> 'ComputeClients':
    """Create(endpoint), once per endpoint for a teardown from the record
    (resource.TeardownShared), not for every entry."""
    return resource.TeardownShared((cls, endpoint),
                                   lambda: cls.Create(endpoint))


# Errors ----------------------------------------------------------------------


class NotReadyError(errors.ResourceError):
  """GCE refused a call as the object is not ready (NOT_READY_REASON), or a
  delete's operation ended so (NOT_READY_CODE)."""


class NoAnswerError(resource.RetryableError):
  """A call was sent and not answered within its timeout: GCE may have
  taken it (module docstring)."""


class OperationError(errors.ResourceError):
  """A Compute operation finished with an error."""

  def __init__(self, code: str, message: str):
    super().__init__(f'{code}: {message}')
    self.code = code


def Call(what: str, function: Callable[..., Any], *args, timeout: float,
         passthrough: Tuple[Type[Exception], ...] = (), **kwargs) -> Any:
  """Calls the API, mapping its errors to retryable or one-line errors.

  Exceptions in `passthrough` (e.g. NotFound for a get) reach the caller,
  which knows what they mean there. The call goes out once (module
  docstring): a retry is the caller's. One sent and not answered within
  `timeout` seconds raises NoAnswerError.
  """
  try:
    return function(*args, retry=None, timeout=timeout, **kwargs)
  except passthrough:
    raise
  except (requests.exceptions.Timeout,
          requests.exceptions.ConnectionError) as e:
    if _Unanswered(e):
      raise NoAnswerError(f'{what}: no answer within {timeout:g}s') from None
    raise resource.RetryableError(f'{what}: {_Message(e)}') from None
  except (api_exceptions.TooManyRequests, api_exceptions.ServerError) as e:
    raise resource.RetryableError(f'{what}: {_Message(e)}') from None
  except api_exceptions.Forbidden as e:
    raise errors.ResourceError(
        f'{what}: {_Message(e)} (check --project, that the Compute Engine API '
        'is enabled there and that your account may use it)') from None
  except api_exceptions.GoogleAPICallError as e:
    error = (NotReadyError if NOT_READY_REASON in _Reasons(e)
             else errors.ResourceError)
    raise error(f'{what}: {_Message(e)}') from None


def Read(what: str, function: Callable[..., Any], *args, timeout: float,
         sleep: Callable[[float], None] = time.sleep,
         passthrough: Tuple[Type[Exception], ...] = (),
         attempts: int = READ_ATTEMPTS, deadline: Optional[float] = None,
         clock: Callable[[], float] = time.monotonic, **kwargs) -> Any:
  """Call() of a read (a get), tried again over transient errors (a call
  not answered within `timeout` among them), at most `attempts` times and
  none after `deadline` (on `clock`), when given (resource.RetriedRead:
  its pauses on `sleep`, the caller's; a stop ends the read within a pause
  step, or at the end of the call in flight)."""
  return resource.RetriedRead(
      what, lambda: Call(what, function, *args, timeout=timeout,
                         passthrough=passthrough, **kwargs), attempts, sleep,
      deadline, clock)


def _Unanswered(e: requests.exceptions.RequestException) -> bool:
  """Whether `e` is a call sent and not answered in time: no answer (a
  ReadTimeout) or its body stalled (a ConnectionError of urllib3's read
  timeout); not a connection never made (ConnectTimeout)."""
  if isinstance(e, requests.exceptions.ConnectTimeout):
    return False
  return isinstance(e, requests.exceptions.ReadTimeout) or any(
      isinstance(arg, urllib3_exceptions.ReadTimeoutError) for arg in e.args)


def _Message(e: Exception) -> str:
  return getattr(e, 'message', None) or str(e)


def _Reasons(e: api_exceptions.GoogleAPICallError) -> set:
  """The error's reasons: GCE's JSON names them in error.errors[].reason
  (an ErrorInfo detail, where given, in e.reason)."""
  return {item.get('reason') for item in (e.errors or ())
          if isinstance(item, dict)} | {e.reason}


def _Operations(clients: ComputeClients, zone: str = '', region: str = ''
                ) -> Tuple[Any, Dict[str, str]]:
  """The operations service where an operation lives (its zone's, its
  region's or the global one) and the argument naming where."""
  if zone:
    return clients.zone_operations, {'zone': LastSegment(zone)}
  if region:
    return clients.region_operations, {'region': LastSegment(region)}
  return clients.global_operations, {}


def WaitForOperation(clients: ComputeClients, project: str, operation,
                     timeout_s: float = OPERATION_TIMEOUT_S,
                     clock: Callable[[], float] = time.monotonic,
                     sleep: Callable[[float], None] = time.sleep,
                     stopped: Optional[Callable[[], bool]] = None,
                     passthrough: Tuple[Type[Exception], ...] = ()):
  """Waits until `operation` is DONE; raises OperationError if it failed.

  Uses the operations' `wait` method (the server holds the call until the
  operation is done or about two minutes pass; each call's timeout is
  clients.wait_timeout_s, above that), on the service that matches where
  the operation lives: zone, region or global. A `wait` answered with a
  transient error, or not answered in time, is sent again for the same
  operation through `Read` (bounded, its pauses on `sleep`, none after a
  stop since that call began), never ending the wait with a retryable error
  (module docstring); none is sent after the deadline, timeout_s from now.
  Once `stopped()` (a waits.RunStopped: the run's stop) no further call is
  made: a ResourceError says the operation was not waited for. A `wait`'s
  error in `passthrough` reaches the caller (Call).
  """
  done = ComputeV1().Operation.Status.DONE
  deadline = clock() + timeout_s
  service, where = _Operations(clients, operation.zone, operation.region)
  what = (f'Waiting for operation {operation.name} ({operation.operation_type}'
          f' {LastSegment(operation.target_link)})')

  def Waited():
    nonlocal operation
    if stopped is not None and stopped():
      raise errors.ResourceError(
          f'Operation {operation.name} ({operation.operation_type} '
          f'{LastSegment(operation.target_link)}) not waited for: the run '
          'was stopped')
    operation = Read(what, service.wait, project=project,
                     operation=operation.name, sleep=sleep,
                     timeout=clients.wait_timeout_s, deadline=deadline,
                     clock=clock, passthrough=passthrough, **where)
    return operation.status == done

  # No pause between calls: each `wait` is held by the server.
  if operation.status != done and not waits.Poll(
      Waited, bool, timeout_s, 0, clock, time.sleep)[0]:
    raise errors.ResourceError(
        f'Operation {operation.name} ({operation.operation_type} '
        f'{LastSegment(operation.target_link)}) was not done after '
        f'{timeout_s:.0f}s.')
  if operation.error.errors:
    first = operation.error.errors[0]
    raise OperationError(
        first.code, '; '.join(e.message for e in operation.error.errors))
  return operation


# The shared resource shape ---------------------------------------------------


class GceResource(resource.BaseResource):
  """A Compute object created by an insert and removed by a delete.

  An insert or delete sent again carries its first send's request_id
  (module docstring); names are scoped by run_uri, so an insert that finds
  the name taken anyway (409) takes the object for ours.
  """

  KIND = 'gcp_resource'

  def __init__(self, name: str, clients: ComputeClients, project: str,
               **kwargs):
    super().__init__(name, **kwargs)
    self.clients = clients
    self.project = project
    # The insert operation sent and not yet seen done (module docstring).
    self.pending_insert: Optional[str] = None
    # The request_id of the insert, and of the delete, being sent
    # (recorded): kept over sends until GCE answers it for good (module
    # docstring).
    self.insert_request_id: Optional[str] = None
    self.delete_request_id: Optional[str] = None

  # The kind's API: clients.<CLIENT>'s insert_unary, get and delete_unary,
  # naming the object by the <PARAM> argument and its body <PARAM>_resource.
  CLIENT = PARAM = ''

  def _Where(self) -> Dict[str, str]:
    """Where the object lives: the project (and a subclass's zone/region)."""
    return {'project': self.project}

  def _Body(self):
    """The insert call's body."""
    raise NotImplementedError

  def _ApiCall(self, method: str, request: Optional[Dict[str, Any]] = None,
               **kwargs):
    """clients.<CLIENT>.<method> where the object lives; `request`, when
    given, is the call's fields as one request (a request_id is no
    argument of its own)."""
    function = getattr(getattr(self.clients, self.CLIENT), method)
    if request is None:
      return function(**self._Where(), **kwargs)
    return function(request=dict(self._Where(), **request), **kwargs)

  def _CreateFailureHint(self, error: OperationError) -> str:
    del error
    return ''

  # BaseResource hooks ---------------------------------------------------------

  def _RequestId(self, inserting: bool) -> str:
    """The request_id of the insert or delete being sent: its first send's,
    recorded before it is first sent (module docstring)."""
    field = 'insert_request_id' if inserting else 'delete_request_id'
    if getattr(self, field) is None:
      self.Remember(**{field: NewRequestId()})
    return getattr(self, field)

  def _Answered(self, inserting: bool) -> None:
    """GCE answered the request for good: a send after this is a new one,
    with a new request_id (module docstring). An insert's leaves the record
    as the resource is marked created (RecordData), as pending_insert."""
    if inserting:
      self.insert_request_id = None
    elif self.delete_request_id is not None:
      self.Remember(delete_request_id=None)

  def _Operate(self, what: str, method: str, passed: Type[Exception],
               done_code: str, **kwargs) -> bool:
    """Calls insert or delete and waits; `passed` (the call's error) and
    `done_code` (the operation's) mean it was already done: then True. The call
    carries the request's request_id, the same over every send of it; an
    insert's wait ends at the run's stop (module docstring)."""
    inserting = method == 'insert_unary'
    # Made before the call: a stop while it is sent ends the wait too.
    stopped = waits.RunStopped() if inserting else None
    request = dict(kwargs, request_id=self._RequestId(inserting))
    try:
      operation = Call(what, self._ApiCall, method, passthrough=(passed,),
                       timeout=self.clients.call_timeout_s, request=request)
    except passed:
      # Not an answer to this request_id, which would be its operation:
      # the object was made or removed otherwise (module docstring).
      self._Answered(inserting)
      logging.info('%s: already done (an earlier attempt did it).', what)
      return True
    except resource.RetryableError:
      # No answer (NoAnswerError), a transient one or a connection lost:
      # GCE may have taken it. The caller's retries (resource._Retry,
      # _Delete) send it again with the same request_id, and GCE answers
      # that with the first one's operation if it took it.
      raise
    except Exception:  # A refusal: the request is done with.
      self._Answered(inserting)
      raise
    if inserting:
      self.Remember(pending_insert=operation.name)
    try:
      WaitForOperation(self.clients, self.project, operation,
                       clock=self._clock, sleep=self._sleep, stopped=stopped)
    except OperationError as e:
      self._Answered(inserting)  # Its end is seen.
      if inserting:
        # Done, with an error: not pending for teardown, which would wait
        # on it and not look up an insert sent after it, never answered.
        self.Remember(pending_insert=None)
      if e.code == done_code:
        return True
      if e.code == NOT_READY_CODE and not inserting:
        # As the call's 400: the delete's own not-ready retries (_Delete).
        raise NotReadyError(f'{what}: {e}') from None
      if e.code in RETRYABLE_OPERATION_ERRORS:
        raise resource.RetryableError(f'{what}: {e}') from None
      hint = self._CreateFailureHint(e) if inserting else ''
      raise errors.ResourceError(f'{what} failed: {e}{hint}') from None
    # Done: the record's entry drops it as the resource is marked created
    # (RecordData).
    self._Answered(inserting)
    self.pending_insert = None
    return False

  def _AwaitInsert(self) -> Optional[str]:
    """Waits (bounded, and through a stop: this is teardown) for an insert
    whose wait was cut short (pending_insert) or that GCE never answered
    (found by its request_id), so the delete finds what it made. Returns
    why it was not seen done (its wait's error), or None (module
    docstring)."""
    where = {key: value for key, value in self._Where().items()
             if key in ('zone', 'region')}
    if self.pending_insert:
      operation = ComputeV1().Operation(
          name=self.pending_insert, operation_type='insert',
          target_link=self.name, **where)
    else:
      operation = self._UnansweredInsert(where)
      if operation is None:  # GCE never took it: nothing to wait for.
        return None
    unseen = None
    try:
      WaitForOperation(self.clients, self.project, operation,
                       clock=self._clock, sleep=self._sleep,
                       passthrough=(api_exceptions.NotFound,))
    except (OperationError, api_exceptions.NotFound):
      pass  # Done, with an error, or so long ago GCE no longer knows it.
    except errors.Error as e:  # Not done in time, or its reads failed.
      unseen = str(e)
      logging.info('%s %s: its insert %s: %s; deleting it now.', self.KIND,
                   self.name, operation.name, e)
    self.pending_insert = None
    return unseen

  def _UnansweredInsert(self, where: Dict[str, str]):
    """The operation of the insert GCE never answered (insert_request_id),
    as GCE lists it by its clientOperationId, or None: none listed (module
    docstring). A lookup that fails fails the delete: a 404 to it would
    not say the object is gone."""
    service, where = _Operations(self.clients, **where)
    what = f'Looking up the insert of {self.KIND} {self.name} by its request_id'
    try:
      # One page (500 operations): at most one holds this request_id.
      listed = Read(what, service.list, sleep=self._sleep,
                    timeout=self.clients.call_timeout_s, request=dict(
                        where, project=self.project, filter=(
                            f'clientOperationId = "{self.insert_request_id}"'
                        ))).items
    except errors.ResourceError as e:
      raise errors.ResourceError(
          f'{e}: not deleted, as it may still be made: run '
          f'`{self.TeardownCommand()}` again') from None
    return next((operation for operation in listed
                 if operation.client_operation_id == self.insert_request_id),
                None)

  def _Create(self) -> None:
    self._Operate(f'Creating {self.KIND} {self.name}', 'insert_unary',
                  api_exceptions.Conflict, 'RESOURCE_ALREADY_EXISTS',
                  **{f'{self.PARAM}_resource': self._Body()})

  def _Delete(self) -> None:
    """Sends the delete until it is taken, GCE refuses it otherwise, the
    budget is spent or the run stopped (module docstring). It never raises
    a RetryableError: resource._Retry does not send it again on top."""
    unseen = None
    if self.pending_insert or self.insert_request_id:
      unseen = self._AwaitInsert()
    what = f'Deleting {self.KIND} {self.name}'
    deadline = self._clock() + DELETE_BUDGET_S
    transient = [0]  # Transient errors so far: their pauses grow.

    def Send() -> None:
      try:
        gone = self._Operate(what, 'delete_unary', api_exceptions.NotFound,
                             'RESOURCE_NOT_FOUND', **{self.PARAM: self.name})
      except resource.RetryableError:
        transient[0] += 1
        raise
      if gone and unseen:  # GCE may still be making it (module docstring).
        raise errors.ResourceError(
            f'{what}: not found, and its insert was not seen done '
            f'({unseen}): not deleted, as it may still be made: run '
            f'`{self.TeardownCommand()}` again later')

    def Pause(state: tenacity.RetryCallState) -> float:
      # Retried ends none past the budget: the last send goes at its end.
      if isinstance(state.outcome.exception(), NotReadyError):
        return NOT_READY_PAUSE_S
      return min(2 ** (transient[0] - 1), TRANSIENT_PAUSE_MAX_S)

    def Warn(error: Exception, pause: float) -> None:
      logging.warning('%s (trying again in %.0fs)', error, pause)

    # Teardown's: a stop since the delete began ends it (the run's own stop
    # came before teardown).
    try:
      resource.Retried(
          Send, self._sleep, Warn,
          deadline=deadline, clock=self._clock,
          wait=Pause, retry_on=(NotReadyError, resource.RetryableError))
    except resource.GaveUp as e:
      refused = e.last or what  # A stop as it began: no try.
      if e.stopped:
        raise errors.ResourceError(
            f'{refused}; not tried again, the run being stopped: run '
            f'`{self.TeardownCommand()}` to delete it') from None
      still = ('still refused as not ready'
               if isinstance(refused, NotReadyError) else 'still failing')
      raise errors.ResourceError(
          f'{refused}; {still} after {DELETE_BUDGET_S}s: run '
          f'`{self.TeardownCommand()}` again later') from None

  def Get(self):
    """The object; raises NotFound when it does not exist."""
    return Read(f'Looking up {self.KIND} {self.name}', self._ApiCall, 'get',
                sleep=self._sleep, passthrough=(api_exceptions.NotFound,),
                timeout=self.clients.call_timeout_s,
                **{self.PARAM: self.name})

  def RecordData(self) -> Dict[str, Any]:
    return {'project': self.project, 'api_endpoint': self.clients.endpoint,
            'pending_insert': self.pending_insert,
            'insert_request_id': self.insert_request_id,
            'delete_request_id': self.delete_request_id}

  class Fields(record_checks.Fields):
    project: Project
    api_endpoint: Optional[Endpoint] = None
    pending_insert: Optional[OperationName] = None
    insert_request_id: Optional[RequestId] = None
    delete_request_id: Optional[RequestId] = None

  @classmethod
  def FromRecord(cls, entry, record) -> 'GceResource':
    """Rebuilds the object for teardown (deleting works, creating not)."""
    fields = record_checks.Parse(cls.Fields, entry, record)
    res = cls(entry['name'], ComputeClients.ForTeardown(fields.api_endpoint),
              **fields.model_dump(exclude={'api_endpoint', 'pending_insert',
                                           'insert_request_id',
                                           'delete_request_id'}))
    res.pending_insert = fields.pending_insert
    res.insert_request_id = fields.insert_request_id
    res.delete_request_id = fields.delete_request_id
    return res


class RegionalResource(GceResource):
  """A GceResource that lives in one region."""

  def __init__(self, name: str, clients: ComputeClients, project: str,
               region: str, **kwargs):
    super().__init__(name, clients, project, **kwargs)
    self.region = region

  def _Where(self) -> Dict[str, str]:
    return {'project': self.project, 'region': self.region}

  def RecordData(self) -> Dict[str, Any]:
    return dict(super().RecordData(), region=self.region)

  class Fields(GceResource.Fields):
    region: str
