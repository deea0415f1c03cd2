"""redis-benchmark (Debian's redis-tools) as the local stand-in for memtier.

redis-benchmark has no SET:GET mix and no test time, so a probe runs a SET
process and a GET process side by side (connections split by the ratio), each
sized to last about the probe duration from the last measured rate; before a
test's first probe, a pilot of a few thousand requests at the probe's
connections measures one (a guessed rate made the first probe of a fast
server a fraction of its duration and of a slow one several times it). Its own
latency leaves out client queueing, so the average latency reported is the
closed-loop figure, outstanding requests / throughput (Little's law), and
the tool's own numbers are kept in the metadata (redis_benchmark_results.py).

Keys: redis-benchmark reads `key:%012d` below the key count, so the preload
writes exactly those keys with `redis-cli --pipe`. In cluster mode it reads
`key:{tag}:%012d` on every master, with a tag per master chosen by the tool;
the tags are learnt from a one-key run (once, in `PreloadSetup`: every client
VM writing a slice uses the same tags) and each master is preloaded with its
own.

Credentials: redis-cli reads the password from REDISCLI_AUTH; Debian's
redis-benchmark 7.0 does not (it needs `-a`), so its argv carries
argv_secret.TOKEN and linux_packages/argv_secret.py hands it the password of
the run's restricted load user (redis_shard.py) out of `ps`'s sight.
"""

import dataclasses
import re
from typing import Dict, Optional, Sequence, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker import evidence
from perfkitbenchmarker import measurement
from perfkitbenchmarker import probe_processes
from perfkitbenchmarker import redis_shard
from perfkitbenchmarker import vm_util
from perfkitbenchmarker.linux_packages import argv_secret
from perfkitbenchmarker.linux_packages import redis_benchmark as package
from perfkitbenchmarker.linux_packages import redis_server
from perfkitbenchmarker.load_generators import base
from perfkitbenchmarker.load_generators import commands
from perfkitbenchmarker.load_generators import concurrent
from perfkitbenchmarker.load_generators import redis_benchmark_results as rb

PATH = 'redis-benchmark'
# The pilot before a test's first probe (module doc): this many requests a
# connection, and at least PILOT_MIN_REQUESTS (a tenth of a second of a
# shard held to half a core, a few hundredths on a cloud VM's). Its rate is
# a first probe's as any probe's is the next one's: on 2 cores, pilots of
# 2,000 requests read 14,706 and 14,184 ops/s, the 1 s probe planned from
# them 14,388 and 13,356.
PILOT_REQUESTS_PER_CONNECTION = 50
PILOT_MIN_REQUESTS = 2000
# Planned from a measured rate, a few requests a connection at the least:
# a floor of 2,000 requests made a probe of a slow server run for a minute
# (a server thrashing under its CPU quota served 30 ops/s a process, 2,000
# requests outlasted the probe's bound) and failed the run with a timeout
# where the search would have gone on to say every load was over the cap.
MIN_REQUESTS_PER_CONNECTION = 10
PLAN_HEADROOM = 1.25  # Planned rate at most this x the fastest seen.
# A probe's bound: 4x its length + 30 s, or, if longer, the time its
# requests take at this rate a process: a working but slow server ends late,
# and the next probe is planned from what it measured. Request counts come
# from a rate measured by the pilot or the probe before, which a server on
# a shared machine can miss by far: a shard sharing its core with a busy
# loop at load ~20 served 810 ops/s a process (3 cluster shards in half a
# core outlasted 34 s at load 20-30), and
# probes planned from the rate the one before measured outlasted 34 s
# beside a busy loop per core and the whole suite (cloud_rehearsal_test,
# pkb_faults_test: 'timed out after 34 s'). Only a server slower than this
# is taken for hung.
SLOWEST_RATE_PER_PROCESS = 250.0
# A request count planned from the last rate seen covers whole seconds of
# progress lines (rb.ProcessSeconds) only with room: the lines start a tick
# after the tool does and its last part second is no second, and a probe
# at one load ran up to ~20 % faster than the one before it.
WHOLE_SECONDS_START_S = 0.5
WHOLE_SECONDS_RATE_SLACK = 1.2
# A probe's time bound (StopAfter): planned from the fastest rate measured
# at its load, a probe of a server whose CPU quota was cut to a tenth ran
# 5-7x its length (2 s probes of tests/steady_quota_test.py: 10.7-15.6 s),
# the hold too. Past this x its length + STOP_AFTER_EXTRA_S its processes
# are stopped; what they measured until then (their progress lines' whole
# seconds) is the probe's figure. A probe run a little slower than planned
# (a busy machine: PLAN_HEADROOM) still ends by itself, with its report.
STOP_AFTER_FACTOR = 1.25
STOP_AFTER_EXTRA_S = 1.0
# A process whose progress lines said no reply for this long is stopped,
# and the probe fails in one line: the server stopped answering (a
# SIGSTOPped shard held a probe to its bound, requests / 250 ops/s + 30 s).
NO_REPLY_S = 3.0


def DurationForSeconds(seconds: int) -> float:
  """The probe length to plan a request count for so that `seconds` whole
  seconds come out: longer than `seconds`, since a request count ends when
  its requests are done, which a rate planned a little low puts before the
  last whole second (a 1 s hold read 'held 0 of 0 s'). The plan's estimate
  counts the same length (study/plan.py)."""
  return (seconds + WHOLE_SECONDS_START_S) * WHOLE_SECONDS_RATE_SLACK


def StopAfter(duration_s: float) -> float:
  """The time bound of a probe of `duration_s` (STOP_AFTER_FACTOR)."""
  return duration_s * STOP_AFTER_FACTOR + STOP_AFTER_EXTRA_S


def SplitConnections(connections: int, set_ratio: int,
                     get_ratio: int) -> Dict[str, int]:
  """Connections per test, by the SET:GET ratio (each side >= 1 if used)."""
  if set_ratio == 0:
    return {'get': connections}
  if get_ratio == 0:
    return {'set': connections}
  if connections < 2:
    raise errors.UsageError(
        'redis-benchmark needs at least 2 connections for a SET:GET mix; '
        'raise --memtier_clients.')
  sets = round(connections * set_ratio / (set_ratio + get_ratio))
  sets = min(max(1, sets), connections - 1)
  return {'set': sets, 'get': connections - sets}


def RefuseErrorReplies(vm, outputs: Sequence[concurrent.ProcessOutput]
                       ) -> None:
  """errors.ProcessError when redis-benchmark said it got error replies:
  it counts a CLUSTERDOWN as a request done (after a second's wait), so its
  figures would count what the server refused as served."""
  concurrent.RefuseErrorReplies(
      vm, outputs, rb.LOAD_GENERATOR, rb.ErrorReplies,
      'it counts them as requests done',
      lambda _: "check the shards' logs (the cluster's state)")


_NO_REPLY = concurrent.Idle(rb.NO_REPLY_WORDS, NO_REPLY_S)


class RedisBenchmarkGenerator(base.LoadGenerator):
  """Drives redis-benchmark on one client VM."""

  NAME = rb.LOAD_GENERATOR
  MEASURES_CLIENT_CPU = True  # Probe sets client_cpu (the probe driver reads it).

  def __init__(self, vm):
    self.vm = vm
    self._version = None
    self._rate_per_connection: Dict[str, float] = {}
    self._fastest_rate: Dict[str, float] = {}
    # (test, connections) -> the fastest rate measured at that load: a
    # repeat or the hold planned from the last, a confirm probe slowed to
    # half by a busy machine, ended early ('held 12 of 20 s ... (8 s not
    # measured: the load generator ended before)'); one that runs slower
    # than planned only runs longer, its seconds all measured.
    self._rate_at: Dict[Tuple[str, int], float] = {}
    self._probes = 0

  def Version(self) -> str:
    if self._version is None:
      self._version = package.GetVersion(self.vm)
    return self._version

  # Preload -------------------------------------------------------------------

  def _Pipe(self, endpoint: base.Endpoint, password: str,
            resp: commands.RespStream, count: int) -> None:
    """Streams `count` SETs to one endpoint; every one must be answered OK."""
    # The RESP is streamed to redis-cli chunk by chunk, never held whole;
    # it logs in from that stream too (an AUTH first), so no environment
    # holds the password while the preload runs.
    argv = commands.RedisCliPipeCommand('redis-cli', endpoint, None)
    # Recorded and marked like a probe: teardown stops it after a crash.
    with probe_processes.Marked(self.vm, 'redis-cli-pipe') as probe:
      out, _ = self.vm.RemoteCommand(
          probe.prefix + vm_util.QuoteAll(argv),
          stdin=commands.AuthenticatedStream(password, resp), timeout=600,
          what='redis-cli --pipe')
    evidence.Keep(self.vm, 'redis-cli-pipe', [vm_util.QuoteAll(argv)],
                  {'out.0': out})
    match = re.search(r'errors:\s*(\d+),\s*replies:\s*(\d+)', out)
    if (not match or int(match.group(1)) != 0 or
        int(match.group(2)) != count + 1):  # The AUTH's reply too.
      raise errors.ProcessError(
          f'redis-cli --pipe of {count:,} keys into {endpoint.host}:'
          f'{endpoint.port} did not end with every key set: '
          f'{vm_util.Tail(out, 1) or "no summary"}')

  def _Masters(self, seed: base.Endpoint, password: str):
    nodes, _ = self.vm.RemoteCommand(
        redis_server.CliCommand(seed.host, seed.port, 'CLUSTER NODES'),
        env={'REDISCLI_AUTH': password})
    masters = []
    for line in nodes.splitlines():
      fields = line.split()
      if len(fields) >= 3 and 'master' in fields[2]:
        host, port = fields[1].split('@')[0].rsplit(':', 1)
        masters.append(base.Endpoint(host, int(port)))
    return masters

  def _ClusterTags(self, seed: base.Endpoint, password: str,
                   workload: base.Workload) -> Dict[base.Endpoint, str]:
    """Learns the hash tag redis-benchmark uses on each master.

    A one-key SET run leaves key:{tag}:000000000000 on every master that one
    of its clients is bound to; clients go round-robin over the masters, so
    two per master reach them all.
    """
    masters = self._Masters(seed, password)
    if len(masters) < 2:
      raise errors.UsageError(
          'redis-benchmark --cluster refuses a one-primary cluster; use '
          '--redis_total_num_processes=2 or more, or drop '
          '--redis_server_cluster_mode.')
    clients = 2 * len(masters)
    argv = commands.RedisBenchmarkCommand(
        PATH, seed, argv_secret.TOKEN, 'set', clients=clients,
        threads=1, pipeline=1, requests=50 * clients,
        data_size=workload.data_size, key_space=1, cluster_mode=True,
        user=redis_shard.LOAD_USER)
    concurrent.RunSideBySide(self.vm, 'redis-benchmark-tags', [argv], 60,
                             secret=redis_shard.LoadPassword(password))
    tags = {}
    for endpoint in masters:
      keys, _ = self.vm.RemoteCommand(
          redis_server.CliCommand(endpoint.host, endpoint.port,
                                  "--scan --pattern 'key:{*}:000000000000'"),
          env={'REDISCLI_AUTH': password})
      # A tag may itself end in '}' (key:{8M}}:...): take up to the last '}:'.
      match = re.search(r'key:\{(.+)\}:0{12}', keys)
      if not match:
        raise errors.ProcessError(
            'Could not learn redis-benchmark\'s key tag for '
            f'{endpoint.host}:{endpoint.port}.')
      tags[endpoint] = match.group(1)
    return tags

  def PreloadSetup(self, endpoints: Sequence[base.Endpoint], password: str,
                   workload: base.Workload
                   ) -> Optional[Dict[base.Endpoint, str]]:
    """In cluster mode, each master's key tag, learnt once for all client
    VMs (they must write the same names), and the masters emptied of the
    one-key run's keys; None for standalone shards."""
    if not workload.cluster_mode:
      return None
    tags = self._ClusterTags(endpoints[0], password, workload)
    for endpoint in tags:
      self.vm.RemoteCommand(
          redis_server.CliCommand(endpoint.host, endpoint.port, 'FLUSHALL'),
          env={'REDISCLI_AUTH': password})
    return tags

  def Preload(self, endpoints: Sequence[base.Endpoint], password: str,
              workload: base.Workload,
              key_slice: Optional[base.KeySlice] = None,
              setup: Optional[Dict[base.Endpoint, str]] = None) -> int:
    keys = workload.Slice(key_slice)
    if workload.cluster_mode:
      tags = setup or self.PreloadSetup(endpoints, password, workload)
      for endpoint, tag in tags.items():
        self._Pipe(endpoint, password, commands.RedisBenchmarkPreloadResp(
            workload, tag, key_slice=keys), keys.count)
      return keys.count * len(tags)
    resp = commands.RedisBenchmarkPreloadResp(workload, key_slice=keys)
    for endpoint in endpoints:
      self._Pipe(endpoint, password, resp, keys.count)
    return keys.count * len(endpoints)

  # Probes --------------------------------------------------------------------

  def DurationForSeconds(self, seconds: int) -> float:
    return DurationForSeconds(seconds)

  def _Requests(self, test: str, connections: int, duration_s: float) -> int:
    # A load measured before (the answer's, held after the search) is
    # planned from its own rate: scaled down from a saturated probe at more
    # connections, a 3 s hold at 32 was planned at half its rate and ended
    # a second short ('held 2 of 3 s ... (1 s not measured)').
    per_process = self._rate_at.get((test, connections))
    if per_process is None:
      # Measured (_Pilot), never guessed. A closed loop's rate saturates as
      # connections grow, so scaling the last per-connection rate up would
      # plan probes several times too long; never plan much above the
      # fastest rate this test has shown.
      rate = self._rate_per_connection[test]
      per_process = min(rate * connections,
                        PLAN_HEADROOM * self._fastest_rate[test])
    return max(MIN_REQUESTS_PER_CONNECTION * connections,
               int(per_process * duration_s))

  def _Commands(self, endpoints: Sequence[base.Endpoint],
                workload: base.Workload, load: measurement.Load,
                split: Dict[str, int], requests_for):
    """A process per endpoint and test: (argvs, (endpoint, test,
    connections) of each, (test, requests) of each)."""
    argvs, tests, planned = [], [], []
    for endpoint in endpoints:
      for test, connections in split.items():
        # Threads past the client's cores only contend with each other.
        threads = max(1, min(load.threads, connections,
                             self.vm.num_cpus or load.threads))
        requests = requests_for(test, connections)
        argvs.append(commands.RedisBenchmarkCommand(
            PATH, endpoint, argv_secret.TOKEN, test,
            user=redis_shard.LOAD_USER, clients=connections,
            threads=threads, pipeline=load.pipeline, requests=requests,
            data_size=workload.data_size, key_space=workload.key_count,
            cluster_mode=workload.cluster_mode))
        tests.append((endpoint, test, connections))
        planned.append((test, requests))
    return argvs, tests, planned

  def _Learn(self, tests, outputs) -> None:
    """Each test's rate per connection, and its fastest, from a run."""
    for (_, test, connections), out in zip(tests, outputs):
      result = rb.ProcessResult(out.stdout,
                                connections if out.stopped else None)
      self._rate_per_connection[test] = result.rps / connections
      self._rate_at[(test, connections)] = max(
          result.rps, self._rate_at.get((test, connections), 0.0))
      self._fastest_rate[test] = max(result.rps,
                                     self._fastest_rate.get(test, 0.0))

  def _Pilot(self, endpoints: Sequence[base.Endpoint], password: str,
             workload: base.Workload, load: measurement.Load,
             split: Dict[str, int]) -> None:
    """Measures the rate of each test at the probe's connections (module
    doc): side by side as the probe runs them; no sample comes of it."""
    argvs, tests, planned = self._Commands(
        endpoints, workload, load, split,
        lambda _, connections: max(
            PILOT_MIN_REQUESTS, PILOT_REQUESTS_PER_CONNECTION * connections))
    outputs = concurrent.RunSideBySide(
        self.vm, f'redis-benchmark-pilot-{self._probes}', argvs,
        self.ProbeTimeout(planned, 0),
        secret=redis_shard.LoadPassword(password),
        stop_on=rb.ERROR_REPLY_WORDS, idle=_NO_REPLY)
    RefuseErrorReplies(self.vm, outputs)
    try:
      self._Learn(tests, outputs)
    except (ValueError, IndexError) as e:  # No summary, or one unread.
      raise errors.ProcessError(
          f'redis-benchmark\'s pilot before probe {self._probes}: {e}'
      ) from None

  def ProbeTimeout(self, planned: Sequence[Tuple[str, int]],
                   duration_s: float) -> float:
    """The bound of a probe whose processes run `planned` (test, requests):
    see SLOWEST_RATE_PER_PROCESS."""
    most = max((requests for _, requests in planned), default=0)
    return max(duration_s * 4 + 30, most / SLOWEST_RATE_PER_PROCESS + 30)

  def Probe(self, endpoints: Sequence[base.Endpoint], password: str,
            workload: base.Workload, load: measurement.Load,
            duration_s: float) -> measurement.Measurement:
    if load.rate_per_connection:
      raise ValueError('redis-benchmark has no rate limiter (RATE_LIMITS); '
                       f'it cannot offer {load.Describe()}')
    self._probes += 1
    split = SplitConnections(load.connections, workload.set_ratio,
                             workload.get_ratio)
    if any(test not in self._rate_per_connection for test in split):
      self._Pilot(endpoints, password, workload, load, split)
    argvs, tests, planned = self._Commands(
        endpoints, workload, load, split,
        lambda test, connections: self._Requests(test, connections,
                                                 duration_s))
    groups = [f'{endpoint.host}:{endpoint.port}' for endpoint, _, _ in tests]
    stop_after_s = StopAfter(duration_s)
    run = concurrent.RunProbe(
        self.vm, f'redis-benchmark-{self._probes}', argvs,
        self.ProbeTimeout(planned, duration_s),
        secret=redis_shard.LoadPassword(password),
        sample_every_s=concurrent.SampleEvery(duration_s),
        # A down cluster's CLUSTERDOWN, retried a second a connection until
        # the request count is done, ran a 3 s probe to its 282 s bound
        # (requests / SLOWEST_RATE_PER_PROCESS): stopped at the first one.
        stop_on=rb.ERROR_REPLY_WORDS, idle=_NO_REPLY,
        stop_after_s=stop_after_s,
        manifest={'load_generator': rb.LOAD_GENERATOR,
                  'load': [load.threads, load.clients, load.pipeline],
                  'groups': groups,
                  # A process stopped at the bound prints no report: its
                  # connections are here (recompute reads stop.<i>).
                  'clients': [connections for _, _, connections in tests],
                  'stdout': [f'out.{i}' for i in range(len(argvs))],
                  'rc': [f'rc.{i}' for i in range(len(argvs))]})
    outputs = run.outputs
    RefuseErrorReplies(self.vm, outputs)
    seconds = [out.seconds for out in outputs]
    facts = {
        'load_generator_version': self.Version(),
        'process_seconds': ','.join(f'{s:.2f}' for s in seconds),
        # No per-second series, so no warm-up can be left out.
        'warmup_s': 0,
        'warmup_supported': False,
    }
    if run.raw_output:
      facts[evidence.METADATA_KEY] = run.raw_output
    stopped = [connections if out.stopped else None
               for (_, _, connections), out in zip(tests, outputs)]
    try:
      m = rb.Measure([out.stdout for out in outputs], groups, seconds, load,
                     facts, stopped)
    except ValueError as e:
      raise errors.ProcessError(str(e)) from None
    if m.metadata.get(rb.STOPPED_PROCESSES_KEY):
      m = dataclasses.replace(m, metadata={
          **m.metadata, measurement.STOPPED_AT_KEY: round(stop_after_s, 1)})
    self._Learn(tests, outputs)
    return dataclasses.replace(
        m, client_cpu=run.cpu,
        client_cpu_busy_fraction=run.cpu.busy_fraction if run.cpu else None)
