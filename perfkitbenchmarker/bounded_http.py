"""HTTP for the Google clients with every read bounded in time and size.

requests' `timeout` bounds each socket read, not an answer: an endpoint that
trickles a byte a second never times out, and one that sends an endless
(chunked) body is read into memory until the machine runs out of it. Every
response read through `Session` is therefore read whole before it is
returned, within

  * a wall-clock limit: the request's own timeout, and never past the
    session's deadline (`Session.Deadline(seconds)`: e.g. the whole of
    --bq_timeout_seconds); a watchdog shuts the connection's socket down at
    that instant, so a trickle (headers or body) ends there too;
  * a size limit (`max_response_bytes`, counted after decompression).

Past either, the request raises `requests.exceptions.Timeout` or
`ResponseTooLarge` (a `requests.exceptions.RequestException`), which the
clients' retry logic and the callers' one-line errors already handle.

Seam: a new Google client takes `Session(credentials)` as its `_http`
(google-cloud-core's documented hook), as bigquery_publisher.MakeClient does.
"""

import socket
import threading
import time
from typing import Any, Optional

from google.auth.transport import requests as google_requests
import requests
from requests import adapters
from urllib3 import connectionpool
from urllib3 import exceptions as urllib3_exceptions

# No answer the tool reads (a BigQuery page of 2,000 rows is a few MB) comes
# near this; an endless body stops here instead of filling memory.
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
_CHUNK = 64 * 1024
_CURRENT = threading.local()  # The request this thread is sending.


class ResponseTooLarge(requests.exceptions.RequestException):
  """An answer longer than the session's size limit (read no further)."""


class _Request:
  """One request in flight: its connection, for the watchdog to cut."""

  def __init__(self):
    self.conn = None
    self.expired = False
    self._lock = threading.Lock()

  def Cut(self) -> None:
    with self._lock:
      self.expired = True
      sock = getattr(self.conn, 'sock', None)
      if sock is not None:
        try:
          sock.shutdown(socket.SHUT_RDWR)
        except OSError:
          pass


def _Tracking(pool_class):
  """A pool class that tells the sending thread's request its connection."""

  class Pool(pool_class):

    def _get_conn(self, timeout=None):
      conn = super()._get_conn(timeout)
      request = getattr(_CURRENT, 'request', None)
      if request is not None:
        request.conn = conn
        if request.expired:
          request.Cut()
      return conn

  return Pool


_POOLS = {'http': _Tracking(connectionpool.HTTPConnectionPool),
          'https': _Tracking(connectionpool.HTTPSConnectionPool)}


class BoundedAdapter(adapters.HTTPAdapter):
  """Sends a request and reads its answer whole, within the limits."""

  def __init__(self, session: 'Session', max_response_bytes: int):
    self._session = session
    self._max_bytes = max_response_bytes
    super().__init__()

  def init_poolmanager(self, *args, **kwargs) -> None:
    super().init_poolmanager(*args, **kwargs)
    self.poolmanager.pool_classes_by_scheme = dict(_POOLS)

  def send(self, request, stream=False, timeout=None, verify=True, cert=None,
           proxies=None):
    del stream  # Always read whole here, within the limits.
    limit = self._session.Limit(timeout)
    if limit <= 0:
      raise requests.exceptions.Timeout(
          f'no time left for {request.method} {_Where(request)} (deadline '
          'passed)', request=request)
    in_flight = _Request()
    watchdog = threading.Timer(limit, in_flight.Cut)
    watchdog.daemon = True
    _CURRENT.request = in_flight
    watchdog.start()
    try:
      response = super().send(request, stream=True,
                              timeout=(limit, limit), verify=verify,
                              cert=cert, proxies=proxies)
      try:
        response._content = self._ReadBody(response)  # pylint: disable=protected-access
      except BaseException:
        response.close()
        raise
      return response
    except (requests.exceptions.ConnectionError,
            requests.exceptions.ChunkedEncodingError,
            requests.exceptions.ContentDecodingError):
      if in_flight.expired:
        raise requests.exceptions.Timeout(
            f'no complete answer from {_Where(request)} within {limit:g} s',
            request=request) from None
      raise
    finally:
      watchdog.cancel()
      _CURRENT.request = None

  def _ReadBody(self, response) -> bytes:
    chunks, size = [], 0
    try:
      for chunk in response.raw.stream(_CHUNK, decode_content=True):
        size += len(chunk)
        if size > self._max_bytes:
          raise ResponseTooLarge(
              f'the answer from {_Where(response.request)} is longer than '
              f'{self._max_bytes:,} bytes; not read further',
              response=response)
        chunks.append(chunk)
    except ResponseTooLarge:
      raise  # (A RequestException is an OSError too: not a broken body.)
    except (OSError, ValueError, urllib3_exceptions.HTTPError) as e:
      raise requests.exceptions.ChunkedEncodingError(e) from None
    response._content_consumed = True  # pylint: disable=protected-access
    response.raw.release_conn()  # Read to its end: reusable.
    return b''.join(chunks)


def _Where(request) -> str:
  url = getattr(request, 'url', '') or ''
  return url.split('?', 1)[0]


class Session(google_requests.AuthorizedSession):
  """An AuthorizedSession (token refreshes included) whose every response
  is read within a time and a size limit."""

  def __init__(self, credentials: Any,
               max_response_bytes: int = MAX_RESPONSE_BYTES,
               clock=time.monotonic):
    self._clock = clock
    self._deadline: Optional[float] = None
    plain = requests.Session()  # For token refreshes: bounded the same way.
    super().__init__(credentials,
                     auth_request=google_requests.Request(plain))
    adapter = BoundedAdapter(self, max_response_bytes)
    for session in (plain, self):
      for prefix in ('https://', 'http://'):
        session.mount(prefix, adapter)

  def Deadline(self, seconds: Optional[float]) -> None:
    """No request of this session reads past `seconds` from now (None:
    each request's own timeout only)."""
    self._deadline = None if seconds is None else self._clock() + seconds

  def Limit(self, timeout: Any) -> float:
    """Seconds one request may take: its timeout (the larger part of a
    (connect, read) pair; none given: 60 s), capped by the deadline."""
    if isinstance(timeout, tuple):
      timeout = max((t for t in timeout if t is not None), default=None)
    limit = float(timeout) if timeout is not None else 60.0
    if self._deadline is not None:
      limit = min(limit, self._deadline - self._clock())
    return limit
