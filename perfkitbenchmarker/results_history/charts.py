"""Charts of the history views, as PNG `Chart`s (bytes + alt text).

matplotlib's object API on the Agg canvas (no pyplot state): charts render
without a display and in any order. Text is 10 pt or more on an 8-inch
figure so a narrow screen can scale it down; an unconfirmed answer is drawn
hollow and hatched, never like one that counts. `...Figure` functions return
the figure (tests read its artists); the chart's own name renders it.
"""

import base64
import dataclasses
import io
import textwrap
from typing import Dict, Iterable, List, Optional, Sequence

import pandas as pd

from perfkitbenchmarker import terminal_text
from perfkitbenchmarker import verdict as verdict_lib
from perfkitbenchmarker.results_history import answers as answers_lib
from perfkitbenchmarker.results_history import changepoints as cp_lib
from perfkitbenchmarker.results_history import nights

COLORS = ('#1f77b4', '#ff7f0e', '#2ca02c', '#9467bd', '#8c564b', '#e377c2',
          '#17becf', '#bcbd22', '#7f7f7f', '#d62728')
REGRESSION_COLOR = '#d62728'
IMPROVEMENT_COLOR = '#2ca02c'
DPI = 100
WIDTH_IN = 8.0    # 800 px: shown unscaled on a laptop, ~0.9x at 800 px
FONT = 10         # points; nothing smaller
TITLE_CHARS = 46  # a subplot title wraps here (two panels side by side)
UNCONFIRMED_HATCH = '//'
# Metadata the charts read.
METADATA_KEYS = ('probe_index', 'connections', 'latency_cap_ms', 'probe_role',
                 'confirmed_average_latency_ms', 'average_latency_ms',
                 'p99_latency_ms', 'curve_percent', 'offered_ops_per_s',
                 'rate_achieved_pct', 'latency_cap_statistic',
                 'capped_latency_ms')
CURVE_ROLE = 'curve'  # latency_curve.ROLE: a curve point's probe role


@dataclasses.dataclass(frozen=True)
class Chart:
  png: bytes
  alt: str
  key: str = ''  # what it shows, e.g. the metric of a history chart

  @property
  def data_uri(self) -> str:
    return 'data:image/png;base64,' + base64.b64encode(self.png).decode()


def NewFigure(**kwargs):
  """A matplotlib Figure (no pyplot state)."""
  # Here, not at the top: matplotlib takes about a second to import, which
  # compare's text board and its refusals never need.
  from matplotlib import figure as mpl_figure  # pylint: disable=g-import-not-at-top
  return mpl_figure.Figure(**kwargs)


def Png(fig, alt: str) -> Chart:
  """The figure as a PNG, cropped to what it draws (a legend above the
  axes too) and drawn once: savefig's bbox_inches='tight', and any layout
  engine (tight_layout leaves a placeholder), first draw the whole figure
  to find that box, which get_tightbbox finds without drawing (the same
  bytes)."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  from matplotlib.backends import backend_agg  # pylint: disable=g-import-not-at-top
  canvas = backend_agg.FigureCanvasAgg(fig)
  fig.set_layout_engine(None)
  fig.set_dpi(DPI)
  box = fig.get_tightbbox(canvas.get_renderer()).padded(
      matplotlib.rcParams['savefig.pad_inches'])
  buffer = io.BytesIO()
  fig.savefig(buffer, format='png', dpi=DPI, bbox_inches=box,
              facecolor='white')
  return Chart(buffer.getvalue(), alt)


def CellColors(cell_names: Iterable[str]) -> Dict[str, str]:
  """One colour per cell, by sorted name, for every chart of a page."""
  return {cell: COLORS[i % len(COLORS)]
          for i, cell in enumerate(sorted(set(cell_names)))}


def Color(colors: Optional[Dict[str, str]], cell: str, i: int) -> str:
  if colors and cell in colors:
    return colors[cell]
  return COLORS[i % len(COLORS)]


def ReadableTicks(axis, values: Iterable[float]) -> None:
  """Tick labels as precise as their spacing: 27.5k, 30k, 32.5k (SI
  prefixes) for figures in the thousands, matplotlib's plain labels (whose
  decimals follow the step) below; never a rounding that labels two ticks
  alike or a tick as another value."""
  from matplotlib import ticker  # pylint: disable=g-import-not-at-top
  values = [abs(float(v)) for v in values if not pd.isna(v)]
  if values and max(values) >= 1000:
    axis.set_major_formatter(ticker.EngFormatter(sep=''))
  else:
    axis.set_major_formatter(ticker.ScalarFormatter(useOffset=False))


def _Nothing(fig, text: str) -> None:
  """The figure's one panel: `text` where the chart would be."""
  ax = fig.add_subplot()
  ax.text(0.5, 0.5, text, ha='center', fontsize=FONT)
  ax.set_axis_off()


def LegendAbove(fig, handles, labels, columns: int) -> None:
  """One legend for the figure, above its panels: never on the data."""
  fig.legend(handles, labels, loc='lower left', bbox_to_anchor=(0.0, 1.0),
             ncol=columns, fontsize=FONT - 1, frameon=False,
             handletextpad=0.4, columnspacing=1.2)


def ShortLabels(rows: pd.DataFrame,
                dimensions: Sequence[str] = ('engine', 'topology',
                                             'workload')) -> Dict[str, str]:
  """cell -> a label naming only the cell dimensions that vary (of the
  machine type and `dimensions`)."""
  parts = ['machine_type']
  for column in dimensions:
    if rows[column].nunique() > 1:
      parts.append(column)
  unique = rows.drop_duplicates('cell')
  # Drawn text (never mathtext: a machine type may hold '$...$'), and
  # matplotlib's warnings about glyphs it lacks reach the terminal: what
  # the samples said is made inert first.
  return {row['cell']: terminal_text.ChartText(
      ' | '.join(str(row[p]) for p in parts)) for _, row in unique.iterrows()}


BARS_XLABEL = 'ops/s per $/hr (server VMs); bars: 95 % interval'


def PricePerformanceBarsFigure(board: pd.DataFrame,
                               colors: Optional[Dict[str, str]] = None):
  """Bars of ops/s per $/hr, best on top, 95 % error bars, each labelled
  with its figure and verdict inside the frame; unconfirmed rows hatched.

  A night of more than one workload (cells.py: mix, keys, cap and the
  statistic it caps, load generator) has one panel per workload, in the
  board's order, each with its own axis and its own best, as the
  leaderboard ranks them: a p99-capped answer's bar is never drawn beside
  an average-capped one's on one scale. One workload: one panel."""
  workloads = list(dict.fromkeys(board['workload'].astype(str)))
  night = board['night'].iloc[0]
  if len(workloads) <= 1:
    names = ['\n'.join(textwrap.wrap(n, 34))
             for n in ShortLabels(board).values()]
    fig = NewFigure(figsize=(WIDTH_IN, 0.62 * len(board) + 1.4))
    ax = fig.add_subplot()
    texts, ends = _Bars(ax, board, names, colors, range(len(board)))
    ax.set_xlabel(terminal_text.ChartText(BARS_XLABEL), fontsize=FONT)
    ax.set_title(terminal_text.ChartText(
        f'Price-performance, night {night}'), loc='left', fontsize=FONT + 2)
    ax.set_xlim(0, _Longest(ends) * 1.05)
    _FitLabels(fig, ax, texts, ends)
    return fig
  # The panel's title names the workload: the bars' labels need not.
  labels = ShortLabels(board, ('engine', 'topology'))
  where = board['workload'].astype(str).to_numpy()
  counts = [int((where == w).sum()) for w in workloads]
  fig = NewFigure(figsize=(WIDTH_IN, sum(0.62 * n + 1.3 for n in counts)
                           + 0.4))
  grid = fig.add_gridspec(len(workloads), 1, height_ratios=counts)
  panels = []
  for i, workload in enumerate(workloads):
    ax = fig.add_subplot(grid[i])
    positions = [j for j, w in enumerate(where) if w == workload]
    rows = board.iloc[positions]
    names = ['\n'.join(textwrap.wrap(labels[c], 34)) for c in rows['cell']]
    texts, ends = _Bars(ax, rows, names, colors, positions)
    for text in texts:  # Fitted into the frame below, once laid out.
      text.set_in_layout(False)
    title = '\n'.join(textwrap.wrap(terminal_text.ChartText(
        f'workload {workload}'), 90))
    if i == 0:
      title = terminal_text.ChartText(
          f'Price-performance, night {night}, best of each workload'
      ) + '\n' + title
    ax.set_title(title, loc='left', fontsize=FONT + 1)
    if i == len(workloads) - 1:
      ax.set_xlabel(terminal_text.ChartText(BARS_XLABEL), fontsize=FONT)
    ax.set_xlim(0, _Longest(ends) * 1.05)
    panels.append((ax, texts, ends))
  fig.tight_layout()
  for ax, texts, ends in panels:
    _FitLabels(fig, ax, texts, ends)
  return fig


def _Longest(ends: Sequence[float]) -> float:
  """The longest bar's end (an unpriced row has none; 1 if none has)."""
  return max((e for e in ends if not pd.isna(e)), default=1.0)


def _Bars(ax, board: pd.DataFrame, names: Sequence[str],
          colors: Optional[Dict[str, str]], positions: Iterable[int]):
  """`board`'s bars on `ax`, best on top (`positions`: each row's place on
  the whole board, for its fallback colour); (labels, bar ends)."""
  y = list(range(len(board)))[::-1]
  errors = board['price_performance_ci95'].fillna(0)
  ends = (board['price_performance'] + errors).tolist()
  texts = []
  for i, yy, value, error, verdict, answer, cell in zip(
      positions, y, board['price_performance'], errors, board['verdict'],
      board['answer_verdict'], board['cell']):
    color = Color(colors, cell, i)
    confirmed = answer == verdict_lib.CONFIRMED
    ax.barh(yy, value, xerr=error, height=0.6,
            color=color if confirmed else 'white', edgecolor=color,
            hatch=None if confirmed else UNCONFIRMED_HATCH, linewidth=1.5,
            error_kw={'capsize': 4, 'ecolor': '#333333'})
    note = verdict if confirmed else f'{verdict}; UNCONFIRMED'
    texts.append(ax.annotate(
        f'{value:,.0f}\n{note}', (ends[len(texts)], yy), xytext=(5, 0),
        textcoords='offset points', va='center', ha='left', fontsize=FONT,
        color='#111111', annotation_clip=False))
  ax.set_yticks(y)
  ax.set_yticklabels(names, fontsize=FONT)
  ReadableTicks(ax.xaxis, ends)
  ax.tick_params(labelsize=FONT)
  ax.grid(axis='x', alpha=0.3)
  return texts, ends


def _FitLabels(fig, ax, texts, ends: Sequence[float]) -> None:
  """Widens the x axis until every label (a fixed width in pixels, placed
  after its bar's end) ends inside the frame: the axis spans W pixels for
  x_max, so a label of w pixels after `end` fits when
  end + (w + pad) * x_max / W <= x_max."""
  from matplotlib.backends import backend_agg  # pylint: disable=g-import-not-at-top
  renderer = backend_agg.FigureCanvasAgg(fig).get_renderer()
  width = ax.get_window_extent(renderer).width
  pad = 12.0  # pixels: the 5-point offset and a margin before the frame
  need = ax.get_xlim()[1]
  for text, end in zip(texts, ends):
    share = (text.get_window_extent(renderer).width + pad) / width
    if share < 0.9:
      need = max(need, end / (1.0 - share))
  ax.set_xlim(0, need)


def PricePerformanceBars(board: pd.DataFrame,
                         colors: Optional[Dict[str, str]] = None) -> Chart:
  panels = board['workload'].nunique() > 1
  return Png(PricePerformanceBarsFigure(board, colors),
             'Bar chart of ops/s per $/hr per machine type with 95 % error '
             'bars' + ('; one panel per workload, each on its own axis'
                       if panels else '') + '; hatched bars are not '
             'confirmed')


def ProbePairs(night_frame: pd.DataFrame) -> pd.DataFrame:
  """One row per probe: throughput, average latency, connections, cell."""
  probes = night_frame[night_frame['metric'].isin(
      ['throughput', 'average_latency'])]
  if (probes.empty or 'probe_index' not in probes.columns or
      probes['metric'].nunique() < 2):  # No pairs without both metrics.
    return pd.DataFrame(columns=['cell', 'run_uri', 'probe_index',
                                 'throughput', 'average_latency'])
  if 'probe_role' in probes.columns:  # The curve's points: LatencyCurves.
    probes = probes[probes['probe_role'] != CURVE_ROLE]
  return _Paired(probes, ('connections', 'latency_cap_ms', 'probe_role'))


def _Paired(probes: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
  """One row per probe of `probes` (its throughput and average_latency
  samples side by side) with its metadata `columns` that were recorded."""
  keys = ['cell', 'run_uri', 'probe_index']
  wide = probes.pivot_table(index=keys, columns='metric', values='value',
                            aggfunc='mean').reset_index()
  pair = ['throughput', 'average_latency']
  if not set(pair) <= set(wide.columns):
    # No probe with both (a probe_index of 1e400 is not recorded, and the
    # pivot leaves out rows without one): no pairs, not a KeyError.
    return pd.DataFrame(columns=keys + pair)
  extra = probes.drop_duplicates(keys)[keys + [
      c for c in columns if c in probes.columns]]
  wide = wide.merge(extra, on=keys, how='left')
  return wide.dropna(subset=pair)


def _AnswerColumn(night_frame: pd.DataFrame, column: str) -> pd.DataFrame:
  """run_uri, cell and `column` (as a number) of each run's answer."""
  return answers_lib.PerRun(
      night_frame[night_frame['metric'] == answers_lib.CAPPED], {column: column})


def AnswerLoads(night_frame: pd.DataFrame) -> pd.DataFrame:
  """run_uri, cell, connections: the load each run's answer was found at."""
  return _AnswerColumn(night_frame, 'connections').dropna()


def AtAnswerLoad(mine: pd.DataFrame, loads: pd.DataFrame) -> pd.Series:
  """Which probes ran at their run's answer load (the repeats it rests on)."""
  if mine.empty or loads.empty or 'connections' not in mine.columns:
    return pd.Series(False, index=mine.index)
  keys = set(zip(loads['run_uri'].astype(str), loads['cell'],
                 loads['connections'].astype(float)))
  return pd.Series([(str(r), c, float(n)) in keys for r, c, n in zip(
      mine['run_uri'], mine['cell'], mine['connections'])], index=mine.index)


PROBE_LABEL = 'probe'
ANSWER_LOAD_LABEL = "probe at the run's answer load"
CONFIRMED_LABEL = 'answer (confirmed)'
UNCONFIRMED_LABEL = 'UNCONFIRMED answer (not counted)'


def _AnswerHandles(confirmed_color: str) -> list:
  """Legend handles of a confirmed answer's star (in `confirmed_color`)
  and an unconfirmed one's (white, red-edged), as the charts draw them."""
  from matplotlib import lines as mpl_lines  # pylint: disable=g-import-not-at-top
  return [
      mpl_lines.Line2D([], [], marker='*', markersize=14,
                       color=confirmed_color, markeredgecolor='black',
                       linestyle='none'),
      mpl_lines.Line2D([], [], marker='*', markersize=15,
                       markerfacecolor='white',
                       markeredgecolor=REGRESSION_COLOR, markeredgewidth=1.6,
                       linestyle='none')]


def ProbeCurvesFigure(night_frame: pd.DataFrame,
                      colors: Optional[Dict[str, str]] = None,
                      answers: Optional[pd.DataFrame] = None):
  """Throughput vs average latency of each cell's probes, cap drawn
  (`answers`: answers.RunAnswers(night_frame), if already made).

  Points, not a line (the search tries loads out of order); probes at a
  run's answer load ringed. A run's answer is a star: black when confirmed,
  else white-filled (hiding the dot under it) with a dashed red edge and
  "unconfirmed" beside it.
  """
  from matplotlib import lines as mpl_lines  # pylint: disable=g-import-not-at-top
  pairs = ProbePairs(night_frame)
  labels = ShortLabels(night_frame)
  cells = [c for c in labels if c in set(pairs['cell'])]
  columns = 2 if len(cells) > 1 else 1
  rows = max(1, (len(cells) + columns - 1) // columns)
  fig = NewFigure(figsize=(WIDTH_IN, 3.6 * rows + 0.3))
  if answers is None:
    answers = answers_lib.RunAnswers(night_frame)
  loads = AnswerLoads(night_frame)
  caps = set()
  for i, cell in enumerate(cells):
    ax = fig.add_subplot(rows, columns, i + 1)
    mine = pairs[pairs['cell'] == cell]
    color = Color(colors, cell, i)
    at_answer = AtAnswerLoad(mine, loads)
    ax.scatter(mine.loc[~at_answer, 'throughput'],
               mine.loc[~at_answer, 'average_latency'], s=16, color=color,
               alpha=0.55, linewidths=0, zorder=2, label=PROBE_LABEL)
    ax.scatter(mine.loc[at_answer, 'throughput'],
               mine.loc[at_answer, 'average_latency'], s=46, color=color,
               edgecolors='#1a202c', linewidths=1.0, zorder=3,
               label=ANSWER_LOAD_LABEL)
    cap = mine.get('latency_cap_ms', pd.Series(dtype=float)).dropna()
    if not cap.empty:
      caps.add(float(cap.iloc[0]))
      ax.axhline(float(cap.iloc[0]), color=REGRESSION_COLOR, linestyle='--',
                 linewidth=1, zorder=1, label='latency cap')
    chosen = answers[answers['cell'] == cell]
    confirmed = chosen['verdict'] == verdict_lib.CONFIRMED
    if confirmed.any():
      ax.scatter(chosen.loc[confirmed, 'capped_ops'],
                 chosen.loc[confirmed, 'avg_latency_ms'], marker='*', s=260,
                 color='black', edgecolors='white', linewidths=0.8,
                 zorder=5, label=CONFIRMED_LABEL)
    if (~confirmed).any():
      ax.scatter(chosen.loc[~confirmed, 'capped_ops'],
                 chosen.loc[~confirmed, 'avg_latency_ms'], marker='*', s=300,
                 facecolors='white', edgecolors=REGRESSION_COLOR,
                 linewidths=1.6, linestyles='--', zorder=6,
                 label=UNCONFIRMED_LABEL)
      (low, high), (bottom, top) = ax.get_xlim(), ax.get_ylim()
      for x, y in zip(chosen.loc[~confirmed, 'capped_ops'],
                      chosen.loc[~confirmed, 'avg_latency_ms']):
        # Towards the middle of the panel, so the word stays inside the
        # frame; on a white ground, so probe dots under it do not hide it.
        left = x > (low + high) / 2
        down = y > (bottom + top) / 2
        ax.annotate('unconfirmed', (x, y),
                    xytext=(-8 if left else 8, -9 if down else 9),
                    textcoords='offset points', fontsize=FONT - 1,
                    ha='right' if left else 'left',
                    va='top' if down else 'bottom', color=REGRESSION_COLOR,
                    style='italic', zorder=7,
                    bbox={'boxstyle': 'round,pad=0.15', 'facecolor': 'white',
                          'edgecolor': 'none', 'alpha': 0.85})
    ax.set_title('\n'.join(textwrap.wrap(labels[cell], TITLE_CHARS)),
                 fontsize=FONT, loc='left')
    ax.set_xlabel('throughput (ops/s)', fontsize=FONT)
    ax.set_ylabel('avg latency (ms)', fontsize=FONT)
    ReadableTicks(ax.xaxis, mine['throughput'])
    ReadableTicks(ax.yaxis, mine['average_latency'])
    ax.tick_params(labelsize=FONT)
    ax.grid(alpha=0.3)
  if not cells:
    _Nothing(fig, 'no probe samples this night')
  fig.tight_layout()
  if not cells:
    return fig
  # The legend's entries are the same in every panel: drawn once, above.
  handles = [
      mpl_lines.Line2D([], [], marker='o', markersize=4, color='#718096',
                       alpha=0.55, linestyle='none'),
      mpl_lines.Line2D([], [], marker='o', markersize=7, color='#718096',
                       markeredgewidth=1.0, linestyle='none',
                       markeredgecolor='#1a202c'),
  ] + _AnswerHandles('black')
  names = [PROBE_LABEL, ANSWER_LOAD_LABEL, CONFIRMED_LABEL,
           UNCONFIRMED_LABEL]
  if caps:
    handles.insert(2, mpl_lines.Line2D([], [], color=REGRESSION_COLOR,
                                       linestyle='--', linewidth=1))
    names.insert(2, 'latency cap ' + ', '.join(f'{c:g} ms'
                                               for c in sorted(caps)))
  LegendAbove(fig, handles, names, 3)
  return fig


def ProbeCurves(night_frame: pd.DataFrame,
                colors: Optional[Dict[str, str]] = None,
                answers: Optional[pd.DataFrame] = None) -> Chart:
  return Png(ProbeCurvesFigure(night_frame, colors, answers),
             'Throughput versus average latency of every probe, one panel '
             'per cell, with the latency cap and each run\'s answer drawn')


CURVE_COLUMNS = ('cell', 'curve_percent', 'throughput', 'average_latency',
                 'p99_latency_ms', 'capped_latency_ms',
                 'latency_cap_statistic', 'short_runs', 'runs')


def CurvePoints(night_frame: pd.DataFrame) -> pd.DataFrame:
  """One row per cell and curve percent: the achieved throughput and the
  latencies, means over the night's runs, and how many of those runs fell
  short of the offered rate (rate_achieved_pct under 95)."""
  if 'probe_role' not in night_frame.columns:
    return pd.DataFrame(columns=CURVE_COLUMNS)
  rows = night_frame[(night_frame['probe_role'] == CURVE_ROLE) &
                     night_frame['metric'].isin(['throughput',
                                                 'average_latency'])]
  if (rows.empty or 'curve_percent' not in rows.columns or
      rows['metric'].nunique() < 2):
    return pd.DataFrame(columns=CURVE_COLUMNS)
  wide = _Paired(rows, ('curve_percent', 'p99_latency_ms',
                        'rate_achieved_pct', 'capped_latency_ms',
                        'latency_cap_statistic'))
  for column in ('curve_percent', 'p99_latency_ms', 'rate_achieved_pct',
                 'throughput', 'average_latency', 'capped_latency_ms'):
    wide[column] = answers_lib.Numbers(wide, column)
  if 'latency_cap_statistic' not in wide.columns:  # recorded before it
    wide['latency_cap_statistic'] = 'avg'
  wide['short'] = wide['rate_achieved_pct'] < 95
  points = wide.groupby(['cell', 'curve_percent'], as_index=False).agg(
      throughput=('throughput', 'mean'),
      average_latency=('average_latency', 'mean'),
      p99_latency_ms=('p99_latency_ms', 'mean'),
      capped_latency_ms=('capped_latency_ms', 'mean'),
      latency_cap_statistic=('latency_cap_statistic', 'first'),
      short_runs=('short', 'sum'), runs=('run_uri', 'nunique'))
  return points.sort_values(['cell', 'curve_percent'])


def CurveStatistic(points: pd.DataFrame) -> Optional[str]:
  """The percentile the night's curves were capped on when it is one
  statistic other than the average and p99 (which the chart always
  draws), and every point has its figure; else None."""
  stats = set(points['latency_cap_statistic'].dropna())
  if len(stats) != 1 or points['capped_latency_ms'].isna().any():
    return None
  statistic = str(stats.pop())
  return None if statistic in ('avg', 'p99') else statistic


CURVE_POINT_LABEL = 'fixed offered rate (% of the answer)'
CURVE_SHORT_LABEL = 'rate not achieved'
CURVE_SHORT_GID = 'rate-not-achieved'  # the crosses' artists (tests find them)


def LatencyCurvesFigure(night_frame: pd.DataFrame,
                        colors: Optional[Dict[str, str]] = None,
                        answers: Optional[pd.DataFrame] = None):
  """Latency against achieved throughput, a line per cell through its
  curve points (fixed offered rates, labelled with their percent) up to
  its answer (a star; hollow and red-edged when not confirmed): the
  average (or the cap's percentile, CurveStatistic) in the left panel,
  p99 in the right. A point that achieved less than it was offered (in any
  of the cell's runs) is a cross. `answers` as ProbeCurvesFigure's."""
  from matplotlib import lines as mpl_lines  # pylint: disable=g-import-not-at-top
  points = CurvePoints(night_frame)
  if answers is None:
    answers = answers_lib.RunAnswers(night_frame)
  labels = ShortLabels(night_frame)
  cells = [c for c in labels if c in set(points['cell'])]
  fig = NewFigure(figsize=(WIDTH_IN, 4.4))
  if not cells:
    _Nothing(fig, 'no curve points this night')
    return fig
  panels = (('average_latency', 'avg_latency_ms', 'avg latency (ms)'),
            ('p99_latency_ms', 'p99_latency_ms', 'p99 latency (ms)'))
  statistic = CurveStatistic(points)
  if statistic:  # The cap's own percentile, in place of the average.
    panels = (('capped_latency_ms', 'capped_latency_ms',
               f'{statistic} latency (ms)'),) + panels[1:]
    answers = answers.merge(_AnswerColumn(night_frame, 'capped_latency_ms'),
                            on=['run_uri', 'cell'], how='left')
  axes = [fig.add_subplot(1, 2, i + 1) for i in range(len(panels))]
  handles, names = [], []
  for i, cell in enumerate(cells):
    color = Color(colors, cell, i)
    mine = points[points['cell'] == cell]
    chosen = answers[answers['cell'] == cell]
    confirmed = (chosen['verdict'] == verdict_lib.CONFIRMED).any()
    for ax, (column, answer_column, _) in zip(axes, panels):
      xs, ys = list(mine['throughput']), list(mine[column])
      if not chosen.empty and chosen[answer_column].notna().any():
        xs.append(float(chosen['capped_ops'].mean()))
        ys.append(float(chosen[answer_column].mean()))
      line, = ax.plot(xs, ys, color=color, linewidth=1.6, zorder=2)
      fell_short = mine['short_runs'] > 0
      met, short = mine[~fell_short], mine[fell_short]
      ax.scatter(met['throughput'], met[column], s=30, color=color,
                 zorder=3)
      ax.scatter(short['throughput'], short[column], s=60, marker='x',
                 color=color, linewidths=2, zorder=3, gid=CURVE_SHORT_GID)
      for j, (_, row) in enumerate(mine.iterrows()):
        # Above-left and below-right in turn: neighbours' labels apart.
        above = j % 2 == 0
        ax.annotate(f'{row["curve_percent"]:g} %',
                    (row['throughput'], row[column]),
                    xytext=(-5, 5) if above else (5, -5),
                    textcoords='offset points',
                    ha='right' if above else 'left',
                    va='bottom' if above else 'top', fontsize=FONT - 1,
                    color='#333333')
      if len(xs) > len(mine):
        ax.scatter([xs[-1]], [ys[-1]], marker='*', s=260 if confirmed else 300,
                   color=color if confirmed else 'white',
                   edgecolors='black' if confirmed else REGRESSION_COLOR,
                   linewidths=0.8 if confirmed else 1.6, zorder=5)
    handles.append(line)
    names.append('\n'.join(textwrap.wrap(labels[cell], 40)))
  for ax, (column, _, ylabel) in zip(axes, panels):
    ax.set_xlabel('achieved throughput (ops/s)', fontsize=FONT)
    ax.set_ylabel(ylabel, fontsize=FONT)
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ReadableTicks(ax.xaxis, points['throughput'])
    ReadableTicks(ax.yaxis, points[column])
    ax.tick_params(labelsize=FONT)
    ax.grid(alpha=0.3)
  fig.tight_layout()
  handles += [
      mpl_lines.Line2D([], [], marker='o', markersize=5, color='#718096',
                       linestyle='none'),
      mpl_lines.Line2D([], [], marker='x', markersize=7, color='#718096',
                       markeredgewidth=2, linestyle='none'),
  ] + _AnswerHandles('#718096')
  names += [CURVE_POINT_LABEL, CURVE_SHORT_LABEL, CONFIRMED_LABEL,
            UNCONFIRMED_LABEL]
  LegendAbove(fig, handles, names, 2)
  return fig


def LatencyCurves(night_frame: pd.DataFrame,
                  colors: Optional[Dict[str, str]] = None,
                  answers: Optional[pd.DataFrame] = None) -> Chart:
  return Png(LatencyCurvesFigure(night_frame, colors, answers),
             'Latency against achieved throughput at fixed offered rates '
             'below each answer, one line per cell ending at its answer '
             '(a star): average latency left, p99 right')


def HistoryCharts(points: pd.DataFrame,
                  change_points: Sequence[cp_lib.ChangePoint],
                  colors: Optional[Dict[str, str]] = None) -> List[Chart]:
  """One chart per metric: a line per cell over nights, change points marked."""
  charts = []
  for metric, fig in HistoryFigures(points, change_points, colors):
    spec = cp_lib.SERIES_METRICS[metric]
    chart = Png(fig, f'History of {spec.label} per night with change '
                'points marked')
    charts.append(dataclasses.replace(chart, key=metric))
  return charts


def HistoryFigures(points: pd.DataFrame,
                   change_points: Sequence[cp_lib.ChangePoint],
                   colors: Optional[Dict[str, str]] = None):
  """(metric, figure) per metric of `points`; the legend under the axes."""
  figures = []
  labels = ShortLabels(points) if not points.empty else {}
  order = {m: i for i, m in enumerate(cp_lib.SERIES_METRICS)}
  for metric in sorted(set(points['metric']), key=order.get):
    rows = points[points['metric'] == metric]
    spec = cp_lib.SERIES_METRICS[metric]
    fig = NewFigure(figsize=(WIDTH_IN, 4.2))
    ax = fig.add_subplot()
    for i, (cell, one) in enumerate(rows.groupby('cell', sort=True)):
      one = one.sort_values(nights.NIGHT_START_COLUMN)
      when = one[nights.NIGHT_START_COLUMN].dt.tz_localize(None)
      ax.plot(when, one['value'], marker='o', markersize=3, linewidth=1.2,
              color=Color(colors, cell, i),
              label='\n'.join(textwrap.wrap(labels[cell], 40)))
      for change in change_points:
        if change.cell != cell or change.metric != metric:
          continue
        mask = one[nights.NIGHT_COLUMN] == change.night
        at, value = when[mask], one['value'][mask]
        color = REGRESSION_COLOR if change.regression else IMPROVEMENT_COLOR
        ax.axvline(at.iloc[0], color=color, linestyle=':', linewidth=1)
        ax.scatter(at, value, s=90, facecolors='none', edgecolors=color,
                   linewidths=2, zorder=5)
        ax.annotate(f'{change.change_pct:+.1f}%', (at.iloc[0], value.iloc[0]),
                    textcoords='offset points', xytext=(4, 6), fontsize=FONT,
                    color=color)
    ax.set_title(terminal_text.ChartText(
        f'{spec.label} ({spec.unit}) per night\ncircles: '
        'change points (red worse, green better)'), loc='left',
        fontsize=FONT)
    ReadableTicks(ax.yaxis, rows['value'])
    ax.grid(alpha=0.3)
    ax.tick_params(labelsize=FONT)
    starts = rows[nights.NIGHT_START_COLUMN].dt.tz_localize(None)
    if starts.nunique() == 1:  # One night: a week around it, not years.
      ax.set_xlim(starts.iloc[0] - pd.Timedelta(days=3),
                  starts.iloc[0] + pd.Timedelta(days=3))
    fig.autofmt_xdate()
    fig.tight_layout()
    # Under everything the axes draw (dates, ticks), never on the data.
    handles, names = ax.get_legend_handles_labels()
    fig.legend(handles, names, fontsize=FONT - 1, loc='upper left',
               bbox_to_anchor=(0.0, 0.0), ncol=2, frameon=False)
    figures.append((metric, fig))
  return figures
