"""The memtier replay stand-in's outputs: memtier's JSON and stdout table.

Part of tests/memtier_replay.py (see its docstring): the measured document
of a request-count run, the replayed document of a timed or staircase run
(from the recordings in tests/data), and memtier's ALL STATS table. The
seam: nothing here opens a connection.
"""

import json
import math
import os

from hdrh import histogram as hdrh_histogram

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data')


def _PercentileKeys(s, latencies):
  ordered = sorted(latencies)
  if not ordered:
    return {}
  at = lambda p: min(len(ordered) - 1, math.ceil(p / 100 * len(ordered)) - 1)
  return {f'p{p:.2f}': round(ordered[at(p)], 3) for p in s['percentiles']}


def _AskedPercentiles(s, source):
  """The whole run's percentiles memtier would print for --print-percentiles:
  the recording's own value where it printed that percentile, else the
  value at that percentile of the recording's HDR histogram (microseconds),
  chosen as memtier's hdr_value_at_percentile chooses it."""
  recorded = {k: v for k, v in source.items() if k.startswith('p')}
  encoded = source.get('Histogram log format', {}).get('Compressed Histogram')
  histogram = hdrh_histogram.HdrHistogram.decode(encoded) if encoded else None
  asked = {}
  for p in s['percentiles']:
    key = f'p{p:.2f}'
    if key in recorded:
      asked[key] = recorded[key]
    elif histogram is not None:
      asked[key] = round(histogram.get_value_at_percentile(p) / 1000, 3)
  return asked


def _Section(count, duration_ms, accumulated, hits, percentiles, series,
             lo=None, hi=None, histogram=None):
  rate = count / (duration_ms / 1000) if duration_ms else 0.0
  latencies = dict(percentiles)
  if histogram:
    latencies['Histogram log format'] = histogram
  return {'Count': count, 'Ops/sec': round(rate, 2),
          'Hits/sec': round(hits / (duration_ms / 1000), 2) if duration_ms
          else 0.0, 'Misses/sec': 0.0, 'Connection Errors/sec': 0.0,
          'Connection Errors': 0,
          'Latency': round(accumulated / count, 3) if count else 0.0,
          'Average Latency': round(accumulated / count, 3) if count else 0.0,
          'Accumulated Latency': int(accumulated), 'Min Latency': lo or 0.0,
          'Max Latency': hi or 0.0, 'Time-Serie': series,
          'Percentile Latencies': latencies}


def _Series(measured):
  series = {}
  for latency, second in measured:
    entry = series.setdefault(str(second),
                              {'Count': 0, 'Accumulated Latency': 0.0})
    entry['Count'] += 1
    entry['Accumulated Latency'] += latency
  for entry in series.values():
    entry['Average Latency'] = round(
        entry['Accumulated Latency'] / entry['Count'], 3)
    entry['Accumulated Latency'] = int(entry['Accumulated Latency'])
  return series


def MeasuredDoc(s, stats, hits, start, finish):
  duration_ms = max(1, int((finish - start) * 1000))
  out = {}
  for name, measured in (('Sets', stats[True]), ('Gets', stats[False]),
                         ('Totals', stats[True] + stats[False])):
    lat = [latency for latency, _ in measured]
    out[name] = _Section(len(lat), duration_ms, sum(lat),
                         0 if name == 'Sets' else hits,
                         _PercentileKeys(s, lat), _Series(measured),
                         min(lat, default=0), max(lat, default=0))
  return out, duration_ms


def _Recording(s):
  """The recording nearest to this run's shape."""
  connections = s['threads'] * s['clients']
  if s['cluster']:
    options = {32: 'cluster3_t1c32_tt5_under1ms',
               64: 'cluster3_t1c64_tt5_over1ms'}
  elif s['threads'] >= 2:
    options = {32: 'single_t2c16_tt5_durationbug',
               256: 'single_t1c256_tt5_over1ms'}
  else:
    options = {32: 'single_t1c32_tt5_under1ms',
               256: 'single_t1c256_tt5_over1ms'}
  near = min(options, key=lambda c: abs(math.log(connections / c)))
  with open(os.path.join(DATA, f'memtier_{options[near]}.json')) as f:
    return options[near], json.load(f), near


def LimitedPerSecond(s):
  """Requests a second one process's connections may send under
  --rate-limiting, as memtier's limiter lets them (None: no limit): each
  connection wakes up to 50 times a second and sends ceil(rate / 50)
  requests a wake-up, so 75 a second is 37 wake-ups of 2, 74 in all; a
  cluster client has a connection, and a limit, per master."""
  if not s.get('rate'):
    return None
  burst = -(-s['rate'] // 50)
  return (burst * (s['rate'] // burst) * s['threads'] * s['clients'] *
          s.get('masters', 1))


def ReplayedDoc(s):
  limited = LimitedPerSecond(s)
  if 'staircase' in s:
    name = 'single_staircase_c16-256_step16_2s'
    with open(os.path.join(DATA, f'memtier_{name}.json')) as f:
      doc = json.load(f)
    recorded_connections = None
  else:
    name, doc, recorded_connections = _Recording(s)
  stats = doc['ALL STATS']
  series = {int(k): v for k, v in stats['Totals']['Time-Serie'].items()}
  rec_time = doc['configuration']['test_time']
  full = [series[k] for k in range(rec_time)]
  seconds = []
  for second in range(s['test_time']):
    if 'staircase' in s:
      start, step, dur = s['staircase']
      conns = min(start + step * (second // dur), s['clients']) * s['threads']
      j = min(15, max(0, round(conns / 16) - 1))
      seconds.append((full[2 * j + second % 2], min(1.0, conns / 16)))
    else:
      conns = s['threads'] * s['clients']
      seconds.append((full[second % rec_time],
                      min(1.0, conns / recorded_connections)))
  tail = series.get(rec_time)
  if tail and 'staircase' not in s:
    seconds.append((tail, 1.0))
  sets, gets = s['ratio']
  share = {'Sets': sets / (sets + gets or 1), 'Gets': gets / (sets + gets or 1)}
  # memtier's span: the test time plus the recording's tail (replies in
  # flight) and whole-second error (memtier_results._RealDuration).
  rec_ms = stats['Runtime']['Total duration']
  duration_ms = s['test_time'] * 1000 + rec_ms - rec_time * 1000
  out = {}
  for name_ in ('Sets', 'Gets', 'Totals'):
    part = share.get(name_, 1.0)
    ts, count, acc = {}, 0, 0.0
    for i, (entry, scale) in enumerate(seconds):
      n = int(entry['Count'] * scale * part)
      if limited is not None:  # Never more than the limiter lets out.
        n = min(n, int(limited * part))
      a = entry['Accumulated Latency'] * n / entry['Count'] if entry[
          'Count'] else 0
      ts[str(i)] = dict(entry, Count=n, **{'Accumulated Latency': int(a)})
      ts[str(i)].pop('Bytes RX', None), ts[str(i)].pop('Bytes TX', None)
      count, acc = count + n, acc + a
    source = stats['Totals' if part == 1.0 else name_]['Percentile Latencies']
    out[name_] = _Section(
        count, duration_ms, acc, count if name_ == 'Gets' else 0,
        _AskedPercentiles(s, source), ts,
        stats['Totals']['Min Latency'], stats['Totals']['Max Latency'],
        source.get('Histogram log format') if count else None)
  mixed = sets and gets
  if mixed:  # memtier's JSON truncates these to whole ms in mixed runs.
    for key in ('Latency', 'Average Latency'):
      out['Totals'][key] = float(int(out['Totals'][key]))
  out['Totals']['Hits/sec'] = out['Gets']['Hits/sec']
  return out, duration_ms, name


def Document(s, sections, duration_ms, start, recording):
  config = {'server': s['host'], 'port': s['port'], 'clients': s['clients'],
            'threads': s['threads'], 'test_time': s['test_time'] or 0,
            'requests': s['requests'] or 0, 'ratio': '%d:%d' % s['ratio'],
            'pipeline': s['pipeline'], 'data_size': s['data_size'],
            'key_prefix': s['prefix'], 'key_minimum': s['key_min'],
            'key_maximum': s['key_max'], 'key_pattern': ':'.join(s['pattern']),
            'key_stddev': s['stddev'], 'key_median': s['median'],
            'authenticate': s['auth'] or '', 'cluster_mode': s['cluster']}
  start_ms = int(start * 1000)
  sections['Waits'] = {'Count': 0}
  return {'configuration': config,
          'run information': {'Threads': s['threads'],
                              'Connections per thread': s['clients'],
                              'Replayed recording': recording,
                              'Format version': 2},
          'ALL STATS': dict(Runtime={
              'Start time': start_ms, 'Finish time': start_ms + duration_ms,
              'Total duration': duration_ms, 'Time unit': 'MILLISECONDS',
              'Interrupted': 'false'}, **sections)}


def Table(s, doc):
  stats = doc['ALL STATS']
  keys = [f'p{p:.2f}' for p in s['percentiles']]
  head = ['Ops/sec', 'Hits/sec', 'Misses/sec'] + (
      ['MOVED/sec', 'ASK/sec'] if s['cluster'] else []) + ['Avg. Latency'] + [
          f'p{p:g} Latency' for p in s['percentiles']] + ['KB/sec']
  lines = [f"{s['threads']:<10d}Threads",
           f"{s['clients']:<10d}Connections per thread",
           f"{s['test_time']:<10d}Seconds" if s['test_time'] else
           f"{s['requests']:<10d}Requests per client", '', '', 'ALL STATS',
           '=' * 120, 'Type    ' + ''.join(f'{h:>16s}' for h in head),
           '-' * 120]
  for name in ('Sets', 'Gets', 'Totals'):
    sec = stats[name]
    count = sec['Count'] or 0
    avg = sec['Accumulated Latency'] / count if count else None
    cells = [sec['Ops/sec'], sec['Hits/sec'], 0.0] + (
        [0.0, 0.0] if s['cluster'] else []) + [avg] + [
            sec['Percentile Latencies'].get(k) if count else None
            for k in keys] + [sec['Ops/sec'] * s['data_size'] / 1024]
    first = 5 if s['cluster'] else 3  # Avg. Latency, then percentiles.
    lines.append(f'{name:<8s}' + ''.join(
        f'{"---":>16s}' if c is None else
        f'{c:>16.5f}' if first <= i <= first + len(keys) else f'{c:>16.2f}'
        for i, c in enumerate(cells)))
  return '\n'.join(lines) + '\n'
