"""The HTML report reads on a laptop and a narrow window (issues 20, 26).

The page is rendered from the real runs in tests/data/history, edited so the
night has what a real report shows: two workloads (one run at 20,000 keys),
confirmed runs (verdict metadata) and unconfirmed ones; a second page is the
recorded runs as they are (0 of 7 answers confirmed). Debian's chromium
renders them headless at 1400 and 800 px: a screenshot of each (kept in the
test's tmp dir; look at them when changing the page) and the layout measured
in the page itself: the banner says how many answers are confirmed (and why
not) before anything about regressions, and is never green on a night with
none; the header names each workload; every leaderboard column visible, or
reachable by scrolling its box with a visible cue naming the columns out of
view and the machine type staying in view; no page-wide horizontal overflow;
charts not scaled below 85 %. The charts are checked on their matplotlib
objects: tick labels as precise as their spacing, legends outside the axes,
probes as points (no lines), the unconfirmed star white over its probe dot,
bar labels inside the frame.
"""

import base64
import io
import json
import os
import re
import shutil
import sys

import numpy as np
import pytest
from PIL import Image

import headless_chromium
import pkb_forkserver
from headless_chromium import chromium  # pylint: disable=unused-import  (fixture)

from perfkitbenchmarker import sample
from perfkitbenchmarker.results_history import charts
from perfkitbenchmarker.results_history import leaderboard
from perfkitbenchmarker.results_history import loader

# Every test here starts a process (tests/tier_guard.py).
pytestmark = pytest.mark.e2e

HERE = os.path.dirname(os.path.abspath(__file__))
HISTORY = os.path.join(HERE, 'data', 'history')
COMPARE = os.path.join(os.path.dirname(HERE), 'scripts', 'compare.py')
CONFIRMED_RUNS = ('04066aa3', '40b2bc68', '82ea2788')
SMALL_WORKLOAD_RUN = '82ea2788'
WIDTHS = (1400, 800)
MEASURE = """
<script>
window.addEventListener('load', () => {
  const box = (e) => e.getBoundingClientRect();
  const out = {viewport: window.innerWidth,
               page_width: document.documentElement.scrollWidth};
  const headline = document.getElementById('headline');
  out.headline = {
    top: box(headline).top, cls: headline.className,
    background: getComputedStyle(headline).backgroundColor,
    known: document.getElementById('known').textContent,
    known_top: box(document.getElementById('known')).top,
    regressions: document.getElementById('regressions').textContent,
    regressions_top: box(document.getElementById('regressions')).top,
    first_h2_top: box(document.querySelector('h2')).top};
  const notes = document.getElementById('load-notes');
  if (notes) {
    out.load_notes = {top: box(notes).top, bottom: box(notes).bottom,
                      right: box(notes).right, text: notes.textContent};
  }
  out.workloads = Array.from(document.querySelectorAll('#workloads .workload'))
      .map(e => e.textContent);
  out.workloads_line = document.getElementById('workloads').textContent;
  out.images = Array.from(document.images).map(i => ({
    scale: i.clientWidth / i.naturalWidth, natural: i.naturalWidth}));
  const table = document.getElementById('leaderboard-table');
  if (table) {
    const wrap = table.parentElement;
    const cue = wrap.previousElementSibling;
    const scrolls = getComputedStyle(wrap).overflowX === 'auto' ||
                    getComputedStyle(wrap).overflowX === 'scroll';
    const ths = Array.from(table.querySelectorAll('th'));
    const seen = () => ths.map(th => box(th).right <= box(wrap).right + 1 &&
                                     box(th).left >= box(wrap).left - 1);
    out.wrap_right = box(wrap).right;
    out.cue = {shown: !cue.hidden && box(cue).height > 0 &&
                      box(cue).right <= window.innerWidth,
               text: cue.textContent, above: box(cue).bottom <= box(wrap).top + 1};
    const before = seen();
    wrap.scrollLeft = wrap.scrollWidth;  // as a reader scrolls to the end
    const after = seen();
    out.headers = ths.map((th, i) => ({text: th.textContent, visible: before[i],
                                       after_scroll: after[i]}));
    out.scrolls = scrolls;
  }
  document.body.setAttribute('data-layout', JSON.stringify(out));
});
</script>
"""


def _History(tmp_path):
  """The real runs, some marked confirmed, one at a smaller key range."""
  out = tmp_path / 'history'
  for name in os.listdir(os.path.join(HISTORY, 'runs')):
    source = os.path.join(HISTORY, 'runs', name, loader.RESULTS_FILE)
    with open(source) as f:
      rows = [json.loads(line) for line in f if line.strip()]
    for row in rows:
      extra = {}
      if name in CONFIRMED_RUNS:
        extra = {'verdict': 'confirmed', 'client_saturated': False}
      if name == SMALL_WORKLOAD_RUN:
        extra['memtier_key_maximum'] = 20000
      if 'metadata' in row:
        row['metadata'].update(extra)
      else:
        labels = sample.ParseLabels(row['labels'])
        labels.update({k: str(v) for k, v in extra.items()})
        row['labels'] = ','.join(f'|{k}:{labels[k]}|' for k in sorted(labels))
    (out / name).mkdir(parents=True)
    (out / name / loader.RESULTS_FILE).write_text(
        ''.join(json.dumps(r) + '\n' for r in rows))
    shutil.copy(os.path.join(HISTORY, 'runs', name, 'run_record.json'),
                out / name)
  return out


def _Compare(history, html, *args):
  result = pkb_forkserver.Run([sys.executable, COMPARE, str(history),
                           f'--report={html}'] + list(args),
                              timeout=180,
                              check=False)
  assert result.returncode == 0, result.stderr


@pytest.fixture(scope='module')
def page(tmp_path_factory):
  tmp_path = tmp_path_factory.mktemp('layout')
  history = _History(tmp_path)
  html = tmp_path / 'report.html'
  _Compare(history, html)
  return tmp_path, html, history


@pytest.fixture(scope='module')
def zero_page(tmp_path_factory):
  """The recorded runs as they are: every answer client-bound."""
  tmp_path = tmp_path_factory.mktemp('zero')
  html = tmp_path / 'report.html'
  _Compare(HISTORY, html)
  return tmp_path, html


@pytest.fixture(scope='module')
def copied_page(tmp_path_factory):
  """The recorded runs and a copy of one under another sample id, in a
  directory with a long name (as a CI artifact's path is)."""
  tmp_path = tmp_path_factory.mktemp('copied')
  copy = (tmp_path / ('artifact-nightly-matrix-' + 'x' * 90) / 'runs' /
          '04066aa3')
  copy.mkdir(parents=True)
  with open(os.path.join(HISTORY, 'runs', '04066aa3',
                         loader.RESULTS_FILE)) as f:
    rows = [dict(json.loads(line), sample_uri=f'copy-{n}')
            for n, line in enumerate(f) if line.strip()]
  (copy / loader.RESULTS_FILE).write_text(
      ''.join(json.dumps(r) + '\n' for r in rows))
  html = tmp_path / 'report.html'
  _Compare(HISTORY, html, str(copy))
  return tmp_path, html, str(copy / loader.RESULTS_FILE)


@pytest.fixture(scope='module')
def night(page):
  _, _, history = page
  frame = leaderboard.Prepare(loader.Load([str(history)]))
  return frame, frame[frame['night'] == frame['night'].max()]


def _Png(html_text, figure_id):
  match = re.search(r'<h2 id="' + figure_id + r'">.*?<img src="data:image/'
                    r'png;base64,([^"]+)"', html_text, re.S)
  image = Image.open(io.BytesIO(base64.b64decode(match.group(1))))
  return np.asarray(image.convert('RGB'))


def test_one_colour_per_cell_and_the_workload_where_rows_differ(page):
  tmp_path, html, history = page
  text = html.read_text()
  assert '<th>workload</th>' in text and 'keys 20000' in text
  md = tmp_path / 'summary.md'
  console = pkb_forkserver.Run([sys.executable, COMPARE, str(history),
                            f'--markdown={md}'], timeout=180, check=True).stdout
  assert re.search(r'^#\s+machine type\s+engine\s+topology\s+workload ',
                   console, re.M)
  assert '| topology | workload |' in md.read_text()
  swatches = re.findall(r'class="swatch" style="background: (#[0-9a-f]{6})"',
                        text)
  assert len(swatches) == len(set(swatches)) >= 2
  bars, curves = _Png(text, 'price-performance'), _Png(text, 'probe-curves')
  for color in swatches:
    rgb = np.array([int(color[i:i + 2], 16) for i in (1, 3, 5)])
    for image in (bars, curves):
      assert (image == rgb).all(axis=2).sum() >= 20, color
  # Provenance once for the page, a one-line note under each figure.
  assert text.count('<dt>versions</dt>') == 1
  notes = re.findall(r'<figcaption>([^<]*)</figcaption>', text)
  assert len(notes) == text.count('<figure>') and all(
      '\n' not in n and n.startswith(('night ', '1 night')) for n in notes)


def _Renderer(figure):
  from matplotlib.backends import backend_agg  # pylint: disable=g-import-not-at-top
  canvas = backend_agg.FigureCanvasAgg(figure)
  canvas.draw()
  return canvas, canvas.get_renderer()


def test_unconfirmed_answers_are_white_over_their_probe_never_filled(night):
  frame, tonight = night
  figure = charts.ProbeCurvesFigure(tonight, charts.CellColors(frame['cell']))
  canvas, renderer = _Renderer(figure)
  pixels = np.asarray(canvas.buffer_rgba())[:, :, :3]
  hollow_stars = 0
  for ax in figure.axes:
    by_label = {c.get_label(): c for c in ax.collections}
    if charts.CONFIRMED_LABEL in by_label:
      filled = by_label[charts.CONFIRMED_LABEL].get_facecolors()
      assert (filled[:, :3] == 0).all() and (filled[:, 3] == 1).all()
    star = by_label.get(charts.UNCONFIRMED_LABEL)
    if star is None:
      continue
    # Opaque white face, drawn over every probe: the dot under it is hidden.
    faces = star.get_facecolors()
    assert len(faces) and (faces == [1, 1, 1, 1]).all(), faces
    probes = [by_label[charts.PROBE_LABEL], by_label[charts.ANSWER_LOAD_LABEL]]
    assert all(star.get_zorder() > p.get_zorder() for p in probes)
    words = [t for t in ax.texts if t.get_text() == 'unconfirmed']
    assert len(words) == len(star.get_offsets())
    frame_box = ax.get_window_extent(renderer)
    for word in words:  # inside the panel's frame
      box = word.get_window_extent(renderer)
      assert (frame_box.x0 <= box.x0 and box.x1 <= frame_box.x1 and
              frame_box.y0 <= box.y0 and box.y1 <= frame_box.y1), box
    for x, y in star.get_offsets():
      px, py = ax.transData.transform((x, y))
      row = pixels.shape[0] - int(round(py))
      centre = pixels[row - 1:row + 2, int(round(px)) - 1:int(round(px)) + 2]
      assert (centre >= 245).all(), (x, y, centre)  # white, not a dot
      hollow_stars += 1
  assert hollow_stars == 4  # the night's unconfirmed answers
  board = leaderboard.Leaderboard(frame)
  assert set(board['answer_verdict']) == {'confirmed'}


def test_probes_are_points_with_the_answer_load_ringed(night):
  _, tonight = night
  figure = charts.ProbeCurvesFigure(tonight)
  capped = tonight[tonight['metric'] == 'latency_capped_throughput']
  answer_load = dict(zip(capped['run_uri'], capped['connections']))
  probes = tonight[tonight['metric'] == 'throughput']
  ringed_expected = probes[[answer_load[r] == c for r, c in zip(
      probes['run_uri'], probes['connections'])]]
  ringed_total = plain_total = 0
  for ax in figure.axes:
    # The only lines are the latency cap: horizontal, at the cap.
    for line in ax.lines:
      assert set(line.get_ydata()) == {1.0}, line.get_ydata()
    by_label = {c.get_label(): c for c in ax.collections}
    ringed = by_label[charts.ANSWER_LOAD_LABEL]
    plain = by_label[charts.PROBE_LABEL]
    for collection in (ringed, plain):
      assert collection.get_linestyle() in ([(0, None)], [(0.0, None)])
      assert len(collection.get_paths()) == 1  # one marker, no polyline
    assert ringed.get_sizes()[0] > plain.get_sizes()[0]
    assert (ringed.get_edgecolors()[:, :3] < 0.2).all()
    ringed_total += len(ringed.get_offsets())
    plain_total += len(plain.get_offsets())
  assert ringed_total == len(ringed_expected) >= 7
  assert ringed_total + plain_total == len(probes)


def _Figures(frame, tonight):
  from perfkitbenchmarker.results_history import report  # pylint: disable=g-import-not-at-top
  analysis = report.Analyze(frame, report.Settings(include_unconfirmed=True))
  figures = {'bars': charts.PricePerformanceBarsFigure(analysis.board),
             'curves': charts.ProbeCurvesFigure(tonight)}
  for metric, figure in charts.HistoryFigures(analysis.points,
                                              analysis.change_points):
    figures[metric] = figure
  return figures


def _Number(label):
  """A tick label back to its number: 27.5k, 1.25M, 0.45, 1,000, −0.2."""
  text = label.replace('\u2212', '-').replace(',', '').strip()
  scale = {'k': 1e3, 'M': 1e6, 'G': 1e9}.get(text[-1:], 1)
  return float(text[:-1] if scale != 1 else text) * scale


def test_tick_labels_are_as_precise_as_their_spacing(night):
  frame, tonight = night
  checked = 0
  for name, figure in _Figures(frame, tonight).items():
    _Renderer(figure)
    for ax in figure.axes:
      axes = [ax.yaxis] + ([] if name not in ('bars', 'curves') else
                           [ax.xaxis])
      if name == 'bars':
        axes = [ax.xaxis]  # its y ticks are the machine types
      for axis in axes:
        low, high = sorted(axis.get_view_interval())
        ticks = [(t.get_loc(), t.label1.get_text())
                 for t in axis.get_major_ticks()
                 if low <= t.get_loc() <= high and t.label1.get_visible()]
        locs = [loc for loc, _ in ticks]
        labels = [text for _, text in ticks]
        assert len(ticks) >= 3, (name, labels)
        step = min(b - a for a, b in zip(locs, locs[1:]))
        assert len(set(labels)) == len(labels), (name, labels)
        for loc, text in ticks:
          assert abs(_Number(text) - loc) <= 0.01 * step, (name, loc, text)
        checked += 1
  assert checked >= 16  # bars, 6 panels x 2 axes, 4 history charts


def test_tick_labels_at_half_steps_are_not_rounded_together():
  """The issue's axis: 27.5k and 32.5k read '28k' and '32k' beside 30k."""
  figure = charts.NewFigure()
  ax = figure.add_subplot()
  ax.plot([26000, 34000], [0.2, 0.9])
  charts.ReadableTicks(ax.xaxis, [26000, 34000])
  charts.ReadableTicks(ax.yaxis, [0.2, 0.9])
  ax.set_xticks([27500, 30000, 32500])
  ax.set_yticks([0.25, 0.5, 0.75])
  _Renderer(figure)
  assert [t.get_text() for t in ax.get_xticklabels()] == ['27.5k', '30k',
                                                          '32.5k']
  assert [_Number(t.get_text()) for t in ax.get_yticklabels()] == [
      0.25, 0.5, 0.75]


def test_legends_sit_outside_the_data(night):
  frame, tonight = night
  figures = _Figures(frame, tonight)
  for name, figure in figures.items():
    _, renderer = _Renderer(figure)
    assert all(ax.get_legend() is None for ax in figure.axes), name
    if name == 'bars':
      assert not figure.legends
      continue
    assert len(figure.legends) == 1, name
    legend = figure.legends[0].get_window_extent(renderer)
    for ax in figure.axes:
      # Not on the plot, its ticks, labels or title.
      assert not legend.overlaps(ax.get_tightbbox(renderer)), name


def test_bar_labels_end_inside_the_frame(night):
  frame, tonight = night
  figure = _Figures(frame, tonight)['bars']
  _, renderer = _Renderer(figure)
  # The night's two workloads (one run at 20,000 keys) are a panel each,
  # 5 bars and 1.
  assert [len(ax.texts) for ax in figure.axes] == [5, 1]
  for ax in figure.axes:
    frame_box = ax.get_window_extent(renderer)
    # A figure and verdict per bar (every cell: unconfirmed ones counted).
    assert len(ax.texts) == len(ax.get_yticks())
    for text in ax.texts:
      box = text.get_window_extent(renderer)
      assert frame_box.x0 <= box.x0 and box.x1 <= frame_box.x1, (
          text.get_text(), box, frame_box)
  # The widest error bar (774,347 +- 448,234) and its label fit too.
  assert figure.axes[0].get_xlim()[1] > 774347 + 448234


def test_subplot_titles_do_not_overlap(night):
  _, tonight = night
  figure = charts.ProbeCurvesFigure(tonight)
  _, renderer = _Renderer(figure)
  titles = [ax.title.get_window_extent(renderer) for ax in figure.axes]
  assert len(titles) >= 4
  for i, a in enumerate(titles):
    for b in titles[i + 1:]:
      assert not a.overlaps(b), (a, b)
    for ax in figure.axes:
      assert not a.overlaps(ax.get_window_extent(renderer)) or (
          ax.title.get_window_extent(renderer) is a)


def _Layout(browser, tmp_path, html, width, name):
  measured = tmp_path / f'measure-{name}-{width}.html'
  measured.write_text(html.read_text().replace('</body>', MEASURE + '</body>'))
  dom = browser.Dom(f'file://{measured}', width, 1200)
  layout = json.loads(re.search(r'data-layout="([^"]*)"', dom).group(1)
                      .replace('&quot;', '"').replace('&amp;', '&')
                      .replace('&lt;', '<').replace('&gt;', '>'))
  assert layout['viewport'] == width
  assert layout['page_width'] <= width, 'the page scrolls sideways'
  return layout


def _Shot(browser, tmp_path, html, width, name):
  shot = tmp_path / f'report-{name}-{width}.png'
  browser.Screenshot(f'file://{html}', shot, width, 2600)
  pixels = np.asarray(Image.open(shot).convert('L'), dtype=float)
  assert pixels.shape == (2600, width) and pixels.std() > 20


def _Rgb(css):
  return tuple(int(v) for v in re.findall(r'\d+', css)[:3])


GREEN = _Rgb('rgb(198, 246, 213)')  # .verdict.good


@headless_chromium.NEEDED
@pytest.mark.parametrize('width', WIDTHS)
def test_page_reads_at_this_width(
    page, chromium, width):  # pylint: disable=redefined-outer-name
  tmp_path, html, _ = page
  layout = _Layout(chromium, tmp_path, html, width, 'mixed')
  # The banner leads with what is known, then regressions, above all else.
  headline = layout['headline']
  assert headline['known'] == (
      '3 of 7 answers confirmed on night 2026-11-23; not confirmed: 4 '
      'client_bound.'), headline
  # One night of history: no series long enough to check (orange).
  assert headline['regressions'].startswith('Regressions not checked: a '
                                            'series needs 4 nights')
  assert headline['known_top'] < headline['regressions_top']
  assert headline['top'] < headline['first_h2_top']
  assert headline['cls'] == 'verdict unknown'
  assert _Rgb(headline['background']) != GREEN
  # The header names each workload of the night.
  assert layout['workloads'] == [
      '1:1 R:R 100B keys 100000 cap 1ms via redis-benchmark',
      '1:1 R:R 100B keys 20000 cap 1ms via redis-benchmark']
  assert layout['workloads_line'].startswith('Night 2026-11-23: 2 workloads: ')
  assert layout['wrap_right'] <= width
  headers = layout['headers']
  assert [h['text'] for h in headers][-3:] == ['verdict', 'runs', 'answers']
  out_of_view = [h['text'] for h in headers if not h['visible']]
  cue = layout['cue']
  if width >= 1400:  # A laptop sees every column, and no cue.
    assert not out_of_view and not cue['shown'], (out_of_view, cue)
  else:
    # A narrow window: the box scrolls, a cue above it says so and names
    # what is out of view; scrolled to the end, every column left out is in
    # view and the machine type stays (sticky).
    assert layout['scrolls'] and out_of_view, headers
    assert cue['shown'] and cue['above'], cue
    assert cue['text'].startswith('table scrolls sideways: scroll \u2192 '
                                  f'for {len(out_of_view)} more column')
    assert all(name in cue['text'] for name in out_of_view), cue
    assert all(h['after_scroll'] for h in headers if not h['visible']), headers
    assert headers[1]['text'] == 'machine type' and headers[1]['after_scroll']
  assert len(layout['images']) >= 4
  for image in layout['images']:
    assert image['scale'] >= 0.85, image
  _Shot(chromium, tmp_path, html, width, 'mixed')


@headless_chromium.NEEDED
@pytest.mark.parametrize('width', WIDTHS)
def test_a_night_without_confirmed_answers_is_never_green(
    zero_page, chromium, width):  # pylint: disable=redefined-outer-name
  tmp_path, html = zero_page
  layout = _Layout(chromium, tmp_path, html, width, 'zero')
  headline = layout['headline']
  assert headline['known'] == (
      '0 of 7 answers confirmed on night 2026-11-23; not confirmed: 7 '
      'client_bound; none is a server figure one can rank.'), headline
  assert headline['regressions'].startswith('Regressions not checked')
  assert headline['cls'] == 'verdict unknown'
  assert _Rgb(headline['background']) != GREEN
  assert headline['top'] < headline['first_h2_top']
  # No ranked row, yet the header names the night's workload.
  assert layout['workloads'] == [
      '1:1 R:R 100B keys 100000 cap 1ms via redis-benchmark']
  assert 'workload ;' not in layout['workloads_line']
  _Shot(chromium, tmp_path, html, width, 'zero')


@headless_chromium.NEEDED
@pytest.mark.parametrize('width', WIDTHS)
def test_a_run_counted_once_is_said_under_the_banner(
    copied_page, chromium, width):  # pylint: disable=redefined-outer-name
  """compare said "run X read 2 times ... counted once" on stderr only: the
  page a reader opens said nothing of it. Now it says it right under the
  banner, above the leaderboard, a long source path wrapped in the window."""
  tmp_path, html, copy = copied_page
  layout = _Layout(chromium, tmp_path, html, width, 'copied')
  notes = layout['load_notes']
  original = os.path.join(HISTORY, 'runs', '04066aa3', loader.RESULTS_FILE)
  assert (f'run 04066aa3 read 2 times, the same samples each time '
          f'({original}, {copy}); counted once, from {original}'
          in notes['text']), notes
  assert layout['headline']['regressions_top'] < notes['top']
  assert notes['bottom'] <= layout['headline']['first_h2_top']
  assert notes['right'] <= width
  _Shot(chromium, tmp_path, html, width, 'copied')
