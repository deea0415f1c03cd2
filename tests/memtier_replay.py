"""A stand-in for memtier_benchmark: recorded outputs replayed, real writes.

memtier_benchmark is in no package registry this machine can reach and no
build of it is kept, so the tests that drove it run this stand-in instead.
It is NOT memtier. `Executable()` writes a file named `memtier_benchmark`
whose first line names this interpreter directly (no `env`, no shell), so
the process the product starts is this Python, with argv_secret's preload
library loaded into it: the library swaps the argv token for the password
before main(), exactly as it does for the real memtier, while `ps` still
shows the token.

What is real:
  * The command line, parsed as memtier's getopt_long does (`--opt=v`,
    `--opt v`, `-tN`, `-t N`); unknown options, malformed --ratio or
    --key-pattern, and options it cannot replay (TLS, memcache protocols)
    fail in one line on stderr with exit 1, as memtier's errors do.
  * `--version` prints `memtier_benchmark 255.255.255-replay` (the recorded
    build printed the placeholder 255.255.255; `-replay` marks the stand-in
    in every sample's load_generator_version).
  * Every run connects to its server for real, authenticates with `-a`
    (`user:password` or a password) and, with --cluster-mode, reads the
    masters from CLUSTER SLOTS and logs in to each. A refused connection or
    a rejected password ends the run with exit 1 and no JSON.
  * Request-count runs (`-n N` or `-n allkeys`, at most REAL_LIMIT requests
    in all) really send their SETs and GETs, keyed as memtier keys them
    (S sequential per client, P a slice per client, R uniform, G Gaussian
    around --key-median with --key-stddev), `-n allkeys` one short of the
    range per client as memtier does. So preloads leave the real keys and
    DBSIZE behind. Counts, hits, misses, durations and latencies in their
    output are measured; all of a process's clients share one connection
    per master, pipelined --pipeline deep (memtier opens one per client).

What is replayed, from tests/data (real memtier outputs, see its README):
  * Timed runs (--test-time) log in as above, wait out the test time, and
    answer with the recording nearest in shape (standalone or cluster, the
    connections -t x -c, two threads the duration-bug recording): its
    per-second counts and latencies cycled over the test time, counts
    scaled down in proportion below the recording's connections, split into
    SETs and GETs by --ratio, its percentiles and HDR histograms, and its
    Runtime / Total duration the test time plus the recording's own excess
    (its replies in flight and whole-second error), so the duration bug
    (Ops/sec = Count / a duration a whole second short) comes back where it
    was recorded. --pipeline and --data-size do not change the figures. memtier's
    idle last second is not reproduced.
  * --print-percentiles: the whole run's percentiles are the ones asked
    for. A percentile the recording printed (50, 99, 99.9) is its printed
    value; one it did not (90, 95 in the recordings made with memtier's
    default list) is read from the recording's own HDR histogram at that
    percentile, as memtier's hdr_value_at_percentile reads it, so it is the
    value memtier would have printed for that run. The per-second series
    keeps only what was recorded (50, 99, 99.9): memtier kept no
    per-second histogram to derive others from.
  * Staircase runs (--clients-start/--clients-step/--step-duration) replay
    the staircase recording's seconds for each step's connections.
  * --rate-limiting (requests a second per connection) caps every replayed
    second's count at what memtier's limiter lets the process's
    connections send (its 50 wake-ups a second: 75 gives 74 a connection;
    a cluster client's connection to each master has its own limit);
    the latencies stay the recording's (closed-loop) ones, so a rate-limited
    replay is no faster than an unlimited one, only capped. Request-count
    runs are not rate-limited.

Outputs: the JSON (`--json-out-file`) and the stdout table in memtier's
shapes, with the configuration taken from the command line (memtier copies
`-a` into it; the product masks it on reading).
"""

import atexit
import json
import os
import shutil
import sys
import tempfile
import time

from memtier_replay_output import Document, MeasuredDoc, ReplayedDoc, Table
from memtier_replay_wire import Failure, Masters, RunRequests

VERSION = '255.255.255-replay'
_HERE = os.path.dirname(os.path.abspath(__file__))
PERCENTILES = '50,99,99.9'  # memtier's default --print-percentiles
WITH_VALUE = {  # long name: short name (or None), for options taking a value
    'server': 's', 'port': 'p', 'authenticate': 'a', 'requests': 'n',
    'clients': 'c', 'threads': 't', 'data-size': 'd', 'protocol': 'P',
    'run-count': 'x', 'out-file': 'o', 'unix-socket': 'S', 'test-time': None,
    'ratio': None, 'pipeline': None, 'key-prefix': None, 'key-minimum': None,
    'key-maximum': None, 'key-pattern': None, 'key-stddev': None,
    'key-median': None, 'key-zipf-exp': None, 'print-percentiles': None,
    'json-out-file': None, 'clients-start': None, 'clients-step': None,
    'step-duration': None, 'select-db': None, 'rate-limiting': None,
    'data-size-range': None, 'expiry-range': None, 'reconnect-interval': None,
    'seed': None, 'client-stats': None, 'data-offset': None}
FLAGS = {'hide-histogram', 'cluster-mode', 'distinct-client-seed',
         'randomize', 'random-data', 'show-config', 'print-all-runs',
         'help', 'version', 'debug', 'no-expiry', 'tls', 'ipv4', 'ipv6'}
SHORT = {v: k for k, v in WITH_VALUE.items() if v}
NOT_REPLAYED = {'tls', 'unix-socket', 'out-file', 'client-stats'}


def ParseArgs(argv):
  """memtier's command line as {long name: value or True}."""
  opts, i = {}, 0
  while i < len(argv):
    arg = argv[i]
    i += 1
    if arg.startswith('--'):
      name, eq, value = arg[2:].partition('=')
      if name in FLAGS and not eq:
        opts[name] = True
        continue
      if name not in WITH_VALUE:
        raise Failure(f"memtier_benchmark: unrecognized option '{arg}'")
      if not eq:
        if i >= len(argv):
          raise Failure(f"memtier_benchmark: option '--{name}' requires an "
                        'argument')
        value, i = argv[i], i + 1
      opts[name] = value
    elif arg.startswith('-') and len(arg) > 1:
      letter = arg[1]
      if letter == 'v':
        opts['version'] = True
        continue
      if letter not in SHORT:
        raise Failure(f"memtier_benchmark: invalid option -- '{letter}'")
      value = arg[2:]
      if not value:
        if i >= len(argv):
          raise Failure(f"memtier_benchmark: option requires an argument -- "
                        f"'{letter}'")
        value, i = argv[i], i + 1
      opts[SHORT[letter]] = value
    else:
      raise Failure(f'memtier_benchmark: unexpected argument {arg!r}')
  return opts


def _Int(opts, name, default):
  try:
    return int(opts.get(name, default))
  except ValueError:
    raise Failure(f'error: {name} must be a number') from None


def Settings(opts):
  """Checked run settings, the way memtier refuses bad values."""
  bad = sorted(NOT_REPLAYED & set(opts))
  if bad or opts.get('protocol', 'redis') not in ('redis', 'resp2'):
    raise Failure(f'memtier replay stand-in: cannot replay '
                  f'--{bad[0] if bad else "protocol"} '
                  '(tests/memtier_replay.py)')
  ratio = str(opts.get('ratio', '1:10')).split(':')
  pattern = str(opts.get('key-pattern', 'R:R')).split(':')
  if len(ratio) != 2 or not all(r.isdigit() for r in ratio):
    raise Failure('error: ratio must be expressed as [0-n]:[0-n]')
  if len(pattern) != 2 or any(p not in ('S', 'R', 'G', 'P', 'Z')
                              for p in pattern):
    raise Failure('error: key-pattern must be in the format of [S/R/G/P/Z]'
                  ':[S/R/G/P/Z]')
  s = dict(host=opts.get('server', 'localhost'), port=_Int(opts, 'port', 6379),
           threads=_Int(opts, 'threads', 4), clients=_Int(opts, 'clients', 50),
           pipeline=_Int(opts, 'pipeline', 1),
           data_size=_Int(opts, 'data-size', 32),
           ratio=(int(ratio[0]), int(ratio[1])), pattern=pattern,
           prefix=opts.get('key-prefix', 'memtier-'),
           key_min=_Int(opts, 'key-minimum', 0),
           key_max=_Int(opts, 'key-maximum', 10000000),
           cluster='cluster-mode' in opts, auth=opts.get('authenticate'),
           test_time=None, requests=None, allkeys=False,
           percentiles=[float(p) for p in str(
               opts.get('print-percentiles', PERCENTILES)).split(',')])
  if s['key_min'] >= s['key_max']:
    raise Failure('error: key-minimum must be less than key-maximum')
  s['median'] = float(opts.get('key-median', (s['key_min'] + s['key_max']) / 2))
  s['stddev'] = float(opts.get('key-stddev', (s['key_max'] - s['key_min']) / 6))
  if 'rate-limiting' in opts:
    s['rate'] = _Int(opts, 'rate-limiting', 0)
    if s['rate'] < 1:
      raise Failure('error: rate must be greater than zero.')
  if 'requests' in opts:
    if opts['requests'] == 'allkeys':
      s['allkeys'], s['requests'] = True, s['key_max'] - s['key_min']
    else:
      s['requests'] = _Int(opts, 'requests', 0)
  else:
    s['test_time'] = _Int(opts, 'test-time', 0) or None
  if s['requests'] is None and s['test_time'] is None:
    s['requests'] = 10000  # memtier's default request count.
  if 'clients-start' in opts:
    s['staircase'] = tuple(_Int(opts, n, 1) for n in (
        'clients-start', 'clients-step', 'step-duration'))
    if s['test_time'] is None:
      raise Failure('error: the staircase needs --test-time')
  return s


def Main(argv):
  try:
    opts = ParseArgs(argv[1:])
    if 'version' in opts:
      print(f'memtier_benchmark {VERSION}')
      print('A replay stand-in for tests (tests/memtier_replay.py), not '
            'memtier.')
      return 0
    if 'help' in opts:
      print('Usage: memtier_benchmark [options] (replay stand-in)')
      return 0
    s = Settings(opts)
    conns, slots = Masters(s)
    s['masters'] = len(conns)
    start = time.time()
    if s['test_time'] is None:
      stats, hits, start, finish = RunRequests(s, conns, slots)
      sections, duration_ms = MeasuredDoc(s, stats, hits, start, finish)
      recording = None
      if s['allkeys']:
        print(f"setting requests to {s['requests']}")
    else:
      sections, duration_ms, recording = ReplayedDoc(s)
      time.sleep(max(0.0, start + s['test_time'] - time.time()))
    for conn in conns:
      conn.sock.close()
    doc = Document(s, sections, duration_ms, start, recording)
    if opts.get('json-out-file'):
      with open(opts['json-out-file'], 'w') as f:
        json.dump(doc, f, indent=2)
    sys.stdout.write(Table(s, doc))
    return 0
  except Failure as e:
    print(e, file=sys.stderr)
    return 1


_PATH = []


def Path():
  """Executable() once per test process, removed when the process exits."""
  if not _PATH:
    directory = tempfile.mkdtemp(prefix='memtier-replay-')
    atexit.register(shutil.rmtree, directory, True)
    _PATH.append(Executable(directory))
  return _PATH[0]


def Executable(directory, spinning_thread=False, idle_until=None,
               refuse_over_s=None):
  """Writes an executable `memtier_benchmark` running Main; returns its path.

  The first line names this interpreter itself, so argv_secret's library is
  preloaded into this very process (through `env` or a shell script it would
  go into that program, which would hand the password on in its argv).
  With `spinning_thread`, every timed run also has a thread that spins (a
  client busy on a CPU all the time: the attribution tests' client-CPU
  case); `--version` and request-count runs do not. With `idle_until` (a
  path), every timed run then idles as memtier's last second does
  (IdleTail). With `refuse_over_s`, a timed run longer than that many
  seconds fails at once, as memtier's errors do (a hold that fails while
  the search's 1 s probes ran).
  """
  path = os.path.join(directory, 'memtier_benchmark')
  timed = "'--test-time' in ' '.join(sys.argv)"
  spin = ('import threading\n'
          'def _Spin():\n'
          '  while True:\n'
          '    pass\n'
          f'if {timed}:\n'
          "  threading.Thread(target=_Spin, daemon=True).start()\n"
          if spinning_thread else '')
  tail = (f'if {timed}:\n'
          f'  memtier_replay.IdleTail({idle_until!r})\n'
          if idle_until else '')
  refuse = (f'if memtier_replay.TestTime(sys.argv) > {refuse_over_s!r}:\n'
            "  sys.stderr.write('error: this stand-in refuses runs over "
            f"{refuse_over_s} s\\n')\n"
            '  sys.exit(1)\n' if refuse_over_s is not None else '')
  with open(path, 'w') as f:
    f.write(f'#!{sys.executable}\n'
            'import sys\n'
            f'{spin}'
            f'sys.path.insert(0, {_HERE!r})\n'
            'import memtier_replay\n'
            f'{refuse}'
            'code = memtier_replay.Main(sys.argv)\n'
            f'{tail}'
            'sys.exit(code)\n')
  os.chmod(path, 0o755)
  return path


def TestTime(argv):
  """The --test-time a command line (argv[0] the program) asks for, read
  as Main reads it; 0 when none, or when Main will refuse the line."""
  try:
    return _Int(ParseArgs(argv[1:]), 'test-time', 0)
  except Failure:
    return 0


def IdleTail(until_path, idle_s=1.0):
  """memtier's idle last second, after `until_path` exists (waited for up
  to 30 s): the process outlives that file by `idle_s` however late it
  came. The time it ends is written to `until_path`.ended."""
  deadline = time.monotonic() + 30
  while not os.path.exists(until_path) and time.monotonic() < deadline:
    time.sleep(0.05)
  time.sleep(idle_s)
  with open(until_path + '.ended', 'w') as f:
    f.write(repr(time.time()))


if __name__ == '__main__':
  sys.exit(Main(sys.argv))
