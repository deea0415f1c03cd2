"""A closed-loop Redis server model for benchmarking search policies.

Never used for published results: it exists so that search policies can be
compared at cloud scale (tens of shards, millions of ops/s, 30 s probes)
without paying for the VMs. `scripts/bench_search.py` runs the policies on
it and on local Redis side by side.

The model, for a load of `threads x clients` connections per client process,
`pipeline` requests in flight per connection and `processes` client processes
(client VMs, or memtier processes per VM):

* outstanding requests N = processes x threads x clients x fanout x
  (1 + (pipeline - 1) x efficiency), where `fanout` is the connections a
  cluster-mode client holds (one per shard) and `efficiency` the share of
  the pipelined requests beyond the first that are really in flight (1 for
  a plain closed loop);
* the server's service-time curve: throughput X(N) = peak x u / (1 + u^k)^(1/k)
  with u = N / N*, N* = peak x base latency (the knee), so X = N / base
  latency at light load and X = peak on the plateau; past the knee it sags
  by `sag` per doubling of N, and `dips` carve non-monotonic notches
  (Gaussian in log N);
* the load generator's limit: each client thread tops out at
  `client_ops_per_thread` and a process has at most `client_max_threads`
  useful threads; the delivered rate is a smooth minimum of server and
  client rates, and a probe is `client_saturated` past 90 % of the client's;
* average latency by Little's law, R = N / X, which is the base latency
  before the knee and grows linearly with N past it; p95/p99 grow with the
  server's utilisation;
* noise: a run-to-run factor per probe (`run_noise`, CV) and independent
  per-second noise (`second_noise`, CV of one second), so a probe of s
  seconds has a throughput CV of sqrt(run^2 + second^2 / s).

`Fit` fits peak, base latency, knee sharpness, sag and the client limit to a
real sweep (mean throughput and latency per connection count) with
scipy.optimize.least_squares; `search_scenarios.Scenarios` scales the
fitted shape to the published studies' sizes (docs/studies.md).
"""

import dataclasses
import json
import math
import random
import statistics
from typing import Dict, List, Sequence, Tuple

import numpy as np
from scipy import optimize

from perfkitbenchmarker import measurement

SATURATED_FRACTION = 0.85  # the smooth minimum reaches 0.89 at the limit
# ASSUMED, fitted to nothing: p95 = average x (P95_BASE + P95_GROWTH x u^4),
# u the server's utilisation. Only PKB's rule and the p95 scores use it.
P95_BASE, P95_GROWTH = 1.3, 0.8


def P95Factor(utilisation: float) -> float:
  return P95_BASE + P95_GROWTH * min(1.0, utilisation) ** 4


@dataclasses.dataclass(frozen=True)
class ServerModel:
  """One server deployment and its load generators; see the module doc."""
  name: str
  peak_ops: float
  base_latency_ms: float
  knee_sharpness: float = 4.0
  sag_per_doubling: float = 0.0
  dips: Tuple[Tuple[float, float, float], ...] = ()  # (N centre, log width, depth)
  processes: int = 1
  fanout: int = 1
  efficiency: float = 1.0
  client_ops_per_thread: float = float('inf')
  client_max_threads: int = 1 << 20
  run_noise: float = 0.01
  second_noise: float = 0.03
  description: str = ''

  def Outstanding(self, load: measurement.Load) -> float:
    in_flight = 1 + (load.pipeline - 1) * self.efficiency
    return (self.processes * load.threads * load.clients * self.fanout *
            in_flight)

  def ServerOps(self, outstanding: float) -> float:
    knee = self.peak_ops * self.base_latency_ms / 1000
    u = outstanding / knee
    k = self.knee_sharpness
    ops = self.peak_ops * u / (1 + u ** k) ** (1 / k)
    if u > 1 and self.sag_per_doubling:
      ops *= max(0.3, 1 - self.sag_per_doubling * math.log2(u))
    for centre, width, depth in self.dips:
      ops *= 1 - depth * math.exp(-(math.log(outstanding / centre) / width) ** 2
                                  / 2)
    return ops

  def ClientOps(self, load: measurement.Load) -> float:
    useful = min(load.threads, self.client_max_threads)
    return self.processes * useful * self.client_ops_per_thread

  def Expected(self, load: measurement.Load) -> Tuple[float, float, float]:
    """Noise-free (throughput, average latency ms, client busy fraction)."""
    n = self.Outstanding(load)
    server = self.ServerOps(n)
    client = self.ClientOps(load)
    if math.isinf(client):
      ops = server
    else:
      ops = (server ** -6 + client ** -6) ** (-1 / 6)
    return ops, n / ops * 1000, ops / client if client else 0.0

  def ProbeCv(self, seconds: float) -> float:
    return math.sqrt(self.run_noise ** 2 + self.second_noise ** 2 / seconds)

  def Measure(self, load: measurement.Load, seconds: float,
              rng: random.Random) -> measurement.Measurement:
    """One probe: per-second series with run-to-run and per-second noise."""
    ops, _, busy = self.Expected(load)
    n = self.Outstanding(load)
    run = max(0.2, rng.gauss(1, self.run_noise))
    whole = max(1, int(round(seconds)))
    per_second = []
    total = 0
    for s in range(whole):
      second_ops = max(1.0, ops * run * rng.gauss(1, self.second_noise))
      total += second_ops
      per_second.append(measurement.SecondStats(
          s, int(second_ops), n / second_ops * 1000))
    throughput = total / whole
    latency = n / throughput * 1000
    utilisation = min(1.0, throughput / self.peak_ops)
    return measurement.Measurement(
        load=load, throughput=throughput, average_latency_ms=latency,
        p50_latency_ms=latency * 0.9,
        p99_latency_ms=latency * (1.6 + 1.4 * utilisation ** 4),
        duration_s=float(whole), ops=int(total),
        per_second=tuple(per_second),
        client_saturated=busy * run > SATURATED_FRACTION,
        client_cpu_busy_fraction=min(1.0, busy * run),
        metadata={'load_generator': 'model', 'model': self.name,
                  'p95_latency_ms': latency * P95Factor(utilisation)})

  def Measurer(self, seconds: float, rng: random.Random):
    return lambda load: self.Measure(load, seconds, rng)

  def ExpectedLatency(self, load: measurement.Load,
                      rule: str = 'average') -> float:
    """Noise-free average latency, or p95 with rule 'p95'."""
    ops, latency, _ = self.Expected(load)
    return latency * (P95Factor(ops / self.peak_ops) if rule == 'p95' else 1)

  def TrueBest(self, cap_ms: float, loads: Sequence[measurement.Load],
               rule: str = 'average') -> Tuple[float, measurement.Load]:
    """The highest noise-free throughput whose latency under `rule` is
    under the cap, over `loads`."""
    best = (0.0, None)
    for load in loads:
      ops, _, _ = self.Expected(load)
      if self.ExpectedLatency(load, rule) < cap_ms and ops > best[0]:
        best = (ops, load)
    return best


# Fitting to a real sweep.


@dataclasses.dataclass(frozen=True)
class SweepPoint:
  connections: int
  pipeline: int
  throughput: float
  latency_ms: float
  cv: float = 0.0


@dataclasses.dataclass(frozen=True)
class FitResult:
  model: ServerModel
  points: Tuple[SweepPoint, ...]
  throughput_rms_pct: float
  latency_rms_pct: float
  max_abs_pct: float

  def Lines(self) -> List[str]:
    lines = ['| connections | measured ops/s | model ops/s | error % | '
             'measured ms | model ms | error % |',
             '|---:|---:|---:|---:|---:|---:|---:|']
    for p in self.points:
      ops, latency, _ = self.model.Expected(
          measurement.Load(1, p.connections, p.pipeline))
      lines.append(
          f'| {p.connections} | {p.throughput:,.0f} | {ops:,.0f} | '
          f'{(ops / p.throughput - 1) * 100:+.1f} | {p.latency_ms:.3f} | '
          f'{latency:.3f} | {(latency / p.latency_ms - 1) * 100:+.1f} |')
    m = self.model
    lines += ['', f'fit: peak {m.peak_ops:,.0f} ops/s, base latency '
              f'{m.base_latency_ms:.3f} ms, knee sharpness '
              f'{m.knee_sharpness:.2f}, sag {m.sag_per_doubling * 100:.1f} % '
              f'per doubling, client {m.client_ops_per_thread:,.0f} ops/s; '
              f'run noise {m.run_noise * 100:.1f} %, per-second noise '
              f'{m.second_noise * 100:.1f} %',
              f'fit error: throughput RMS {self.throughput_rms_pct:.1f} %, '
              f'latency RMS {self.latency_rms_pct:.1f} %, worst point '
              f'{self.max_abs_pct:.1f} %']
    return lines


def LoadSweep(path: str) -> Tuple[List[SweepPoint], Dict]:
  """A stored sweep fixture: per-repetition probes -> mean per load."""
  with open(path) as f:
    data = json.load(f)
  if 'means' in data:  # per-load means and CVs over repetitions
    return [SweepPoint(p['connections'], p.get('pipeline', 1),
                       p['throughput'], p['latency_ms'], p.get('cv', 0.0))
            for p in data['means']], data
  by_load: Dict[Tuple[int, int], List[Tuple[float, float, float]]] = {}
  for rep in data['repetitions']:
    for p in rep:
      by_load.setdefault((p['connections'], p.get('pipeline', 1)), []).append(
          (p['throughput'], p['latency_ms'], p.get('seconds', 1.0)))
  points = []
  for (conns, pipeline), values in sorted(by_load.items()):
    ops = [v[0] for v in values]
    weights = [v[0] * v[2] for v in values]
    latency = sum(w * v[1] for w, v in zip(weights, values)) / sum(weights)
    cv = statistics.stdev(ops) / statistics.fmean(ops) if len(ops) > 1 else 0
    points.append(SweepPoint(conns, pipeline, statistics.fmean(ops), latency,
                             cv))
  return points, data


def Fit(points: Sequence[SweepPoint], name: str = 'local_fit',
        seconds: float = 2.0, **fixed) -> FitResult:
  """Least-squares fit of the model's shape to a sweep's means.

  Residuals are log ratios of throughput and of latency at every sweep load,
  so both count alike at every scale. Noise is not fitted by least squares:
  the run-to-run CV is the median CV over the sweep's repetitions at a load
  (minus the per-second part, which redis-benchmark cannot show).
  """
  conns = np.array([p.connections for p in points], dtype=float)
  pipes = np.array([p.pipeline for p in points], dtype=float)
  ops = np.array([p.throughput for p in points])
  lat = np.array([p.latency_ms for p in points])

  def Build(x):
    return ServerModel(
        name=name, peak_ops=math.exp(x[0]), base_latency_ms=math.exp(x[1]),
        knee_sharpness=x[2], sag_per_doubling=x[3],
        client_ops_per_thread=math.exp(x[4]), **fixed)

  def Residuals(x):
    model = Build(x)
    out = []
    for c, p, o, l in zip(conns, pipes, ops, lat):
      mo, ml, _ = model.Expected(measurement.Load(1, int(c), int(p)))
      out += [math.log(mo / o), math.log(ml / l)]
    return np.array(out)

  top = float(ops.max())
  x0 = [math.log(top * 1.1), math.log(max(lat.min(), 1e-3)), 3.0, 0.01,
        math.log(top * 1.5)]
  bounds = ([math.log(top * 0.5), math.log(1e-3), 1.5, 0.0, math.log(top * 0.5)],
            [math.log(top * 10), math.log(10.0), 20.0, 0.3, math.log(top * 50)])
  fit = optimize.least_squares(Residuals, x0, bounds=bounds)
  model = Build(fit.x)
  noise = statistics.median([p.cv for p in points]) if points else 0.05
  model = dataclasses.replace(
      model, run_noise=max(0.005, noise * 0.7),
      second_noise=max(0.005, noise * 0.7 * math.sqrt(seconds)))
  r = Residuals(fit.x)
  tput, latency = r[0::2], r[1::2]
  pct = lambda a: float(np.sqrt(np.mean((np.exp(a) - 1) ** 2)) * 100)
  return FitResult(model, tuple(points), pct(tput), pct(latency),
                   float(np.max(np.abs(np.exp(r) - 1)) * 100))
