"""A fake BigQuery REST API on 127.0.0.1, for publisher tests.

Test support code, not product code. It implements just the calls the
BigQuery publisher makes, with the real URL shapes and JSON, so the real
google-cloud-bigquery client talks to it unchanged:
  datasets get; tables get, insert; tabledata list (paged);
  jobs insert (query), jobs get, getQueryResults (paged), jobs.query;
  load jobs through multipart and resumable uploads.
Load jobs check every row against the table schema as BigQuery does
(unknown fields, missing REQUIRED values and wrong types fail the job, which
then loads nothing), are RUNNING until first fetched, and append their rows
when they finish. Job ids are unique per project: a second insert with the
same id is a 409. Queries: only the publisher's de-duplication query
(SELECT DISTINCT sample_uri ... run_uri IN UNNEST(@run_uris) [AND
<column> BETWEEN TIMESTAMP_SECONDS(@first) AND TIMESTAMP_SECONDS(@last)]) is
understood; anything else is a 400.

Every request is recorded (`requests`); failures are injected with
`FailRequests` (HTTP errors), `FailLoadJobs` (jobs that end in an error),
`DropLoadResponses` (the job is created, the response is a 503),
`SlowResponses` (a byte a second) and `EndlessResponses` (a chunked body
that goes on). The fake's own reads are bounded: a socket timeout and a
largest request body.
"""

import contextlib
import dataclasses
import datetime
import http.server
import json
import re
import threading
import time
import urllib.parse
import uuid
from typing import Any, Callable, Dict, List, Optional, Tuple

_API = re.compile(r'/(?:upload/)?bigquery/v2/projects/(?P<project>[^/]+)'
                  r'(?P<rest>/.*)?')
_QUERY = re.compile(
    r'SELECT DISTINCT sample_uri FROM `(?P<table>[^`]+)` '
    r'WHERE run_uri IN UNNEST\(@run_uris\)'
    r'(?: AND (?P<column>\w+) BETWEEN TIMESTAMP_SECONDS\(@first\) '
    r'AND TIMESTAMP_SECONDS\(@last\))?')
PAGE_SIZE = 50  # Small, so paging is exercised.
READ_TIMEOUT_S = 60.0
MAX_REQUEST_BYTES = 512 << 20


@dataclasses.dataclass(frozen=True)
class Request:
  method: str
  path: str
  query: Dict[str, List[str]]
  body: Any


@dataclasses.dataclass
class _Hostile:
  how: str  # 'slow' or 'endless'
  match: str
  bytes_per_s: float = 1.0
  max_bytes: int = 0


@dataclasses.dataclass
class _Injected:
  status: int
  reason: str
  match: str  # A substring of 'METHOD path', '' for every request.
  times: Optional[int]  # None: from now on.


class FakeBigQuery:
  """The fake API's state, failure plan and HTTP server."""

  def __init__(self):
    self.datasets: Dict[Tuple[str, str], Dict[str, Any]] = {}
    self.tables: Dict[Tuple[str, str, str], Dict[str, Any]] = {}
    self.rows: Dict[Tuple[str, str, str], List[Dict[str, Any]]] = {}
    self.jobs: Dict[Tuple[str, str], Dict[str, Any]] = {}
    self.queries: List[Dict[str, Any]] = []  # SQL and parameters, in order.
    self.requests: List[Request] = []
    self._results: Dict[Tuple[str, str], Tuple[list, list]] = {}
    self._pending_loads: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
    self._uploads: Dict[str, Dict[str, Any]] = {}
    self._injected: List[_Injected] = []
    self._hostile: List[_Hostile] = []
    self._failing_loads = 0
    self._dropped_loads = 0
    self._lock = threading.RLock()
    self._server: Optional[http.server.ThreadingHTTPServer] = None
    self._servers: List[http.server.ThreadingHTTPServer] = []
    self.endpoint = ''

  # Server -------------------------------------------------------------------

  def Start(self, bind: Optional[Callable[[], Any]] = None) -> str:
    """Serves on a free port of 127.0.0.1; returns the endpoint URL.

    `bind`, if given, is a context manager factory entered while the
    listening socket is made (e.g. one that enters a network namespace).
    Called again, it serves the same tables on one more socket (another
    namespace) and returns that endpoint; Stop ends them all.
    """
    fake = self

    class Handler(http.server.BaseHTTPRequestHandler):
      protocol_version = 'HTTP/1.1'
      wbufsize = 1 << 16
      timeout = READ_TIMEOUT_S  # The fake's own reads are bounded too.

      def _Serve(self, method):
        length = int(self.headers.get('Content-Length') or 0)
        if length > MAX_REQUEST_BYTES:
          self.send_error(413)
          return
        raw = self.rfile.read(length) if length else b''
        status, payload, headers = fake.Handle(method, self.path,
                                               dict(self.headers), raw)
        data = json.dumps(payload).encode() if payload is not None else b''
        hostile = fake.Hostile(method, self.path)
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        if hostile and hostile.how == 'endless':
          self.send_header('Transfer-Encoding', 'chunked')
        else:
          self.send_header('Content-Length', str(len(data)))
        for key, value in headers.items():
          self.send_header(key, value)
        self.end_headers()
        try:
          if not hostile:
            self.wfile.write(data)
          elif hostile.how == 'slow':
            for i in range(len(data)):  # Until the client gives up.
              self.wfile.write(data[i:i + 1])
              self.wfile.flush()
              time.sleep(1 / hostile.bytes_per_s)
          else:
            chunk = b' ' * (1 << 16)
            for _ in range(hostile.max_bytes // len(chunk)):
              self.wfile.write(b'%x\r\n%s\r\n' % (len(chunk), chunk))
            self.wfile.write(b'0\r\n\r\n')
        except OSError:
          self.close_connection = True

      def finish(self):
        try:
          super().finish()
        except OSError:
          pass  # The client cut a hostile answer short.

      def do_GET(self):  # pylint: disable=invalid-name
        self._Serve('GET')

      def do_POST(self):  # pylint: disable=invalid-name
        self._Serve('POST')

      def do_PUT(self):  # pylint: disable=invalid-name
        self._Serve('PUT')

      def log_message(self, *args):
        pass

    with (bind or contextlib.nullcontext)():
      server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,),
                     daemon=True).start()
    self._servers.append(server)
    self._server = server
    self.endpoint = f'http://127.0.0.1:{server.server_address[1]}'
    return self.endpoint

  def Stop(self) -> None:
    for server in self._servers:
      server.shutdown()
      server.server_close()
    self._servers.clear()

  def __enter__(self) -> 'FakeBigQuery':
    self.Start()
    return self

  def __exit__(self, *exc) -> None:
    self.Stop()

  # Set-up, failure injection and inspection ---------------------------------

  def AddDataset(self, project: str, dataset: str,
                 location: str = 'US') -> None:
    self.datasets[(project, dataset)] = {
        'kind': 'bigquery#dataset', 'id': f'{project}:{dataset}',
        'datasetReference': {'projectId': project, 'datasetId': dataset},
        'location': location}

  def AddTable(self, project: str, dataset: str, table: str,
               fields: List[Dict[str, Any]]) -> None:
    status, _ = self._InsertTable(project, dataset, {
        'tableReference': {'projectId': project, 'datasetId': dataset,
                           'tableId': table}, 'schema': {'fields': fields}})
    assert status == 200, status

  def FailRequests(self, status: int = 403, reason: str = 'accessDenied',
                   match: str = '', times: Optional[int] = None) -> None:
    """Answers requests whose 'METHOD path' contains `match` with errors."""
    self._injected.append(_Injected(status, reason, match, times))

  def SlowResponses(self, match: str = '', bytes_per_s: float = 1.0) -> None:
    """Answers requests whose 'METHOD path' contains `match` a byte at a
    time, `bytes_per_s` bytes a second (a trickling endpoint)."""
    self._hostile.append(_Hostile('slow', match, bytes_per_s=bytes_per_s))

  def EndlessResponses(self, match: str = '',
                       max_bytes: int = 256 << 20) -> None:
    """Answers them with a chunked body that goes on (up to `max_bytes`,
    so a client without a size limit still ends; far past any real one)."""
    self._hostile.append(_Hostile('endless', match, max_bytes=max_bytes))

  def Hostile(self, method: str, path: str) -> Optional[_Hostile]:
    return next((h for h in self._hostile if h.match in f'{method} {path}'),
                None)

  def FailLoadJobs(self, times: int = 1) -> None:
    """The next `times` load jobs end in an error and load nothing."""
    self._failing_loads += times

  def DropLoadResponses(self, times: int = 1) -> None:
    """The next `times` load inserts create the job, then answer 503."""
    self._dropped_loads += times

  def Rows(self, table: str) -> List[Dict[str, Any]]:
    project, dataset, name = table.split('.')
    with self._lock:
      return list(self.rows.get((project, dataset, name), []))

  def Table(self, table: str) -> Dict[str, Any]:
    return self.tables[tuple(table.split('.'))]

  def LoadJobs(self) -> List[Dict[str, Any]]:
    return [j for j in self.jobs.values() if 'load' in j['configuration']]

  # Request handling ---------------------------------------------------------

  def Handle(self, method, raw_path, headers, raw):
    parts = urllib.parse.urlsplit(raw_path)
    query = urllib.parse.parse_qs(parts.query)
    headers = {k.lower(): v for k, v in headers.items()}
    with self._lock:
      body = raw
      if raw and 'json' in headers.get('content-type', ''):
        body = json.loads(raw)
      self.requests.append(Request(method, parts.path, query, body))
      for injected in self._injected:
        if injected.times != 0 and injected.match in f'{method} {parts.path}':
          if injected.times:
            injected.times -= 1
          return _Error(injected.status, 'Injected failure', injected.reason)
      route = _API.fullmatch(parts.path)
      if not route:
        return _Error(404, f'No such API path {parts.path}', 'notFound')
      project, rest = route['project'], route['rest'] or ''
      if parts.path.startswith('/upload/'):
        return self._Upload(method, project, query, headers, raw)
      segments = rest.strip('/').split('/')
      if segments[0] == 'datasets' and len(segments) == 2 and method == 'GET':
        found = self.datasets.get((project, segments[1]))
        return (200, found, {}) if found else _NotFound(rest)
      if segments[0] == 'datasets' and len(segments) >= 3:
        return self._Tables(method, project, segments[1:], query, body)
      if segments == ['jobs'] and method == 'POST':
        return self._InsertJob(project, body)
      if segments[0] == 'jobs' and len(segments) == 2 and method == 'GET':
        return self._GetJob(project, segments[1])
      if segments[0] == 'queries':
        if method == 'POST' and len(segments) == 1:  # jobs.query
          job_id = (body.get('requestId') or uuid.uuid4().hex)
          self._InsertJob(project, {
              'jobReference': {'projectId': project, 'jobId': job_id},
              'configuration': {'query': body}})
          return self._QueryResults(project, job_id, query)
        if method == 'GET' and len(segments) == 2:
          return self._QueryResults(project, segments[1], query)
      return _Error(400, f'Unsupported call {method} {parts.path}')

  def _Tables(self, method, project, segments, query, body):
    dataset = segments[0]
    if (project, dataset) not in self.datasets:
      return _NotFound(f'Dataset {project}:{dataset}')
    if segments[1:] == ['tables'] and method == 'POST':
      status, payload = self._InsertTable(project, dataset, body)
      return status, payload, {}
    key = (project, dataset, segments[2] if len(segments) > 2 else '')
    if key not in self.tables:
      return _NotFound(f'Table {project}:{dataset}.{key[2]}')
    if len(segments) == 3 and method == 'GET':
      return 200, dict(self.tables[key], numRows=str(len(self.rows[key]))), {}
    if segments[3:] == ['data'] and method == 'GET':
      fields = self.tables[key]['schema']['fields']
      return 200, dict(_Page(self.rows[key], fields, query),
                       kind='bigquery#tableDataList'), {}
    return _Error(400, f'Unsupported table call {method}')

  def _InsertTable(self, project, dataset, body):
    ref = body['tableReference']
    key = (project, dataset, ref['tableId'])
    if key in self.tables:
      return _Error(409, f'Already Exists: Table {project}:{dataset}.'
                    f'{ref["tableId"]}', 'duplicate')[:2]
    fields = body.get('schema', {}).get('fields', [])
    names = {f['name'] for f in fields}
    partition = body.get('timePartitioning', {}).get('field')
    if partition and partition not in names:
      return _Error(400, f'Partitioning field {partition} not in schema',
                    'invalid')[:2]
    clustering = body.get('clustering', {}).get('fields', [])
    if len(clustering) > 4 or not set(clustering) <= names:
      return _Error(400, 'Bad clustering fields', 'invalid')[:2]
    table = dict(body, kind='bigquery#table', type='TABLE',
                 id=f'{project}:{dataset}.{ref["tableId"]}',
                 location=self.datasets[(project, dataset)]['location'])
    self.tables[key] = table
    self.rows[key] = []
    return 200, table

  # Jobs ---------------------------------------------------------------------

  def _InsertJob(self, project, body, data=None):
    ref = dict(body.get('jobReference') or {}, projectId=project)
    ref.setdefault('jobId', uuid.uuid4().hex)
    key = (project, ref['jobId'])
    if key in self.jobs:
      return _Error(409, f'Already Exists: Job {project}:{ref["jobId"]}',
                    'duplicate')
    job = {'kind': 'bigquery#job', 'id': f'{project}:{ref["jobId"]}',
           'jobReference': ref, 'configuration': body['configuration'],
           'status': {'state': 'DONE'},
           'statistics': {'creationTime': '1795000000000',
                          'startTime': '1795000000000'}}
    self.jobs[key] = job
    if 'load' in job['configuration']:
      job['status'] = {'state': 'RUNNING'}
      self._pending_loads[key] = self._CheckLoad(job, data or b'')
    elif 'query' in job['configuration']:
      error = self._RunQuery(key, job['configuration']['query'])
      if error:
        job['status'] = {'state': 'DONE', 'errorResult': error,
                         'errors': [error]}
      else:
        job['configuration']['query']['destinationTable'] = {
            'projectId': project, 'datasetId': '_anon', 'tableId': key[1]}
    return 200, job, {}

  def _GetJob(self, project, job_id):
    job = self.jobs.get((project, job_id))
    if job is None:
      return _NotFound(f'Job {project}:{job_id}')
    if job['status']['state'] == 'RUNNING':  # Loads finish when looked at.
      key = (project, job_id)
      rows = self._pending_loads.pop(key)
      error = None
      if self._failing_loads:
        self._failing_loads -= 1
        error = {'reason': 'backendError', 'message': 'Injected job failure'}
      elif isinstance(rows, dict):
        error = rows
      if error:
        job['status'] = {'state': 'DONE', 'errorResult': error,
                         'errors': [error]}
      else:
        destination = job['configuration']['load']['destinationTable']
        table = (destination['projectId'], destination['datasetId'],
                 destination['tableId'])
        self.rows[table].extend(rows)
        job['status'] = {'state': 'DONE'}
        job['statistics']['load'] = {'outputRows': str(len(rows))}
      job['statistics']['endTime'] = '1795000001000'
    return 200, job, {}

  def _CheckLoad(self, job, data):
    """The rows a load job will append, or the error it will end with."""
    load = job['configuration']['load']
    dest = load['destinationTable']
    key = (dest['projectId'], dest['datasetId'], dest['tableId'])
    if load.get('sourceFormat') != 'NEWLINE_DELIMITED_JSON':
      return _Reason('invalid', 'only NEWLINE_DELIMITED_JSON is faked')
    if key not in self.tables:
      return _Reason('notFound', f'Not found: Table {key}')
    fields = self.tables[key]['schema']['fields']
    rows = []
    for number, line in enumerate(data.decode().splitlines(), 1):
      if not line.strip():
        continue
      try:
        rows.append(_CheckRecord(json.loads(line), fields))
      except (ValueError, TypeError) as e:
        return _Reason('invalid', f'Error while reading data, error message: '
                       f'JSON parsing error in row starting at position '
                       f'{number}: {e}')
    return rows

  def _Upload(self, method, project, query, headers, raw):
    kind = query.get('uploadType', [''])[0]
    if method == 'POST' and kind == 'multipart':
      boundary = re.search(r'boundary="?([^";]+)"?',
                           headers['content-type']).group(1).encode()
      parts = [p.split(b'\r\n\r\n', 1)[1].rstrip(b'\r\n')
               for p in raw.split(b'--' + boundary)[1:-1]]
      return self._InsertUploadedJob(project, json.loads(parts[0]), parts[1])
    if method == 'POST' and kind == 'resumable':
      upload_id = uuid.uuid4().hex
      self._uploads[upload_id] = {'metadata': json.loads(raw), 'data': b''}
      location = (f'{self.endpoint}/upload/bigquery/v2/projects/{project}/'
                  f'jobs?uploadType=resumable&upload_id={upload_id}')
      return 200, None, {'Location': location}
    if method == 'PUT' and kind == 'resumable':
      upload = self._uploads[query['upload_id'][0]]
      upload['data'] += raw
      total = headers.get('content-range', '').rpartition('/')[2]
      if total == '*':
        return 308, None, {'Range': f'bytes=0-{len(upload["data"]) - 1}'}
      return self._InsertUploadedJob(project, upload['metadata'],
                                     upload['data'])
    return _Error(400, f'Unsupported upload {method} {kind}')

  def _InsertUploadedJob(self, project, metadata, data):
    result = self._InsertJob(project, metadata, data)
    if result[0] == 200 and self._dropped_loads:
      self._dropped_loads -= 1
      return _Error(503, 'Injected lost response', 'backendError')
    return result

  # Queries ------------------------------------------------------------------

  def _RunQuery(self, key, config):
    sql = ' '.join(config['query'].split())
    match = _QUERY.fullmatch(sql)
    if not match or config.get('useLegacySql', False):
      return _Reason('invalidQuery', f'The fake does not understand: {sql}')
    params = {p['name']: p['parameterValue']
              for p in config.get('queryParameters', [])}
    self.queries.append({'sql': sql, 'parameters': params})
    table = tuple(match['table'].split('.'))
    if table not in self.tables:
      return _Reason('notFound', f'Not found: Table {match["table"]}')
    run_uris = {v['value'] for v in params['run_uris']['arrayValues']}
    low = high = None
    if match['column']:
      low = int(params['first']['value']) * 10**6
      high = int(params['last']['value']) * 10**6
    found = sorted({r['sample_uri'] for r in self.rows[table]
                    if r['run_uri'] in run_uris and
                    (low is None or low <= r[match['column']] <= high)})
    fields = [{'name': 'sample_uri', 'type': 'STRING', 'mode': 'NULLABLE'}]
    self._results[key] = (fields, [{'sample_uri': u} for u in found])
    return None

  def _QueryResults(self, project, job_id, query):
    job = self.jobs.get((project, job_id))
    if job is None:
      return _NotFound(f'Job {project}:{job_id}')
    if 'errorResult' in job['status']:
      error = job['status']['errorResult']
      return _Error(400, error['message'], error['reason'])
    fields, rows = self._results[(project, job_id)]
    page = _Page(rows, fields, query)
    return 200, dict(page, kind='bigquery#getQueryResultsResponse',
                     jobReference=job['jobReference'], jobComplete=True,
                     schema={'fields': fields}), {}


def _CheckRecord(record, fields) -> Dict[str, Any]:
  """A JSON row checked against `fields` and stored typed (as BigQuery)."""
  if not isinstance(record, dict):
    raise ValueError('a row is not a JSON object')
  known = {f['name']: f for f in fields}
  unknown = sorted(set(record) - set(known))
  if unknown:
    raise ValueError(f'No such field: {unknown[0]}.')
  stored = {}
  for name, field in known.items():
    value = record.get(name)
    mode = field.get('mode', 'NULLABLE')
    if mode == 'REPEATED':
      if value is None:
        value = []
      if not isinstance(value, list):
        raise ValueError(f'Array specified for non-repeated field: {name}.')
      stored[name] = [_Cell(v, field) for v in value]
    elif value is None:
      if mode == 'REQUIRED':
        raise ValueError(f'Missing required field: {name}.')
      stored[name] = None
    else:
      stored[name] = _Cell(value, field)
  return stored


def _Cell(value, field):
  kind = field['type']
  if kind in ('RECORD', 'STRUCT'):
    return _CheckRecord(value, field.get('fields', []))
  if kind == 'STRING':
    if not isinstance(value, str):
      raise ValueError(f'{field["name"]}: {value!r} is not a string')
    return value
  if kind in ('FLOAT', 'FLOAT64'):
    if isinstance(value, bool) or not isinstance(
        value, (int, float)) and value not in ('NaN', 'Infinity', '-Infinity'):
      raise ValueError(f'{field["name"]}: {value!r} is not a float')
    return float(value)
  if kind in ('BOOLEAN', 'BOOL'):
    if not isinstance(value, bool):
      raise ValueError(f'{field["name"]}: {value!r} is not a boolean')
    return value
  if kind == 'TIMESTAMP':
    when = datetime.datetime.fromisoformat(str(value).replace('Z', '+00:00'))
    if when.tzinfo is None:
      when = when.replace(tzinfo=datetime.timezone.utc)
    delta = when - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return delta // datetime.timedelta(microseconds=1)
  raise ValueError(f'{field["name"]}: type {kind} is not faked')


def _Page(rows, fields, query):
  start = int(query.get('pageToken', ['0'])[0] or 0)
  if 'startIndex' in query:
    start = int(query['startIndex'][0])
  size = min(int(query.get('maxResults', [PAGE_SIZE])[0]), PAGE_SIZE)
  page = {'totalRows': str(len(rows))}
  if size and rows[start:start + size]:  # The API leaves out an empty list.
    page['rows'] = [_Encode(r, fields) for r in rows[start:start + size]]
  if size and start + size < len(rows):
    page['pageToken'] = str(start + size)
  return page


def _Encode(record, fields):
  """A stored row in the API's {"f": [{"v": ...}]} form."""
  cells = []
  for field in fields:
    value = record.get(field['name'])
    if field.get('mode') == 'REPEATED':
      cells.append({'v': [{'v': _EncodeValue(v, field)} for v in value or []]})
    else:
      cells.append({'v': _EncodeValue(value, field)})
  return {'f': cells}


def _EncodeValue(value, field):
  if value is None:
    return None
  if field['type'] in ('RECORD', 'STRUCT'):
    return _Encode(value, field['fields'])
  if isinstance(value, bool):
    return 'true' if value else 'false'
  return str(value)


def _Reason(reason: str, message: str) -> Dict[str, str]:
  return {'reason': reason, 'message': message}


def _Error(status: int, message: str, reason: str = 'backendError'):
  return status, {'error': {'code': status, 'message': message,
                            'errors': [{'message': message, 'domain': 'global',
                                        'reason': reason}]}}, {}


def _NotFound(what: str):
  return _Error(404, f'Not found: {what}', 'notFound')
