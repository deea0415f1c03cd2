"""YCSB's end-of-run report, parsed into frozen records and samples.

YCSB (site.ycsb.Client) prints one `[SECTION], name, value` line per figure:
`[OVERALL]` run time and throughput, then per operation (`[READ]`,
`[UPDATE]`, `[INSERT]`, ...) the count, average, min, max, 95th and 99th
percentile latency in microseconds and one `Return=<STATUS>, count` line per
status. Failed operations get a section of their own (`[READ-FAILED]`).
`[CLEANUP]` times the clients' shutdown and `[TOTAL_GC*]` the JVM's
collections; neither is a database operation.

YCSB exits 0 even when every operation failed or its DB could not start, so
`YcsbResult.Errors()` is what decides whether a run counts: any status but
OK, any `-FAILED` section, a `DBException` on stderr or fewer operations
than asked for is an error, and the probe fails.

Pure: no flags, VMs or clock; tested on output recorded from real YCSB runs
(tests/data/ycsb/).
"""

import dataclasses
import re
from typing import Dict, List, Mapping, Optional, Tuple

from perfkitbenchmarker import measurement
from perfkitbenchmarker import sample
from perfkitbenchmarker import terminal_text
from perfkitbenchmarker import vm_util

LOAD_GENERATOR = 'ycsb'
# Sections that are not database operations.
_NOT_OPERATIONS = ('OVERALL', 'CLEANUP')
_LINE = re.compile(r'^\[([A-Z0-9_\-%]+)\],\s*([^,]+),\s*(\S+)\s*$')
_STDERR_ERRORS = re.compile(
    r'(DBException|UnknownDBException|WorkloadException|Exception in thread|'
    r'Error: )')


@dataclasses.dataclass(frozen=True)
class OperationStats:
  """One operation type's figures (latencies in microseconds)."""
  name: str
  operations: int
  average_us: Optional[float]
  p95_us: Optional[float]
  p99_us: Optional[float]
  return_codes: Mapping[str, int]

  @property
  def failed(self) -> bool:
    return self.name.endswith('-FAILED')

  @property
  def errors(self) -> int:
    """Operations whose status was not OK."""
    return sum(n for code, n in self.return_codes.items() if code != 'OK')


@dataclasses.dataclass(frozen=True)
class YcsbResult:
  """One YCSB run (a load or a transaction phase): `operations` in the
  order YCSB printed them (failed sections included, CLEANUP left out),
  `cpu` the client's (a client_cpu.ClientCpu) when measured."""
  runtime_ms: float
  throughput: float
  operations: Tuple[OperationStats, ...]
  stderr_errors: Tuple[str, ...] = ()
  cpu: Optional[object] = None

  @classmethod
  def Parse(cls, stdout: str, stderr: str = '') -> 'YcsbResult':
    overall: Dict[str, float] = {}
    sections: Dict[str, Dict[str, str]] = {}
    codes: Dict[str, Dict[str, int]] = {}
    for line in stdout.splitlines():
      match = _LINE.match(line.strip())
      if not match:
        continue
      section, name, value = match.groups()
      name = name.strip()
      if section == 'OVERALL':
        number = measurement.FiniteFloat(value)
        if number is not None:
          overall[name] = number
      elif section.startswith('TOTAL_GC') or section == 'CLEANUP':
        continue
      elif name.startswith('Return='):
        codes.setdefault(section, {})[name[len('Return='):]] = int(value)
        sections.setdefault(section, {})
      else:
        sections.setdefault(section, {})[name] = value
    if 'RunTime(ms)' not in overall or 'Throughput(ops/sec)' not in overall:
      raise ValueError('No [OVERALL] RunTime and Throughput in the YCSB '
                       f'output: {stdout[-300:]!r}')
    operations = []
    for section, fields in sections.items():
      count = fields.get('Operations', '0')
      operations.append(OperationStats(
          name=section, operations=int(float(count)),
          average_us=measurement.FiniteFloat(fields.get('AverageLatency(us)')),
          p95_us=measurement.FiniteFloat(
              fields.get('95thPercentileLatency(us)')),
          p99_us=measurement.FiniteFloat(
              fields.get('99thPercentileLatency(us)')),
          return_codes=dict(codes.get(section, {}))))
    errors = tuple(vm_util.Tail(l.strip(), 1)
                   for l in terminal_text.Lines(stderr)
                   if _STDERR_ERRORS.search(l))
    return cls(runtime_ms=overall['RunTime(ms)'],
               throughput=overall['Throughput(ops/sec)'],
               operations=tuple(operations), stderr_errors=errors)

  @property
  def succeeded(self) -> Tuple[OperationStats, ...]:
    """Operation sections that ran (failed sections and empty ones left
    out)."""
    return tuple(op for op in self.operations
                 if not op.failed and op.operations > 0)

  @property
  def total_operations(self) -> int:
    return sum(op.operations for op in self.operations
               if op.name not in _NOT_OPERATIONS)

  def Errors(self, expected_operations: Optional[int] = None) -> List[str]:
    """Why this run does not count, one reason a line; empty if it does."""
    reasons = list(self.stderr_errors[:3])
    for op in self.operations:
      if op.failed and op.operations:
        reasons.append(f'{op.operations} {op.name} operations')
      bad = {c: n for c, n in op.return_codes.items() if c != 'OK'}
      if bad:
        reasons.append(f'{op.name} returned ' + ', '.join(
            f'{c} x{n}' for c, n in sorted(bad.items())))
    done = sum(op.return_codes.get('OK', 0) for op in self.operations)
    if expected_operations is not None and done < expected_operations:
      reasons.append(f'{done} of {expected_operations} operations succeeded')
    return reasons

  def AverageLatencyUs(self) -> float:
    """Average over every successful operation, weighted by counts."""
    ops = [op for op in self.succeeded if op.average_us is not None]
    total = sum(op.operations for op in ops)
    if not total:
      raise ValueError('YCSB measured no successful operations.')
    return sum(op.operations * op.average_us for op in ops) / total

  def ToMeasurement(self, load: measurement.Load,
                    metadata: Mapping[str, object]) -> measurement.Measurement:
    """The search's view: overall throughput and op-weighted latency.

    YCSB gives no merged histogram across operation types, so p99 is the
    worst operation's (an upper bound), as `percentile_merge` says.
    """
    p99s = [op.p99_us for op in self.succeeded if op.p99_us is not None]
    ops = sum(op.operations for op in self.succeeded)
    return measurement.Measurement(
        load=load, throughput=self.throughput,
        average_latency_ms=self.AverageLatencyUs() / 1000.0,
        p99_latency_ms=max(p99s) / 1000.0 if p99s else None,
        duration_s=self.runtime_ms / 1000.0, ops=ops,
        metadata={'load_generator': LOAD_GENERATOR,
                  'percentile_merge': 'max_over_operations', **metadata})

  def Samples(self, metadata: Mapping[str, object]) -> List[sample.Sample]:
    """PKB samples: overall throughput, then per operation its count,
    average, p95 and p99 latency (µs) and one count per return code."""
    base = dict(metadata)
    samples = [
        sample.Sample('ycsb_throughput', self.throughput, 'ops/sec',
                      {**base, 'ycsb_runtime_ms': self.runtime_ms,
                       'ycsb_operations': self.total_operations})]
    for op in self.operations:
      meta = {**base, 'operation': op.name,
              'return_codes': ','.join(f'{c}={n}' for c, n in
                                       sorted(op.return_codes.items()))}
      samples.append(sample.Sample('ycsb_operations', op.operations, 'ops',
                                   meta))
      if op.operations:
        for metric, value in (('ycsb_average_latency', op.average_us),
                              ('ycsb_p95_latency', op.p95_us),
                              ('ycsb_p99_latency', op.p99_us)):
          if value is not None:
            samples.append(sample.Sample(metric, value, 'us', meta))
      for code, count in sorted(op.return_codes.items()):
        samples.append(sample.Sample('ycsb_return_count', count, 'ops',
                                     {**meta, 'return_code': code}))
    return samples
