"""Command lines for memtier_benchmark, redis-benchmark and redis-cli.

Extension seam: every builder is a pure function from `base.Endpoint`,
`base.Workload`, `measurement.Load` and paths to an argv list; a load
generator runs the list on its client VM. Nothing here executes anything, so each flag is covered by unit tests.

Key names each tool reads differ, so a preload must suit the tool probing:
  * memtier_benchmark: `<key_prefix><i>` for i in [key_minimum, key_maximum],
    unpadded (memtier-1 ... memtier-100000).
  * redis-benchmark's SET/GET tests with `-r N`: `key:%012d` for i in
    [0, N-1] (key:000000000000 ...). With `--cluster` the keys are
    `key:{tag}:%012d`, the tag chosen per master by redis-benchmark so that it
    hashes to one of that master's slots, and every master gets all N.
  Neither tool can be made to read the other's names with its built-in tests.
"""

import dataclasses
from typing import Iterator, List, Optional, Tuple

from perfkitbenchmarker import measurement
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import memtier_results
from perfkitbenchmarker.search import staircase as ramp

REDIS_BENCHMARK_KEY_WIDTH = 12  # Digits of __rand_int__ in redis-benchmark.
PRELOAD_CHUNK_BYTES = 1 << 20  # RESP text per write to redis-cli --pipe.


def _Connection(endpoint: base.Endpoint, password: Optional[str],
                host_flag: str, user: Optional[str] = None,
                user_flag: Optional[str] = None) -> List[str]:
  """Host, port and credentials; with `user_flag` None, `-a user:password`."""
  argv = [host_flag, endpoint.host, '-p', str(endpoint.port)]
  if user and user_flag:
    argv += [user_flag, user]
  if password:
    argv += ['-a', f'{user}:{password}' if user and not user_flag
             else password]
  return argv


def _MemtierKeyRange(workload: base.Workload, key_maximum: int) -> List[str]:
  return ['-d', str(workload.data_size),
          '--key-prefix', workload.key_prefix,
          '--key-minimum', str(workload.key_minimum),
          '--key-maximum', str(key_maximum)]


def _MemtierKeyShape(workload: base.Workload) -> List[str]:
  """Gaussian median/stddev (whole keys, as memtier parses them) and seeds."""
  argv = []
  if workload.key_median is not None:
    argv += ['--key-median', f'{workload.key_median:.0f}']
  if workload.key_stddev is not None:
    argv += ['--key-stddev', f'{workload.key_stddev:.0f}']
  if workload.distinct_client_seed:
    argv.append('--distinct-client-seed')
  if workload.randomize:
    argv.append('--randomize')
  return argv


def PreloadFits(key_count: int, connections: int) -> bool:
  """Whether a P:P preload of `key_count` keys over `connections` gives
  each its own slice: each sends (max - min) // N + 1 requests, so too many
  for the keys would leave the last one none (MemtierPreloadCommand)."""
  span = key_count - 1
  return (connections - 1) * (span // connections + 1) <= span


def MemtierPreloadCommand(memtier_path: str, endpoint: base.Endpoint,
                          password: Optional[str], workload: base.Workload,
                          threads: int = 1, clients: int = 1,
                          pipeline: int = 100, json_out: Optional[str] = None,
                          key_pattern: str = 'S:S',
                          user: Optional[str] = None) -> List[str]:
  """Writes every key of `workload` once (memtier's `-n allkeys`).

  `-n allkeys` sends key_maximum - key_minimum requests per client, one short
  of the range (the preload fixture writes 99,999 keys for 1..100000), so
  with S:S --key-maximum is raised by one and each client writes exactly
  key_minimum..key_maximum. Prefer one client for S:S: every client walks the
  same sequence. With P:P memtier already adds the missing request (each of
  the N clients sends (max - min) // N + 1 over its own slice, the last one
  taking the leftover), so the range is passed as is.
  """
  if key_pattern not in ('S:S', 'P:P'):
    raise ValueError(f'Preload needs S:S or P:P, not {key_pattern}')
  key_maximum = workload.key_maximum
  if key_pattern == 'S:S':
    key_maximum += 1
  elif not PreloadFits(workload.key_count, threads * clients):
    raise ValueError('Too many preload clients for the key range')
  argv = [memtier_path, *_Connection(endpoint, password, '-s', user),
          '--ratio', '1:0', '--pipeline', str(pipeline),
          *_MemtierKeyRange(workload, key_maximum),
          '--key-pattern', key_pattern, '-n', 'allkeys',
          '-t', str(threads), '-c', str(clients), '--hide-histogram']
  if json_out:
    argv += ['--json-out-file', json_out]
  if workload.cluster_mode:
    argv.append('--cluster-mode')
  return argv


@dataclasses.dataclass(frozen=True)
class StaircaseSpec:
  """memtier's staircase ramp: clients per thread grow every step, up to
  the probe's -c (memtier requires clients_start < -c); `max_clients`, the
  whole ramp's top (--memtier_staircase_max_clients), is the default -c."""
  clients_start: int
  clients_step: int
  step_duration_s: int
  max_clients: int = 256

  def Steps(self, max_clients: Optional[int] = None) -> List[int]:
    """Clients per thread of each step up to `max_clients`."""
    top = self.max_clients if max_clients is None else max_clients
    return list(range(self.clients_start, top, self.clients_step)) + [top]

  def TestTime(self, max_clients: Optional[int] = None) -> int:
    """--test-time that gives every step, the last included, a full step."""
    return len(self.Steps(max_clients)) * self.step_duration_s

  def Parts(self) -> List[Tuple[int, int]]:
    """(first, last) clients per thread of each memtier run of the whole
    ramp (search/staircase.Parts)."""
    return ramp.Parts(self.clients_start, self.clients_step,
                      self.max_clients)


def MemtierProbeCommand(memtier_path: str, endpoint: base.Endpoint,
                        password: Optional[str], workload: base.Workload,
                        load: measurement.Load, test_time_s: float,
                        json_out: str,
                        staircase: Optional[StaircaseSpec] = None,
                        user: Optional[str] = None,
                        requests: Optional[int] = None) -> List[str]:
  """Offers `load` for `test_time_s` seconds (whole seconds, as memtier takes),
  or, with `requests`, for that many requests per client (`-n`); a load
  with a rate per connection is sent through memtier's rate limiter.

  memtier copies `-a` into its JSON ('configuration' / 'authenticate'); mask
  the password in that file before it is stored anywhere.
  """
  if requests is not None:
    if requests < 1 or staircase:
      raise ValueError(f'memtier -n {requests}: at least 1, no staircase')
    length = ['-n', str(requests)]
  elif test_time_s < 1 or float(test_time_s) != int(test_time_s):
    raise ValueError(f'memtier --test-time takes whole seconds: {test_time_s}')
  else:
    length = ['--test-time', str(int(test_time_s))]
  argv = [memtier_path, *_Connection(endpoint, password, '-s', user),
          '--ratio', workload.ratio, '--pipeline', str(load.pipeline),
          *_MemtierKeyRange(workload, workload.key_maximum),
          '--key-pattern', workload.key_pattern,
          *_MemtierKeyShape(workload), *length,
          '-t', str(load.threads), '-c', str(load.clients),
          '--hide-histogram', '--print-percentiles',
          memtier_results.PRINT_PERCENTILES,
          '--json-out-file', json_out]
  if workload.cluster_mode:
    argv.append('--cluster-mode')
  if load.rate_per_connection:
    if staircase:
      raise ValueError('A staircase run cannot be rate-limited')
    # Per connection: memtier's limiter is each connection's own.
    argv += ['--rate-limiting', str(load.rate_per_connection)]
  if staircase:
    if not 0 < staircase.clients_start < load.clients:
      raise ValueError('Staircase clients_start must be in (0, load.clients)')
    if staircase.clients_step < 1 or staircase.step_duration_s < 1:
      raise ValueError('Staircase step and duration must be positive')
    argv += ['--clients-start', str(staircase.clients_start),
             '--clients-step', str(staircase.clients_step),
             '--step-duration', str(staircase.step_duration_s)]
  return argv


def RedisBenchmarkCommand(path: str, endpoint: base.Endpoint,
                          password: Optional[str], test: str, clients: int,
                          threads: int, pipeline: int, requests: int,
                          data_size: int, key_space: int, cluster_mode: bool,
                          user: Optional[str] = None) -> List[str]:
  """One redis-benchmark test ('set' or 'get') over `key_space` random keys
  (`RedisBenchmarkPreloadResp` writes them); `-c` is the total of
  connections, spread over `--threads`."""
  if test not in ('set', 'get'):
    raise ValueError(f'Unsupported redis-benchmark test {test!r}')
  argv = [path, *_Connection(endpoint, password, '-h', user, '--user'),
          '-t', test, '-c', str(clients), '-n', str(requests),
          '-P', str(pipeline), '-d', str(data_size), '-r', str(key_space),
          '--threads', str(threads)]
  if cluster_mode:
    argv.append('--cluster')
  return argv


def RespSetCommands(prefix: str, key_minimum: int, key_maximum: int,
                    data_size: int, width: int = 0) -> Iterator[str]:
  """RESP `SET <prefix><i> <value>` for i in [key_minimum, key_maximum].

  Feed the joined text to `redis-cli --pipe` (`RedisCliPipeCommand`): it
  writes each key exactly once, which `redis-benchmark -t set -r N` cannot
  promise (it draws keys at random). redis-cli --pipe does not follow MOVED,
  so in a cluster send each master only keys of its own slots.
  """
  value = 'x' * data_size
  tail = f'${data_size}\r\n{value}\r\n'
  for i in range(key_minimum, key_maximum + 1):
    key = f'{prefix}{i:0{width}d}'
    yield f'*3\r\n$3\r\nSET\r\n${len(key.encode())}\r\n{key}\r\n{tail}'


def RespCommand(*args: str) -> str:
  """One command in RESP (what redis-cli --pipe reads)."""
  parts = [f'*{len(args)}\r\n']
  for arg in args:
    parts.append(f'${len(arg.encode())}\r\n{arg}\r\n')
  return ''.join(parts)


class AuthenticatedStream:
  """`stream` (re-iterable RESP chunks) after an AUTH with `password`.

  redis-cli --pipe then logs in from its stdin, so the password is in no
  environment (REDISCLI_AUTH would hold it for the whole preload) and no
  argv; the AUTH's reply is one more than the stream's.
  """

  def __init__(self, password: str, stream):
    self._auth = RespCommand('AUTH', password)
    self._stream = stream

  def __iter__(self) -> Iterator[str]:
    yield self._auth
    yield from self._stream


def RedisBenchmarkKeyPrefix(cluster_tag: Optional[str] = None) -> str:
  """'key:' or, in cluster mode, 'key:{tag}:' for one master's tag (the
  tool picks them; redis_benchmark.py learns them from a one-key run)."""
  return f'key:{{{cluster_tag}}}:' if cluster_tag else 'key:'


class RespStream:
  """RespSetCommands text in chunks of about `chunk_bytes`, never whole.

  A preload of tens of millions of keys is gigabytes of RESP: it is fed to
  `redis-cli --pipe` chunk by chunk (a VM's RemoteCommand takes an iterable
  stdin), so memory stays bounded by one chunk. Re-iterable: each iteration
  generates the text afresh (an SSH retry sends it again from the start).
  """

  def __init__(self, prefix: str, key_minimum: int, key_maximum: int,
               data_size: int, width: int = 0,
               chunk_bytes: int = PRELOAD_CHUNK_BYTES):
    if chunk_bytes < 1:
      raise ValueError(f'chunk_bytes {chunk_bytes} must be positive')
    self._args = (prefix, key_minimum, key_maximum, data_size, width)
    self.chunk_bytes = chunk_bytes

  def __iter__(self) -> Iterator[str]:
    parts: List[str] = []
    size = 0
    for command in RespSetCommands(*self._args):
      parts.append(command)
      size += len(command)
      if size >= self.chunk_bytes:
        yield ''.join(parts)
        parts, size = [], 0
    if parts:
      yield ''.join(parts)


def RedisBenchmarkPreloadResp(workload: base.Workload,
                              cluster_tag: Optional[str] = None,
                              key_slice: Optional[base.KeySlice] = None
                              ) -> RespStream:
  """RESP chunks writing exactly the keys `-r workload.key_count` reads.

  With `key_slice` (a part of the workload's key range), only that part:
  redis-benchmark numbers keys from 0, so key_minimum is key 0.
  """
  keys = workload.Slice(key_slice)
  return RespStream(
      RedisBenchmarkKeyPrefix(cluster_tag), keys.first - workload.key_minimum,
      keys.last - workload.key_minimum, workload.data_size,
      width=REDIS_BENCHMARK_KEY_WIDTH)


def RedisCliPipeCommand(redis_cli_path: str, endpoint: base.Endpoint,
                        password: Optional[str]) -> List[str]:
  """redis-cli reading RESP from stdin (mass insertion)."""
  argv = [redis_cli_path, *_Connection(endpoint, password, '-h')]
  if password:
    argv.append('--no-auth-warning')
  return argv + ['--pipe']

