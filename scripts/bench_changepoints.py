#!/usr/bin/env python3
"""Measures the change-point detector's detection and false-alarm rates.

  ./scripts/bench_changepoints.py [--histories=150] [--max_seconds=100]

Histories are generated from the real runs in tests/data/history
(tests/synthetic_history.py): 30 nights, each cell with its own
night-to-night noise of 2-3 % (normal), prices constant. Half the histories
have a 10 % drop in one cell (round robin) from a random night; the other
half are noise only. Every history goes through the same HistoryPoints ->
Detect path as scripts/compare.py, with compare's default settings unless
flags say otherwise.

Reported:
  detection rate   step histories whose stepped cell's capped-throughput
                   series has a regression at exactly the step night (and,
                   separately, within one night of it), overall and by how
                   many nights of data follow the step;
  false alarms     noise-only series (cell x metric with noise) with any
                   change point, and noise-only histories with any; plus
                   change points in the unstepped cells of step histories.
The LAST line is: detection_pct=<exact> false_alarm_series_pct=<...>
false_alarm_history_pct=<...>. Stops early at --max_seconds.
"""

import collections
import os
import sys
import time
import warnings

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(_HERE)
sys.path.insert(0, _REPO)

# pylint: disable=g-import-not-at-top,wrong-import-position
from perfkitbenchmarker import venv_reexec
venv_reexec.UseRepoVenv(_REPO, __file__)

from absl import app
from absl import flags
from absl import logging
import numpy as np

from perfkitbenchmarker.results_history import changepoints
from perfkitbenchmarker.results_history import leaderboard
from perfkitbenchmarker.results_history import loader
from perfkitbenchmarker.results_history import nights
sys.path.insert(0, os.path.join(_REPO, 'tests'))  # Synthetic histories.
import synthetic_history as synthetic

flags.DEFINE_integer('histories', 150, 'Histories of each kind (step, noise).',
                     lower_bound=1)
# A step falls on a night from the 4th to the last but one.
flags.DEFINE_integer('nights', 30, 'Nights per history.', lower_bound=5)
flags.DEFINE_float('step_pct', -10.0, 'Step size in percent.')
flags.DEFINE_float('max_seconds', 100.0, 'Stop after this long.')
# compare.py's bounds.
flags.DEFINE_float('max_pvalue', 1e-4, 'As compare.py --max_pvalue.',
                   lower_bound=0.0, upper_bound=1.0)
flags.DEFINE_float('noise_multiple', 2.0, 'As compare.py --noise_multiple.',
                   lower_bound=0.0, upper_bound=1000.0)
flags.DEFINE_integer('seed', 0, 'Seed of the whole benchmark.')
FLAGS = flags.FLAGS

NOISY_METRICS = ('latency_capped_throughput', 'price_performance',
                 'p99_latency_ms')
TARGET = 'latency_capped_throughput'
HISTORY = os.path.join(_REPO, 'tests', 'data', 'history')


def _Pct(part, whole):
  return 100.0 * part / whole if whole else float('nan')


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)  # Otava logs every series at INFO.
  warnings.simplefilter('ignore', RuntimeWarning)
  started = time.monotonic()
  templates = synthetic.TemplateRuns(
      leaderboard.Prepare(loader.Load([HISTORY])))
  cells = sorted(templates['cell'].unique())
  rng = np.random.default_rng(FLAGS.seed)

  def Detect(spec):
    history = nights.AssignNights(synthetic.Generate(templates, spec))
    # The recorded runs are client-bound on 2 cores; the detector is judged
    # on them all, as compare --include_unconfirmed would.
    points = changepoints.HistoryPoints(history, include_unconfirmed=True)
    found = changepoints.Detect(points, max_pvalue=FLAGS.max_pvalue,
                                noise_multiple=FLAGS.noise_multiple)
    return nights.Nights(history), found

  exact = near = steps = other_cells_flagged = 0
  by_after = collections.defaultdict(lambda: [0, 0])  # nights after: hit, n
  noise_histories = noise_flagged_histories = noise_flagged_series = 0
  for i in range(FLAGS.histories):
    if time.monotonic() - started > FLAGS.max_seconds:
      print(f'stopped at the time limit after {i} pairs', file=sys.stderr)
      break
    cell = cells[i % len(cells)]
    step_night = int(rng.integers(3, FLAGS.nights - 1))
    labels, found = Detect(synthetic.HistorySpec(
        nights=FLAGS.nights, step_cell=cell, step_night=step_night,
        step=FLAGS.step_pct / 100.0, seed=int(rng.integers(1 << 31))))
    hits = [labels.index(c.night) for c in found
            if c.cell == cell and c.metric == TARGET and c.regression]
    steps += 1
    after = FLAGS.nights - step_night
    bucket = '1-2' if after <= 2 else '3-5' if after <= 5 else '6+'
    by_after[bucket][1] += 1
    if step_night in hits:
      exact += 1
      by_after[bucket][0] += 1
    elif any(abs(h - step_night) <= 1 for h in hits):
      near += 1
    other_cells_flagged += len({(c.cell, c.metric) for c in found
                                if c.cell != cell})
    _, found = Detect(synthetic.HistorySpec(
        nights=FLAGS.nights, seed=int(rng.integers(1 << 31))))
    noise_histories += 1
    flagged = {(c.cell, c.metric) for c in found}
    noise_flagged_series += len(flagged)
    noise_flagged_histories += bool(flagged)

  if not steps:  # --max_seconds passed before the first pair.
    print(f'bench_changepoints: no history measured in --max_seconds='
          f'{FLAGS.max_seconds:g}', file=sys.stderr)
    return 1
  noise_series = noise_histories * len(cells) * len(NOISY_METRICS)
  other_series = steps * (len(cells) - 1) * len(NOISY_METRICS)
  print(f'{steps} step histories and {noise_histories} noise-only histories, '
        f'{FLAGS.nights} nights, {len(cells)} cells, step '
        f'{FLAGS.step_pct:+g}%, noise 2-3%, max_pvalue {FLAGS.max_pvalue:g}, '
        f'noise_multiple {FLAGS.noise_multiple:g}; '
        f'{time.monotonic() - started:.0f} s')
  print(f'detected at the exact night: {exact}/{steps} '
        f'({_Pct(exact, steps):.1f}%); within one night: '
        f'{exact + near}/{steps} ({_Pct(exact + near, steps):.1f}%)')
  for bucket in ('1-2', '3-5', '6+'):
    hit, total = by_after[bucket]
    print(f'  step with {bucket} nights of data from the step on: '
          f'{hit}/{total} ({_Pct(hit, total):.1f}%) exact')
  print(f'false alarms, noise-only series: {noise_flagged_series}/'
        f'{noise_series} ({_Pct(noise_flagged_series, noise_series):.2f}%); '
        f'noise-only histories with any: {noise_flagged_histories}/'
        f'{noise_histories} '
        f'({_Pct(noise_flagged_histories, noise_histories):.1f}%); '
        f'unstepped series of step histories: {other_cells_flagged}/'
        f'{other_series} ({_Pct(other_cells_flagged, other_series):.2f}%)')
  print(f'detection_pct={_Pct(exact, steps):.1f} '
        f'false_alarm_series_pct={_Pct(noise_flagged_series, noise_series):.2f}'
        f' false_alarm_history_pct='
        f'{_Pct(noise_flagged_histories, noise_histories):.1f}')


if __name__ == '__main__':
  # absl's --help exits 1, as a failure; a help asked for is not one.
  if any(a in ('-h', '--help', '--helpshort', '--helpfull')
         for a in sys.argv[1:]):
    app.usage(shorthelp=True, writeto_stdout=True, exitcode=0)
  app.run(main)
