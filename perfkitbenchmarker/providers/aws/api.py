"""boto3 clients, EC2 error translation, and the shape of every AWS resource.

Extension seam: a new kind of EC2 object subclasses `AwsResource`, names its
EC2 calls (NOUN, LIST_KEY, ID_KEY, NOT_FOUND), creates itself with its tags
in one call through `_FindOrCreate` (which records the id at once, so the run
record holds it even if the next call fails), and is deleted by that id or by
its tags, "not found" counting as done. It registers `FromRecord`, which
rebuilds it from the record entry alone (with clients from
`DEFAULT_CLIENTS`); what else it records it declares in `Fields` and takes
back in `Restore`.

Clients are injected: every resource takes an `AwsClients` (tests pass
moto-backed or failure-injecting clients); only record-rebuilt resources use
the default factory.
"""

import contextlib
import dataclasses
import logging
import threading
from typing import (Annotated, Any, Callable, Dict, Iterable, Iterator, List,
                    Optional, Tuple)

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

# botocore's own retries absorb throttling and 5xx before we see them.
_BOTO_CONFIG = botocore.config.Config(
    retries={'mode': 'standard', 'max_attempts': 8})

# Worth another try: throttling, and EC2's eventual consistency (a VPC or
# group made a moment ago is not yet visible to the next call).
TRANSIENT_CODES = frozenset({
    'RequestLimitExceeded', 'Throttling', 'ThrottlingException',
    'InternalError', 'InternalFailure', 'ServiceUnavailable', 'Unavailable',
    'IncorrectState', 'InvalidVpcID.NotFound', 'InvalidSubnetID.NotFound',
    'InvalidGroup.NotFound', 'InvalidInternetGatewayID.NotFound',
    'InvalidRouteTableID.NotFound', 'InvalidKeyPair.NotFound',
    'InvalidPlacementGroup.Unknown',
})
# Deleting something that something else still uses: wait and try again.
DEPENDENCY_CODES = frozenset({
    'DependencyViolation', 'InvalidPlacementGroup.InUse', 'IncorrectState',
    'RequestLimitExceeded', 'Throttling', 'InternalError', 'Unavailable',
})


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
    if code in retry:
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
    # Not EC2's XML (botocore retried it already): an HTML error page of a
    # proxy, or an endpoint (AWS_ENDPOINT_URL) that is not EC2 or lacks the
    # call. Its text is the page itself, many lines: logged, not repeated.
    logging.info('%s: %s', what, e)
    raise errors.ResourceError(
        f'{what} failed: the endpoint\'s answer is not an EC2 reply '
        '(a proxy\'s error page, or AWS_ENDPOINT_URL naming a service '
        'without this call?); details in pkb.log.') from None


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
  thread-safe, so one set per region serves every resource of a run.
  """

  def __init__(self,
               session_factory: Callable[..., Any] = boto3.session.Session):
    self._session_factory = session_factory
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
              region, session.client('ec2', config=_BOTO_CONFIG),
              session.client('ssm', config=_BOTO_CONFIG), profile)
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


# Used only to rebuild resources from a run record (teardown by run_uri).
DEFAULT_CLIENTS = ClientFactory()


# A region name becomes part of the API's host name.
Region = Annotated[str, pydantic.Field(pattern=r'^[a-z0-9-]{1,64}$')]


class AwsResource(resource.BaseResource):
  """An EC2 object of one run, tagged at creation, found by id or tags."""

  KIND = 'aws_resource'
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
    ids = [self.id] if self.id else []
    return ids + [i for i in self.FindIds() if i not in ids]

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

  def _FindOrCreate(self, create: Callable[[], str]) -> None:
    """Remembers the tagged object's id, creating it (create() -> id) only
    when an earlier attempt did not."""
    found = self.FindIds()
    if not found:
      with Translated(f'creating {self.KIND} {self.name}',
                      retry=TRANSIENT_CODES):
        found = [create()]
    self.Remember(id=found[0])

  def _Delete(self) -> None:
    for object_id in self.KnownIds():
      self._DeleteOne(object_id)

  def _DeleteOne(self, object_id: str) -> None:
    with Translated(f'deleting {self.KIND} {object_id}',
                    retry=DEPENDENCY_CODES, gone={self.NOT_FOUND}):
      getattr(self.ec2, f'delete_{self.NOUN}')(**{self.ID_KEY: object_id})

  def RecordData(self) -> Dict[str, Any]:
    return {'region': self.region, 'profile': self.clients.profile,
            'id': self.id}

  class Fields(record_checks.Fields):
    region: Region
    profile: Optional[str] = None
    id: Optional[str] = None

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


def Register(cls) -> None:
  resource.RegisterKind(cls.KIND, cls.FromRecord)
