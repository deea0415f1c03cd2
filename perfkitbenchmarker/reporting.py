"""What a person sees: a live line per probe and a summary table.

Extension seam: `ConsoleReporter` writes to any text stream (tests pass a
StringIO); a richer front end would implement the same methods.
"""

import math
from typing import IO, Optional, Sequence, Union

from perfkitbenchmarker import attribution
from perfkitbenchmarker import measurement
from perfkitbenchmarker import text_table


class ConsoleReporter:
  """Prints progress lines and the final summary."""

  def __init__(self, stream: IO[str]):
    self.stream = stream

  def Line(self, text: str) -> None:
    self.stream.write(text + '\n')
    self.stream.flush()

  def Probe(self, index: int, m: measurement.Measurement,
            cap_ms: Union[float, measurement.LatencyCap],
            role: str = 'search') -> None:
    """One probe's line: its load, throughput, average and p99 (and the
    capped percentile when that is another), and how far the capped
    statistic is from the cap ('p95 cap' when it is not the average)."""
    cap = measurement.AsCap(cap_ms)
    capped = m.LatencyMs(cap.statistic)
    distance = (None if capped is None else
                (capped - cap.ms) / cap.ms * 100)
    flags = []
    # A fixed load has no cap to be over: its line says what limited it.
    fixed = role == 'fixed'
    if not fixed and not m.UnderCap(cap):
      flags.append('OVER CAP')
    limit = attribution.Short(m.metadata)
    if limit:
      # What limited the probe (README, "What limited it"); a client limit
      # in capitals: the figure is the load generator's, not the server's.
      flags.append(limit.upper() if m.client_saturated else limit)
    elif m.client_saturated:
      flags.append('CLIENT SATURATED')
    stopped = m.metadata.get(measurement.STOPPED_AT_KEY)
    if stopped:
      # A request count that outran its time: its figure is of that time.
      flags.append(f'stopped at {stopped:g} s, slower than planned')
    if role != 'search':
      flags.append(role)
    statistics = [('avg', m.average_latency_ms), ('p99', m.p99_latency_ms)]
    if cap.statistic not in ('avg', 'p99'):
      statistics.append((cap.statistic, capped))
    latencies = '  '.join(f'{name} {_Ms(value)} ms'
                          for name, value in statistics)
    where = ''
    if not fixed:
      name = 'cap' if cap.is_average else f'{cap.statistic} cap'
      where = (f'  {name} {distance:+6.1f}%' if distance is not None else
               f'  {name}    n/a')
    self.Line(
        f'  probe {index:2d}  load {m.load.Describe():>9} '
        f'({m.load.connections:4,d} conn)  {m.throughput:>11,.0f} ops/s  '
        f'{latencies}{where}' +
        (f'  [{", ".join(flags)}]' if flags else ''))

  def CurvePoint(self, index: int, m: measurement.Measurement,
                 percent: int, offered_ops: float,
                 statistic: str = measurement.AVERAGE) -> None:
    """A latency-throughput curve's point: the rate it was offered, what
    it achieved, the cap's statistic and p99, and its limit
    (rate_not_achieved when it fell short; latency_curve.py)."""
    latencies = [(statistic, m.LatencyMs(statistic)),
                 ('p99', m.p99_latency_ms)]
    limit = attribution.Short(m.metadata)
    achieved = 100 * m.throughput / offered_ops if offered_ops else 0.0
    self.Line(
        f'  probe {index:2d}  curve {percent:2d} %  offered '
        f'{offered_ops:>9,.0f} ops/s  achieved {m.throughput:>9,.0f} ops/s '
        f'({achieved:5.1f} %)  ' +
        '  '.join(f'{name} {_Ms(ms)} ms' for name, ms in
                  dict(latencies).items()) +
        (f'  [{limit}]' if limit else ''))

  def Seconds(self, per_second: Sequence[measurement.SecondStats],
              statistic: str = measurement.AVERAGE,
              per_line: int = 10) -> None:
    """A probe's seconds, ten a line: ops/s and the cap's statistic each
    (warm-up seconds in brackets; incomplete ones left out; no latency
    where the tool gave none for the statistic)."""
    seconds = [s for s in per_second if s.complete]
    for start in range(0, len(seconds), per_line):
      chunk = seconds[start:start + per_line]
      cells = []
      for s in chunk:
        ms = s.LatencyMs(statistic)
        text = f'{s.ops / 1000:.1f}k' + ('' if ms is None else f'/{ms:.2f}')
        cells.append(f'[{text}]' if s.warmup else text)
      self.Line(f'  s{chunk[0].second:>3}-{chunk[-1].second:<3} '
                + ' '.join(cells) + (
                    f'  (ops/s / {measurement.StatisticName(statistic)} ms)'
                    if not start else ''))

  def Summary(self, rows: Sequence[dict]) -> None:
    """The answers' table. A row's `cap_statistic` (default avg) says which
    latency its figure is capped on; that column's header says 'cap', and
    a capped percentile other than p99 gets a column of its own."""
    statistics = {r.get('cap_statistic') or 'avg' for r in rows}
    extra = sorted(statistics - {'avg', 'p99'})
    latency_headers = [
        f'{name} ms' + (' (cap)' if name in statistics and
                        statistics != {'avg'} else '')
        for name in ['avg', 'p99'] + extra]
    headers = ('machine type', 'capped ops/s', *latency_headers, '$/hr',
               'ops/s per $/hr', 'price basis', 'verdict', 'limit')
    table = [(
        r['machine_type'],
        _Num(r.get('throughput'), '{:,.0f}') + (
            '' if r.get('throughput_ci95') is None else
            f' ± {r["throughput_ci95"]:,.0f}'),
        _Num(r.get('average_latency_ms'), '{:.3f}'),
        _Num(r.get('p99_latency_ms'), '{:.3f}'),
        *[_Num(r.get('capped_latency_ms') if r.get('cap_statistic') == name
               else None, '{:.3f}') for name in extra],
        _Num(r.get('usd_per_hour'), '{:.4f}'),
        _Num(r.get('price_performance'), '{:,.0f}'),
        r.get('price_basis', ''),
        r.get('verdict', ''),
        r.get('limit', ''),
    ) for r in rows]
    self.Line('')
    right = tuple(range(1, 6 + len(extra)))
    for line in text_table.Lines(headers, table, right=right):
      self.Line(line)


def _Ms(value: Optional[float]) -> str:
  return '   n/a' if value is None else f'{value:6.3f}'


def _Num(value: Optional[float], fmt: str) -> str:
  if value is None or (isinstance(value, float) and math.isnan(value)):
    return 'n/a'
  return fmt.format(value)

