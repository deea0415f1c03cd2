"""Every price passes one validation when loaded; a bad one never costs a run.

Issue 24 items 2, 13 and 14: a catalog price of 0 ended a whole search in a
ZeroDivisionError with the answer unwritten; --machine_price took infinity
and 1e-320; configs/prices.yaml was read unchecked (tracebacks on bad YAML,
a row without source, text for a price, a missing or non-UTF-8 file, a
symlink to /dev/zero; nan, -1, inf, 1e308 and 0 published; an unknown
format_version read silently; a 77 MB catalog made a dry run take 77 s).
"""

import io
import os
import subprocess
import sys

import pytest

import pkb_forkserver
from perfkitbenchmarker import benchmark_spec
from perfkitbenchmarker import errors
from perfkitbenchmarker import measurement
from perfkitbenchmarker import price_performance
from perfkitbenchmarker import pricing
from perfkitbenchmarker import reporting
from perfkitbenchmarker.linux_benchmarks import redis_memtier_benchmark as bench
from perfkitbenchmarker.search import driver as search_driver
from perfkitbenchmarker.study import results

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SOURCES = ("sources:\n  s1:\n    description: 'a reviewed price table'\n"
            "    date: '2026-07-20'\n")
_ROW = ("  - {cloud: GCP, region: us-central1, machine_type: n2d-standard-2, "
        "vcpus: 2, memory_gib: 8, usd_per_hour: %s, source: s1, "
        "date: '2026-07-20'}\n")


def _Catalog(price='0.0845', head='format_version: 2\n', sources=_SOURCES,
             row=_ROW):
  return head + sources + 'prices:\n' + (row % price if '%s' in row else row)


def test_a_well_formed_catalog_loads(tmp_path):
  path = tmp_path / 'prices.yaml'
  path.write_text(_Catalog())
  price = pricing.PriceCatalog.Load(str(path)).Lookup(
      'GCP', 'us-central1-a', 'n2d-standard-2')
  assert (price.usd_per_hour, price.source, price.source_date) == (
      0.0845, 'a reviewed price table', '2026-07-20')


def _Write(tmp_path, case):
  """The catalog file of one bad case; returns (path, expected words)."""
  path = tmp_path / 'prices.yaml'
  texts = {
      'bad_yaml': (_Catalog(sources='sources: {s1: [\n'), 'invalid YAML'),
      'no_source': (_Catalog(row=_ROW.replace(' source: s1,', '') % '0.08'),
                    'prices[0].source is missing (GCP us-central1 '
                    'n2d-standard-2)'),
      'unknown_source': (_Catalog(row=_ROW.replace('s1,', 's2,') % '0.08'),
                         "source is 's2'"),
      'text_price': (_Catalog('abc'), "usd_per_hour is 'abc', not a number"),
      'nan': (_Catalog('.nan'), 'not a finite number'),
      'nan_word': (_Catalog('nan'), "'nan', not a number"),
      'negative': (_Catalog('-1'), 'usd_per_hour is -1, outside'),
      'inf': (_Catalog('.inf'), 'not a finite number'),
      'huge': (_Catalog('1.0e+308'), 'outside'),
      'huge_text': (_Catalog('1e308'), "'1e308', not a number"),
      # Read as an integer too large for a float (once an OverflowError).
      'huge_int': (_Catalog('1' + '0' * 400), 'not a finite number'),
      'zero': (_Catalog('0'), 'usd_per_hour is 0, outside'),
      'tiny': (_Catalog('0.00000000001'), 'outside'),
      'format_3': (_Catalog(head='format_version: 3\n'),
                   "format_version '3' is not one"),
      'no_version': (_Catalog(head=''), 'format_version'),
      'no_date': (_Catalog(row=_ROW.replace(", date: '2026-07-20'", '') %
                           '0.08', sources=_SOURCES.replace(
                               "    date: '2026-07-20'\n", '')),
                  'not a date'),
      'bad_date': (_Catalog(row=_ROW.replace('2026-07-20', 'last week') %
                            '0.08'), "'last week', not a date"),
      'typo_key': (_Catalog(row=_ROW.replace('usd_per_hour', 'usd_per_hr') %
                            '0.08'), 'prices[0].usd_per_hr is unknown'),
      'not_a_mapping': ('- just\n- a list\n', 'not a mapping'),
      'duplicate': (_Catalog() + _ROW % '0.09', 'a second row'),
  }
  if case in texts:
    text, words = texts[case]
    path.write_text(text)
  elif case == 'missing':
    words = 'No such file or directory'
  elif case == 'not_utf8':
    path.write_bytes(_Catalog().encode() + b'# \xff\n')
    words = 'not UTF-8 text (byte 0xff'
  elif case == 'dev_zero':
    os.symlink('/dev/zero', path)
    words = 'not a regular file (a device)'
  elif case == 'fifo':
    os.mkfifo(path)
    words = 'not a regular file (a FIFO)'
  elif case == 'huge_file':  # Real rows, past the bound: refused unread.
    rows = ''.join(
        _ROW.replace('n2d-standard-2', f'x-{i}') % '0.08'
        for i in range(2 * pricing.MAX_CATALOG_BYTES // len(_ROW)))
    path.write_text(_Catalog(row=rows))
    words = 'more than the 8,388,608'
  else:
    raise AssertionError(case)
  return str(path), words


_CASES = ['bad_yaml', 'no_source', 'unknown_source', 'text_price', 'nan',
          'nan_word', 'negative', 'inf', 'huge', 'huge_text', 'huge_int',
          'zero', 'tiny', 'format_3',
          'no_version', 'no_date', 'bad_date', 'typo_key', 'not_a_mapping',
          'duplicate', 'missing', 'not_utf8', 'dev_zero', 'fifo', 'huge_file']


# The 77 MB catalog took 77 s when it was read whole; a bounded read takes
# well under a second: the hang guard only fails on a read of the whole file.
@pytest.mark.timeout(60)
@pytest.mark.parametrize('case', _CASES)
def test_a_bad_catalog_is_one_line(tmp_path, case):
  path, words = _Write(tmp_path, case)
  with pytest.raises(errors.ConfigError) as raised:
    pricing.PriceCatalog.Load(path)
  message = str(raised.value)
  assert words in message, message
  assert path in message and 'refresh_prices.py' in message
  assert '\n' not in message


_PKB_WITH_CATALOG = """
import sys
from perfkitbenchmarker import pricing
pricing.DEFAULT_CATALOG_PATH = sys.argv[1]
from perfkitbenchmarker import pkb
sys.exit(pkb.Main(['pkb.py'] + sys.argv[2:]))
"""


@pytest.mark.e2e
@pytest.mark.parametrize('case', ['zero', 'nan', 'format_3', 'dev_zero'])
def test_pkb_refuses_a_bad_catalog_before_anything_runs(tmp_path, case):
  """The zero price was found only after the whole search (a traceback,
  the answer unwritten); now pkb refuses the catalog at its start."""
  path, words = _Write(tmp_path, case)
  proc = subprocess.run(
      [sys.executable, '-c', _PKB_WITH_CATALOG, path, '--dry_run',
       f'--results_dir={tmp_path / "results"}'],
      capture_output=True, text=True, timeout=120, cwd=REPO,
      env=dict(os.environ, PYTHONPATH=REPO), check=False)
  assert proc.returncode == 2, (proc.stdout, proc.stderr)
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith('pkb: the price catalog')
  assert words in lines[0] and 'Traceback' not in proc.stderr


@pytest.mark.parametrize('given, words', [
    ('1' + '0' * 400, 'not a finite number'),  # float() says inf
    ('0.' + '0' * 319 + '1', 'outside'),       # 1e-320, a subnormal
    ('0.000000001', 'outside'),
    ('5000', 'outside'),
    ('0', 'outside'),
    # In exponent notation: the range is what is wrong, not the shape.
    ('1e-300', 'outside'),
    ('1e300', 'outside'),
    ('-1', 'outside'),
    ('nan', 'not a finite number'),
    ('abc', "'abc', not a number"),
])
def test_machine_price_must_be_a_sane_finite_price(given, words):
  with pytest.raises(errors.UsageError) as raised:
    pricing.ParseMachinePrices([f'c7g.4xlarge={given}'])
  message = str(raised.value)
  assert words in message and '--machine_price=' in message
  assert len(message) < 400  # The 400-digit value is not echoed whole.


@pytest.mark.e2e
def test_machine_price_infinity_is_refused_by_pkb(tmp_path):
  proc = pkb_forkserver.Run(
      [sys.executable, os.path.join(REPO, 'pkb.py'), '--dry_run',
       '--machine_price=n2d-standard-2=1' + '0' * 400,
       '--local_priced_as=GCP:n2d-standard-2',
       f'--results_dir={tmp_path / "results"}'],
      timeout=120, cwd=REPO, check=False)
  assert proc.returncode == 2, (proc.stdout, proc.stderr)
  assert 'not a finite number' in proc.stderr
  assert 'Traceback' not in proc.stderr
  assert len(proc.stderr.strip().splitlines()) == 1


# The answer is published before it is priced ------------------------------

_LOAD = measurement.Load(1, 4)
_PROBES = [measurement.Measurement(_LOAD, 50e3, 0.5, 0.4, 0.9, 1.2, 2.0,
                                   100000)]


class _OnePolicy:
  NAME = 'scripted'

  def Steps(self, cap_ms):
    del cap_ms
    yield search_driver.ProbeRequest(_LOAD, 'search')
    return search_driver.Outcome('done', 0, ())


class _UnpricedCatalog(pricing.PriceCatalog):
  """A catalog that lost the run's row after the plan was checked (a
  resumed --run_stage=run after a refresh), or holds a price of 0 that no
  loader checked (as configs/prices.yaml could before)."""

  def __init__(self, how):
    super().__init__([])
    self.how = how

  def Lookup(self, cloud, zone_or_region, machine_type):
    if self.how == 'missing':
      raise errors.UsageError(f'No {cloud} price for {machine_type}')
    row = pricing.CatalogRow(cloud, 'us-central1', machine_type, 2, 8.0,
                             (('on_demand', 0.0),), 's', '2026-07-20')
    return row.Price('on_demand')


@pytest.mark.parametrize('how', ['missing', 'zero'])
def test_an_unusable_price_never_costs_the_answer(pkb_flags, how):
  published, out = [], io.StringIO()
  spec = benchmark_spec.BenchmarkSpec(
      bench, bench.GetConfig({}), 'p', 'Local', None, pkb_flags,
      _UnpricedCatalog(how), published.extend,
      reporter=reporting.ConsoleReporter(out))
  script = iter(_PROBES)
  result = search_driver.FindLatencyCappedMaximum(lambda load: next(script),
                                                  1.0, _OnePolicy())
  samples = results.ResultSamples(spec, result, 1.0, {'tag': 'x'})
  metrics = [s.metric for s in published]
  assert metrics == [price_performance.CAPPED_THROUGHPUT,
                     price_performance.PKB_UNDER_1MS]
  assert [s.metric for s in samples] == metrics
  assert all(s.metadata['tag'] == 'x' for s in published)
  assert published[0].value == pytest.approx(50e3)
  assert 'WARNING: the answer is published without its cost' in (
      out.getvalue())
  spec.vm_groups = {'servers': [type('Vm', (), {'machine_type': 'x'})()]}
  results.PrintSummary(spec, samples)  # The summary says n/a, unpriced.
  assert 'unpriced' in out.getvalue()


def test_hourly_price_itself_refuses_zero():
  with pytest.raises(ValueError, match='outside'):
    pricing.HourlyPrice('GCP', 'r', 'm', 1, 1.0, 0.0, 's', '2026-07-20')


@pytest.mark.e2e
@pytest.mark.parametrize('flag', [
    '--local_priced_as=GCP:n2d\x1b]0;pwned\x07\x1b[2J',
    '--machine_price=n2d\x1b[2J=0.1',
])
def test_a_pricing_error_shows_escape_sequences_as_text(tmp_path, flag):
  """Issue 24 item 6: pricing errors printed the terminal escapes they
  quoted raw (a window title, a clear screen)."""
  proc = pkb_forkserver.Run(
      [sys.executable, os.path.join(REPO, 'pkb.py'), '--dry_run', flag,
       f'--results_dir={tmp_path / "results"}'],
      timeout=120, cwd=REPO, check=False)
  assert proc.returncode == 2, (proc.stdout, proc.stderr)
  assert '\\x1b' in proc.stderr and 'Traceback' not in proc.stderr
  assert not any(c in proc.stderr + proc.stdout for c in '\x1b\x07\r')
