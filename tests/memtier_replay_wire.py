"""The memtier replay stand-in's real traffic: RESP over a plain socket.

Part of tests/memtier_replay.py (see its docstring): logging in to a server
(and, in cluster mode, to every master from CLUSTER SLOTS), and the real
SETs and GETs of request-count runs, keyed as memtier keys them. The seam:
nothing here formats output or reads a recording.
"""

import random
import socket
import time


class Failure(Exception):
  """One line for stderr; the process exits 1."""


REAL_LIMIT = 1_000_000


class Connection:
  """One RESP connection; pipelined commands and their replies."""

  def __init__(self, host, port):
    try:
      self.sock = socket.create_connection((host, port), timeout=30)
    except OSError as e:
      raise Failure(f'error: connection to {host}:{port} failed: '
                    f'{e.strerror or e}') from None
    self.buf = b''
    self.where = f'{host}:{port}'

  def Send(self, commands):
    out = []
    for command in commands:
      out.append(b'*%d\r\n' % len(command))
      for part in command:
        part = part if isinstance(part, bytes) else str(part).encode()
        out.append(b'$%d\r\n%s\r\n' % (len(part), part))
    self.sock.sendall(b''.join(out))
    return [self._Reply() for _ in commands]

  def _Line(self):
    while b'\r\n' not in self.buf:
      chunk = self.sock.recv(1 << 16)
      if not chunk:
        raise Failure(f'error: connection to {self.where} dropped')
      self.buf += chunk
    line, self.buf = self.buf.split(b'\r\n', 1)
    return line

  def _Reply(self):
    line = self._Line()
    kind, rest = line[:1], line[1:]
    if kind in (b'+', b'-'):
      return (kind == b'-', rest.decode(errors='replace'))
    if kind == b':':
      return int(rest)
    if kind == b'$':
      size = int(rest)
      if size < 0:
        return None
      while len(self.buf) < size + 2:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
          raise Failure(f'error: connection to {self.where} dropped')
        self.buf += chunk
      data, self.buf = self.buf[:size], self.buf[size + 2:]
      return data
    if kind == b'*':
      return [self._Reply() for _ in range(int(rest))]
    raise Failure(f'error: bad reply from {self.where}: {line[:40]!r}')


def Login(s, host, port):
  conn = Connection(host, port)
  command = ['PING']
  if s['auth']:
    user, colon, password = s['auth'].partition(':')
    command = ['AUTH', user, password] if colon else ['AUTH', s['auth']]
  reply = conn.Send([command])[0]
  if isinstance(reply, tuple) and reply[0]:
    raise Failure(f'error: authentication failed [{reply[1]}]')
  return conn


def _Crc16(data):
  crc = 0
  for byte in data:
    crc ^= byte << 8
    for _ in range(8):
      crc = ((crc << 1) ^ 0x1021 if crc & 0x8000 else crc << 1) & 0xFFFF
  return crc


def Masters(s):
  """(connection per master, slot -> connection index) or one connection."""
  seed = Login(s, s['host'], s['port'])
  if not s['cluster']:
    return [seed], None
  ranges = seed.Send([['CLUSTER', 'SLOTS']])[0]
  if isinstance(ranges, tuple):
    raise Failure(f'error: CLUSTER SLOTS failed [{ranges[1]}]')
  conns, slots = [], [0] * 16384
  for first, last, master, *_ in ranges:
    conns.append(Login(s, master[0].decode() or s['host'], master[1]))
    slots[first:last + 1] = [len(conns) - 1] * (last - first + 1)
  return conns, slots


# Keys, as memtier picks them. ---------------------------------------------


def KeyStream(s, which, client, clients, rng):
  """Endless key numbers for one client; which 0 = SET pattern, 1 = GET."""
  kind, low, high = s['pattern'][which], s['key_min'], s['key_max']
  if kind == 'P':
    span = high - low
    per = span // clients + 1
    low = low + client * per
    high = min(high, low + per - 1)
  number = low
  while True:
    if kind in ('S', 'P'):
      yield number
      number = low if number >= high else number + 1
    elif kind == 'G':
      while True:
        value = int(round(rng.gauss(s['median'], s['stddev'])))
        if low <= value <= high:
          yield value
          break
    else:
      yield rng.randint(low, high)


def RunRequests(s, conns, slots):
  """Sends the run's requests for real; returns per-command measurements."""
  clients = s['threads'] * s['clients']
  per_client = s['requests']
  if s['allkeys'] and s['pattern'][0] == 'P':
    per_client = (s['key_max'] - s['key_min']) // clients + 1
  total = per_client * clients
  if total > REAL_LIMIT:
    raise Failure(f'memtier replay stand-in: {total} requests is more than '
                  f'it sends for real ({REAL_LIMIT})')
  sets, gets = s['ratio']
  rng = random.Random(1)
  plan = []
  for client in range(clients):
    streams = [KeyStream(s, w, client, clients, rng) for w in (0, 1)]
    count = per_client
    if s['allkeys'] and s['pattern'][0] == 'P':
      last = s['key_max'] - (s['key_min'] + client * per_client) + 1
      count = max(0, min(per_client, last))
    for i in range(count):
      is_set = gets == 0 or (sets and i % (sets + gets) < sets)
      plan.append((is_set, next(streams[0 if is_set else 1])))
  value = b'x' * s['data_size']
  stats = {True: [], False: []}  # (latency ms, second it ended in)
  hits = 0
  start = time.time()
  began = time.perf_counter()
  # As many requests in flight as memtier keeps (every client's pipeline).
  depth = max(1, s['pipeline']) * clients
  for at in range(0, len(plan), depth):
    batch = plan[at:at + depth]
    by_conn = {}
    for is_set, number in batch:
      key = f"{s['prefix']}{number}".encode()
      index = slots[_Crc16(key) % 16384] if slots else 0
      by_conn.setdefault(index, []).append(
          (is_set, ['SET', key, value] if is_set else ['GET', key]))
    sent = time.perf_counter()
    for index, items in by_conn.items():
      replies = conns[index].Send([c for _, c in items])
      for (is_set, _), reply in zip(items, replies):
        if isinstance(reply, tuple) and reply[0]:
          raise Failure(f'error: server replied {reply[1]}')
        hits += (not is_set) and reply is not None
    done = time.perf_counter()
    for is_set, _ in batch:
      stats[is_set].append(((done - sent) * 1000, int(done - began)))
  return stats, hits, start, start + (time.perf_counter() - began)
