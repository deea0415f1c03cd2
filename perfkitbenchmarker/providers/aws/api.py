"""boto3 clients, EC2 error translation, and the shape of every AWS resource.

Extension seam: a new kind of EC2 object subclasses `AwsResource`, names its
EC2 calls (NOUN, LIST_KEY, ID_KEY, NOT_FOUND), creates itself with its tags
in one call through `_FindOrCreate` (which records the id at once, so the run
record holds it even if the next call fails; a create call of its own goes
through `SendCreate`), and is deleted by that id or by its tags, "not found"
counting as done. It registers `FromRecord`, which
rebuilds it from the record entry alone (with clients from
`DEFAULT_CLIENTS`); what else it records it declares in `Fields` and takes
back in `Restore`.

EC2's reads are eventually consistent (AWS's "Eventual consistency in the
Amazon EC2 API"): what a call just made may be missing from the next
Describe calls for a while; AWS advises describing again with exponential
back-off, waits from a couple of seconds growing up to five minutes. So a
create sent but never answered (its answer lost to a timeout and the run
stopped before another attempt, or pkb killed while it was in flight) may
have made an object that teardown's lookup, moments later, does not list,
and a delete by name answers as for a missing one. `SendCreate` notes in
the record entry, before the send, that a create is unanswered
(create_unanswered; put back once EC2 answers or refuses it); teardown
looks such an entry, with no id recorded, up again (`LookAgain`:
LOOK_AGAIN_ATTEMPTS lookups, pauses of 1 s growing to 30 s, 301 s in all,
which a stop ends) before taking it for never made. An entry with its id,
or whose create was never sent or was refused, is deleted as before, with
no pause.

Clients are injected: every resource takes an `AwsClients` (tests pass
moto-backed or failure-injecting clients); only record-rebuilt resources use
the default factory.

Every EC2 and SSM call goes out once, with its own timeouts: botocore's
retries (8 more sends, sleeping up to 20 s between them on the real clock)
and its 60 s connect timeout held a throttled or stalled call for minutes,
and no stop (a signal, the run's deadline) could end it: a stop cannot cut a
call in flight, and botocore's sleeps do not look at it. A call connects
within CONNECT_TIMEOUT_S (10 s) and waits at most READ_TIMEOUT_S (60 s) for
each next piece of the answer (one that trickles bytes is bounded per read
only); one not answered so is a transient error like a throttle. Transient
errors (TRANSIENT_CODES, any 5xx, a timeout or lost connection) are tried
again by the run's own loops, whose pauses end within a step at a stop
(waits.Pause) and which send nothing after it:
  * a create or delete: resource._Retry runs the whole attempt again (each
    attempt finds what an earlier one made before it makes anything, by
    tags, name or RunInstances' and CreateRouteTable's ClientToken, kept
    over the object's sends; EC2's other create calls here take no token,
    and one sent again after an unanswered send EC2 does not list yet is
    made twice, deleted with its twin, or refused as a duplicate,
    DUPLICATE_CODES, then tried again like a transient error);
    the reads inside an attempt are sent once, the attempt being retried;
  * a read outside one (machine types, images, the default VPC, a
    readiness or termination check): `Read`.
Both pause 1, 2, 4, 8, 16, 30, 30 s (91 s) over ATTEMPTS (8) tries.

Worst cases, with C = CONNECT_TIMEOUT_S + READ_TIMEOUT_S = 70 s:
  * one call: C after the endpoint last sent anything;
  * one read (`Read`): ATTEMPTS x C + 91 s = 651 s;
  * a create: ATTEMPTS attempts of its n calls, each sent once, plus 91 s
    of pauses, 8 x n x 70 + 91 s: 1211 s for a VPC, subnet, placement
    group or instance launch (n = 2: a lookup and the create), 1771 s for
    the security group (its rules) and the key pair (its import, delete,
    import), 2331 s for the internet gateway (lookup, create, describe,
    attach), 2891 s for the route table (lookup, create, describe, route,
    association); a kind's readiness check comes on top
    (a VM's: resource.READY_TIMEOUT_S, its last check a read of up to
    651 s). A stop ends a create at the end of the attempt in flight (its
    calls, normally well under a second, at most C each), and no attempt
    or read follows; in a pause it ends within a pause step (1 s);
  * a delete: DELETE_RETRIES (10) attempts of its calls plus their pauses
    (181 s): 10 x 2 x 70 + 181 = 1581 s for a VPC, subnet or security
    group (a lookup and the delete; a key pair's or placement group's is
    one call), 10 x 4 x 70 + 181 = 2981 s for the internet gateway and
    route table (lookup, describe, detach or disassociate, delete); an
    instance's 8 attempts of its lookup and terminate 1211 s, then its wait
    until terminated (TERMINATE_TIMEOUT_S, 600 s, its last check a read of
    up to 651 s): 2462 s;
  * an entry's look-again (an unanswered create, no id recorded):
    LOOK_AGAIN_ATTEMPTS (15) lookups plus 301 s of pauses, 15 x 70 + 301 =
    1351 s, once before its delete (found or not, the delete's retries look
    up as usual): up to 4332 s for the internet gateway or route table,
    3813 s for an instance. A stop ends it within a pause step, the entry kept.
"""

import contextlib
import dataclasses
import logging
import threading
import time
from typing import (Annotated, Any, Callable, Dict, Iterable, Iterator, List,
                    Optional, Tuple, TypeVar)

import boto3
import botocore.config
import botocore.exceptions
import botocore.parsers
import pydantic

from perfkitbenchmarker import errors
from perfkitbenchmarker import record_checks
from perfkitbenchmarker import resource
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.providers.aws import naming

ClientError = botocore.exceptions.ClientError

# Each call's bounds (module docstring): connecting, and each wait for the
# answer's next bytes.
CONNECT_TIMEOUT_S = 10
READ_TIMEOUT_S = 60
# How often a create, a delete's attempt (an instance's) or a read is tried
# over transient errors, pausing 1, 2, 4, 8, 16, 30, 30 s between the tries.
ATTEMPTS = 8
# How often teardown looks for an object whose create went unanswered
# before taking it for never made (module docstring), pausing 1, 2, 4, 8,
# 16, then 30 s: 301 s in all, about the longest wait AWS names (five
# minutes; its waits grow to that, ours stop at 30 s, so a stop ends them).
LOOK_AGAIN_ATTEMPTS = 15
# Its pauses in all (resource.Retried's default: 1, 2, 4 ... 30 s).
LOOK_AGAIN_S = sum(min(2 ** i, 30) for i in range(LOOK_AGAIN_ATTEMPTS - 1))

# What EC2 and SSM answer a caller over its request rate (botocore's
# standard retry mode's list, less other services' codes).
THROTTLING_CODES = frozenset({
    'RequestLimitExceeded', 'Throttling', 'ThrottlingException',
    'ThrottledException', 'RequestThrottledException',
    'TooManyRequestsException', 'RequestThrottled', 'EC2ThrottledException',
    'BandwidthLimitExceeded', 'SlowDown', 'PriorRequestNotComplete',
})
# Worth another try: throttling, and EC2's eventual consistency (a VPC or
# group made a moment ago is not yet visible to the next call).
TRANSIENT_CODES = THROTTLING_CODES | frozenset({
    'InternalError', 'InternalFailure', 'ServiceUnavailable', 'Unavailable',
    'RequestTimeout', 'RequestTimeoutException',
    'IncorrectState', 'InvalidVpcID.NotFound', 'InvalidSubnetID.NotFound',
    'InvalidGroup.NotFound', 'InvalidInternetGatewayID.NotFound',
    'InvalidRouteTableID.NotFound', 'InvalidKeyPair.NotFound',
    'InvalidPlacementGroup.Unknown',
})
# A create sent again refused as a duplicate of the first send, which EC2
# took (its answer lost) but does not list yet: the subnet's CIDR, the
# security group's or placement group's name is taken. Tried again (the
# next attempt's lookup finds the first) when a send went unanswered.
DUPLICATE_CODES = frozenset({
    'InvalidSubnet.Conflict', 'InvalidGroup.Duplicate',
    'InvalidPlacementGroup.Duplicate',
})
# Deleting something that something else still uses: wait and try again.
DEPENDENCY_CODES = THROTTLING_CODES | frozenset({
    'DependencyViolation', 'InvalidPlacementGroup.InUse', 'IncorrectState',
    'InternalError', 'Unavailable',
})


def BotoConfig(connect_timeout_s: float = CONNECT_TIMEOUT_S,
               read_timeout_s: float = READ_TIMEOUT_S
               ) -> botocore.config.Config:
  """Every client's: its timeouts, and one send a call (no retry of
  botocore's: the run's own loops retry, module docstring)."""
  return botocore.config.Config(
      connect_timeout=connect_timeout_s, read_timeout=read_timeout_s,
      retries={'mode': 'standard', 'total_max_attempts': 1})


def ErrorCode(error: ClientError) -> str:
  return error.response.get('Error', {}).get('Code', '')


def ErrorMessage(error: ClientError) -> str:
  err = error.response.get('Error', {})
  return f'{err.get("Code", "error")}: {err.get("Message", "")}'.strip()


@contextlib.contextmanager
def Translated(what: str, retry: Iterable[str] = (),
               gone: Iterable[str] = ()) -> Iterator[None]:
  """Turns boto errors into the harness's: retryable, done, or one line.

  Args:
    what: what the block does, for the message ("creating VPC pkb-x").
    retry: error codes raised as resource.RetryableError.
    gone: error codes meaning there is nothing (more) to do: the object is
      already gone, or the change already made. Checked before `retry`; the
      block ends quietly (the rest of it is skipped).
  """
  try:
    yield
  except ClientError as e:
    code = ErrorCode(e)
    if code in gone:
      return
    status = e.response.get('ResponseMetadata', {}).get('HTTPStatusCode', 0)
    # A 5xx is the service's own trouble, whatever its code (or none, from
    # a proxy): transient wherever the block retries anything.
    if code in retry or (retry and 500 <= (status or 0) <= 599):
      raise resource.RetryableError(f'{what}: {ErrorMessage(e)}') from None
    raise errors.ResourceError(f'AWS refused {what}: {ErrorMessage(e)}') \
        from None
  except botocore.exceptions.ParamValidationError:
    raise  # A bug here, not a cloud condition: keep the traceback.
  except botocore.exceptions.NoCredentialsError:
    raise errors.PrerequisiteError(
        f'{what}: no AWS credentials; set AWS_PROFILE (or --aws_profile) or '
        'run `aws configure`.') from None
  except botocore.exceptions.BotoCoreError as e:
    raise resource.RetryableError(f'{what}: {e}') from None
  except botocore.parsers.ResponseParserError as e:
    # Not EC2's XML: an HTML error page of a
    # proxy, or an endpoint (AWS_ENDPOINT_URL) that is not EC2 or lacks the
    # call. Its text is the page itself, many lines: logged, not repeated.
    logging.info('%s: %s', what, e)
    raise errors.ResourceError(
        f'{what} failed: the endpoint\'s answer is not an EC2 reply '
        '(a proxy\'s error page, or AWS_ENDPOINT_URL naming a service '
        'without this call?); details in pkb.log.') from None


T = TypeVar('T')


def Read(what: str, call: Callable[[], T], *,
         sleep: Callable[[float], None] = time.sleep,
         retry: Iterable[str] = TRANSIENT_CODES, gone: Iterable[str] = (),
         attempts: int = ATTEMPTS) -> Optional[T]:
  """call() (a read) in Translated(what, retry, gone), tried again over
  transient errors at most `attempts` times (resource.Retried, its pauses
  on `sleep`, the caller's: a stop ends the read within a pause step, or at
  the end of the call in flight); None when EC2 answers a code of `gone`.
  Gives up with a one-line ResourceError, never a RetryableError, so a
  create's or delete's own retry does not multiply it."""

  def Attempt() -> Optional[T]:
    with Translated(what, retry=retry, gone=gone):
      return call()
    return None  # Gone.

  return resource.RetriedRead(what, Attempt, attempts, sleep)


def SendCreate(res: resource.BaseResource, create: Callable[[], T]) -> T:
  """create(), the create call of `res`, its record entry saying first that
  a create went out unanswered (create_unanswered), and again as it was
  once EC2 answers it or refuses it (a 4xx, a throttle: it made nothing)."""
  earlier = res.create_unanswered
  res.Remember(create_unanswered=True)
  try:
    reply = create()
  except ClientError as e:
    status = e.response.get('ResponseMetadata', {}).get('HTTPStatusCode', 0)
    if (status or 0) < 500 or ErrorCode(e) in THROTTLING_CODES:
      res.Remember(create_unanswered=earlier)
    raise
  res.Remember(create_unanswered=earlier)
  return reply


class _NotListed(resource.RetryableError):
  """A lookup that did not list the object (yet)."""


def LookAgain(res: resource.BaseResource, what: str,
              find: Callable[[], List[str]],
              sleep: Callable[[float], None]) -> List[str]:
  """find() (a lookup by tags of `res`, whose create went unanswered;
  transient errors raised RetryableError) until it lists something, at
  most LOOK_AGAIN_ATTEMPTS times (resource.Retried: its pauses on `sleep`,
  ended by a stop); [] when it never does. Looked for once: `res`'s
  create_unanswered is put back, so its delete's own retries look up as
  usual. A stop, or a lookup failing to the end, raises a ResourceError
  naming res's teardown command: the object may still be listed later, so
  its entry is kept."""

  def Attempt() -> List[str]:
    found = find()
    if not found:
      raise _NotListed(f'{what}: not listed')
    return found

  said = []

  def Warn(error: Exception, pause: float) -> None:
    # The console hears of the wait once: it may take LOOK_AGAIN_S.
    if not said:
      said.append(True)
      logging.warning('%s yet; looking again for up to %.0fs (EC2 may list '
                      'a new object late)', error, LOOK_AGAIN_S)
    logging.info('%s; looking again in %.0fs', error, pause)

  try:
    found = resource.Retried(Attempt, sleep, Warn,
                             attempts=LOOK_AGAIN_ATTEMPTS)
  except resource.GaveUp as e:
    if not isinstance(e.last, _NotListed) or e.stopped:
      raise errors.ResourceError(
          f'{e.last or what}; not deleted, as EC2 may list it later: run '
          f'`{res.TeardownCommand()}` again') from None
    found = []
  res.create_unanswered = False
  return found


@dataclasses.dataclass(frozen=True)
class AwsClients:
  """The clients one region's resources use."""
  region: str
  ec2: Any
  ssm: Any
  profile: Optional[str] = None  # Recorded, so teardown uses the same one.


class ClientFactory:
  """Makes (and keeps) AwsClients per region and profile.

  A boto3 session loads the large EC2 model once, and its clients are
  thread-safe, so one set per region serves every resource of a run. The
  timeouts are every call's (BotoConfig; tests make them short).
  """

  def __init__(self,
               session_factory: Callable[..., Any] = boto3.session.Session,
               connect_timeout_s: float = CONNECT_TIMEOUT_S,
               read_timeout_s: float = READ_TIMEOUT_S):
    self._session_factory = session_factory
    self._config = BotoConfig(connect_timeout_s, read_timeout_s)
    self._clients: Dict[Tuple[str, Optional[str]], AwsClients] = {}
    self._lock = threading.Lock()

  def ForRegion(self, region: str,
                profile: Optional[str] = None) -> AwsClients:
    with self._lock:
      clients = self._clients.get((region, profile))
      if clients is None:
        kwargs = {'region_name': region}
        if profile:
          kwargs['profile_name'] = profile
        try:
          session = self._session_factory(**kwargs)
          clients = AwsClients(
              region, session.client('ec2', config=self._config),
              session.client('ssm', config=self._config), profile)
        except botocore.exceptions.ProfileNotFound as e:
          raise errors.UsageError(f'--aws_profile: {e}') from None
        except botocore.exceptions.BotoCoreError as e:
          # The user's AWS configuration: a config or credentials file that
          # does not parse, a credential_process that fails.
          raise errors.PrerequisiteError(
              f'AWS configuration unusable: '
              f'{vm_util.Printable(str(e).strip())[:300]}; fix it (aws '
              'configure), or pick another --aws_profile.') from None
        self._clients[(region, profile)] = clients
    return clients


# The process's clients, for the run itself as for its teardown: provision
# (ConstructVms and Provision each ask), the VMs a later stage restores from
# the record, and the teardown of the record share one set per region and
# profile (a set costs ~150 ms of CPU). Not resource.TeardownShared, which
# keeps nothing outside a teardown; its key leaves out AWS_ENDPOINT_URL and
# the credentials, read when a set is made: every pkb process makes one run.
DEFAULT_CLIENTS = ClientFactory()


# A region name becomes part of the API's host name.
Region = Annotated[str, pydantic.Field(pattern=r'^[a-z0-9-]{1,64}$')]


class AwsResource(resource.BaseResource):
  """An EC2 object of one run, tagged at creation, found by id or tags."""

  KIND = 'aws_resource'
  # Throttling is waited out by these retries, botocore making none (module
  # docstring).
  CREATE_RETRIES = ATTEMPTS
  # Teardown waits out DependencyViolation while EC2 releases what the
  # deleted instances held (network interfaces, public addresses).
  DELETE_RETRIES = 10

  def __init__(self, clients: AwsClients, run_uri: str,
               tags: Optional[Dict[str, str]] = None, **kwargs):
    super().__init__(naming.ResourceName(run_uri), **kwargs)
    self.clients = clients
    self.ec2 = clients.ec2
    self.region = clients.region
    self.run_uri = run_uri
    self.tags = tags or {}
    self.id: Optional[str] = None
    self.create_unanswered = False  # SendCreate.

  def TagSpecifications(self, *resource_types: str) -> List[Dict]:
    return naming.TagSpecifications(self.tags, self.name, *resource_types)

  def Filters(self) -> List[Dict]:
    return naming.RunFilters(self.run_uri, self.name)

  # A tagged EC2 kind's calls: describe_<NOUN>s lists {LIST_KEY: [{ID_KEY}]}
  # (by Filters or by <ID_KEY>s), delete_<NOUN>(<ID_KEY>=...) removes one;
  # NOT_FOUND is EC2's code for an id it does not know.
  NOUN = LIST_KEY = ID_KEY = NOT_FOUND = ''

  def FindIds(self) -> List[str]:
    """Ids of this object found by its tags (normally one, or none)."""
    with Translated(f'looking up {self.KIND} {self.name}',
                    retry=TRANSIENT_CODES):
      items = self._DescribeCall(Filters=self.Filters())
    return [item[self.ID_KEY] for item in items]

  def KnownIds(self) -> List[str]:
    """The recorded id plus any found by tags: everything to delete."""
    if self._Unanswered():
      return self._LookAgain()
    ids = [self.id] if self.id else []
    return ids + [i for i in self.FindIds() if i not in ids]

  def _Unanswered(self) -> bool:
    """A create of it went out unanswered and no id was recorded: EC2 may
    have made it without listing it yet (module docstring)."""
    return not self.id and self.create_unanswered

  def _LookAgain(self) -> List[str]:
    """Ids found by tags over LookAgain's window."""
    return LookAgain(
        self, f'looking up {self.KIND} {self.name}, whose create went '
        'unanswered', self.FindIds, self._sleep)

  def _DescribeCall(self, **kwargs) -> List[Dict]:
    return getattr(self.ec2, f'describe_{self.NOUN}s')(**kwargs)[self.LIST_KEY]

  def _Describe(self, object_id: str,
                retry: Iterable[str] = TRANSIENT_CODES) -> Optional[Dict]:
    """The object, or None when EC2 does not know the id."""
    with Translated(f'looking up {self.KIND} {object_id}', retry=retry,
                    gone={self.NOT_FOUND}):
      items = self._DescribeCall(**{self.ID_KEY + 's': [object_id]})
      return items[0] if items else None
    return None  # Not found.

  def _Read(self, object_id: str) -> Optional[Dict]:
    """_Describe outside a create or delete (a readiness check): transient
    errors tried again by `Read`; None when EC2 does not know the id."""
    items = Read(f'looking up {self.KIND} {object_id}',
                 lambda: self._DescribeCall(**{self.ID_KEY + 's': [object_id]}),
                 sleep=self._sleep, gone={self.NOT_FOUND})
    return items[0] if items else None

  def _FindOrCreate(self, create: Callable[[], str]) -> None:
    """Remembers the tagged object's id, creating it (create() -> id) only
    when an earlier attempt did not."""
    found = self.FindIds()
    if not found:
      with Translated(f'creating {self.KIND} {self.name}',
                      retry=self.CreateRetryCodes()):
        found = [SendCreate(self, create)]
    self.Remember(id=found[0])

  def CreateRetryCodes(self) -> frozenset:
    """What a create call's refusal is tried again over: DUPLICATE_CODES
    too once a send of it went unanswered."""
    return TRANSIENT_CODES | (DUPLICATE_CODES if self.create_unanswered
                              else frozenset())

  def _Delete(self) -> None:
    for object_id in self.KnownIds():
      self._DeleteOne(object_id)

  def _DeleteOne(self, object_id: str) -> None:
    with Translated(f'deleting {self.KIND} {object_id}',
                    retry=DEPENDENCY_CODES, gone={self.NOT_FOUND}):
      getattr(self.ec2, f'delete_{self.NOUN}')(**{self.ID_KEY: object_id})

  def RecordData(self) -> Dict[str, Any]:
    return {'region': self.region, 'profile': self.clients.profile,
            'id': self.id, 'create_unanswered': self.create_unanswered}

  class Fields(record_checks.Fields):
    region: Region
    profile: Optional[str] = None
    id: Optional[str] = None
    create_unanswered: bool = False

  @classmethod
  def FromRecord(cls, entry: Dict[str, Any], record) -> 'AwsResource':
    fields = record_checks.Parse(cls.Fields, entry, record)
    res = cls(DEFAULT_CLIENTS.ForRegion(fields.region, fields.profile),
              record.run_uri, record=record)
    res.Restore(fields)
    res.created = True
    return res

  def Restore(self, fields: Fields) -> None:
    self.id = fields.id
    self.create_unanswered = fields.create_unanswered


def Register(cls) -> None:
  resource.RegisterKind(cls.KIND, cls.FromRecord)
