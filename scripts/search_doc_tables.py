#!/usr/bin/env python3
"""docs/search.md's tables, rendered from the benches' raw output.

  ./scripts/bench_search.py --nolocal --raw_out=docs/data/search_model.json
  ./scripts/bench_search.py --repetitions=3 \\
      --local_raw_out=docs/data/search_local.json     # local Redis, minutes
  sudo ./scripts/bench_install.py --out=docs/data/install.json  # about 5 min
  ./scripts/bench_search_floor.py \
      --floor_raw_out=docs/data/search_floor_redis_benchmark.json
  ./scripts/search_doc_tables.py --write     # rewrite docs/search.md's tables
  ./scripts/search_doc_tables.py             # exit 1 if the doc is stale

Every table between `<!-- generated: NAME -->` and `<!-- end: NAME -->` in
docs/search.md is `Render(raw, local, install)[NAME]`, where raw and local
are the JSON that scripts/bench_search.py wrote (model, local Redis) and
install what scripts/bench_install.py wrote: nothing in those tables is
typed by hand. The
figures a table rests on but no measurement fitted are listed beside it
(`ASSUMED` and each scenario's `assumed`).
"""

import argparse
import contextlib
import json
import os
import re
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(_HERE)
sys.path.insert(0, _REPO)

# pylint: disable=g-import-not-at-top,wrong-import-position
from perfkitbenchmarker import venv_reexec
venv_reexec.UseRepoVenv(_REPO, __file__)

from perfkitbenchmarker import regular_files

RAW = os.path.join(_REPO, 'docs', 'data', 'search_model.json')
LOCAL_RAW = os.path.join(_REPO, 'docs', 'data', 'search_local.json')
INSTALL_RAW = os.path.join(_REPO, 'docs', 'data', 'install.json')
# scripts/bench_search_floor.py's raw output, one file per load generator.
FLOOR_RAW = {
    'redis_benchmark': os.path.join(_REPO, 'docs', 'data',
                                    'search_floor_redis_benchmark.json'),
    'memtier': os.path.join(_REPO, 'docs', 'data', 'search_floor_memtier.json'),
}
FLOOR_POLICIES = {
    'adaptive': 'adaptive (default, rules of issue 23)',
    'adaptive_before': 'adaptive, rules before issue 23',
    'linear_confirmed': 'linear, 3 repeats',
}
DOC = os.path.join(_REPO, 'docs', 'search.md')
# The most any input is read to: the raw files are a few KB, the doc 70 KB.
MAX_INPUT_BYTES = 16 << 20
POLICIES = ('stepup', 'pkb_memtier', 'pkb_memtier_avg', 'adaptive')
RULES = ('average', 'p95')
# Figures every model table rests on that no measurement fitted.
ASSUMED = (
    'p95 = average x (1.3 + 0.8 u^4), u the server\'s utilisation '
    '(search_model.P95Factor): drives PKB\'s decisions and every p95 '
    'column; fitted to nothing (redis-benchmark, the local tool, prints no '
    'p95)',
    'model noise x 0.5 of this machine\'s fitted noise on dedicated cloud '
    'VMs (--model_noise_scale): drives the CV and min columns',
    'each scenario\'s base latency, client rate per thread, useful client '
    'threads, pipelining efficiency and dips are chosen, not fitted (the '
    'scenario table says which); the peak is scaled so that the true best '
    'under the average cap is the study\'s figure',
    'PKB\'s path: 5 s per run of overhead and 300k preload keys/s per client '
    'VM (pkb_model.PkbPath), and the part of its 3.0 min install allowance '
    'that covers the git clones (0.3-0.6 min); the rest of its install is '
    'measured (scripts/bench_install.py: 2.4-2.7 min for the slower VM)',
)
GENERATED = re.compile(
    r'(<!-- generated: (?P<name>[a-z_]+) -->\n)(?P<body>.*?)'
    r'(<!-- end: (?P=name) -->)', re.S)


def ScenarioLines(raw):
  lines = ['| scenario | deployment | study | true best, average cap | true '
           'best, p95 cap | chosen, not fitted |',
           '|---|---|---|---:|---:|---|']
  for s in raw['scenarios']:
    lines.append(
        f'| {s["name"]} | {s["description"]} | {s["source"]} | '
        f'{s["true_best"]["average"]:,.0f} at {s["best_load"]} | '
        f'{s["true_best"]["p95"]:,.0f} | {"; ".join(s["assumed"])} |')
  return lines


def ResultLines(scenarios):
  lines = ['| scenario | policy | probes | probe-s | average rule: found % '
           '(min), answers over | p95 rule: found %, answers over | CV % | '
           'client-limited runs |',
           '|---|---|---:|---:|---:|---:|---:|---:|']
  for s in scenarios:
    for name in POLICIES:
      r = s['rows'].get(name)
      if r is None:
        continue
      runs = r['runs']
      lines.append(
          f'| {s["name"]} | {name} | {r["probes"]:.1f} | '
          f'{r["probe_s"]:.0f} | {r["found_pct_average"]:.1f} '
          f'({r["min_found_pct"]:.1f}), {r["over_average"]}/{runs} | '
          f'{r["found_pct_p95"]:.1f}, {r["over_p95"]}/{runs} | '
          f'{r["cv_pct"]:.2f} | {r["client_limited"]}/{runs} |')
  return lines


def LocalLines(rows):
  """Local Redis's rows (a sweep's best is its truth; no p95 from
  redis-benchmark, so one rule)."""
  lines = ['| local policy | probes | probe-s | found % of the sweep\'s best '
           '(min) | CV % | client-limited runs |',
           '|---|---:|---:|---:|---:|---:|']
  for name in ('sweep',) + POLICIES:
    r = rows.get(name)
    if r is not None:
      lines.append(
          f'| {name} | {r["probes"]:.1f} | {r["probe_s"]:.0f} | '
          f'{r["found_pct"]:.1f} ({r["min_found_pct"]:.1f}) | '
          f'{r["cv_pct"]:.2f} | {r["client_limited"]}/{r["runs"]} |')
  return lines


def _Phases(e):
  return ', '.join(f'{m:.1f}' for m in e['phase_minutes'])


def CostLines(raw):
  lines = ['| scenario | VMs | $/hr | ours: provision, install, preload, '
           'search, teardown (min) | ours min (VMs billed) | ours $ | PKB: '
           'same phases (min) | PKB min (VMs billed) | PKB $ | ours / PKB $ |',
           '|---|---|---:|---|---:|---:|---|---:|---:|---:|']
  for s in raw['scenarios']:
    mine, theirs = s['cost']['ours'], s['cost']['pkb']
    lines.append(
        f'| {s["name"]} | {mine["vms"]} | {mine["usd_per_hour"]:.2f} | '
        f'{_Phases(mine)} | {mine["minutes"]:.1f} ({mine["billed"]:.1f}) | '
        f'{mine["usd"]:.2f} | {_Phases(theirs)} | {theirs["minutes"]:.1f} '
        f'({theirs["billed"]:.1f}) | {theirs["usd"]:.2f} | '
        f'{mine["usd"] / theirs["usd"] * 100:.1f} % |')
  return lines


def TargetLines(raw):
  s = raw['scenarios']
  ours = [x['rows']['adaptive'] for x in s]
  step = [x['rows']['stepup'] for x in s]
  found = [r['found_pct_average'] for r in ours]
  time_pct = [o['probe_s'] / t['probe_s'] * 100 for o, t in zip(ours, step)]
  minutes = [x['cost']['ours']['minutes'] for x in s]
  share = [x['cost']['ours']['usd'] / x['cost']['pkb']['usd'] * 100
           for x in s]

  def Span(values, fmt='.1f'):
    return f'{min(values):{fmt}}-{max(values):{fmt}}'

  def Met(ok):
    return 'yes' if ok else 'no'

  return [
      '| target | on the model (noise x 0.5) | met? |', '|---|---|---|',
      f'| found >= 98 % of the true best (average rule) | {Span(found)} % | '
      f'{Met(min(found) >= 98)} |',
      f'| <= 20 % of the step-up\'s probe-seconds | {Span(time_pct)} % | '
      f'{Met(max(time_pct) <= 20)} |',
      f'| one machine type\'s whole study <= 10 min | {Span(minutes)} min | '
      f'{Met(max(minutes) <= 10)} |',
      f'| <= 1/3 of PKB\'s VM-dollars | {Span(share)} % | '
      f'{Met(max(share) <= 100 / 3)} |']


def AssumedLines(raw):
  del raw  # The list is the code's; the raw output carries each scenario's.
  return [f'- {a}' for a in ASSUMED]


def SettingsLines(raw):
  st = raw['settings']
  return [f'`./scripts/bench_search.py --nolocal --raw_out={st["raw_out"]}`: '
          f'{st["repetitions"]} repetitions per policy and scenario, seed '
          f'{st["seed"]}, model noise x {st["noise_scale"]:g}; shape fitted '
          f'to `{st["fixture"]}`; {st["date"]}.']


def LocalSettingsLines(local):
  st = local['settings']
  truth = local['truth']
  foreign = local['foreign_cpu_pct']
  discarded = sum(local['discarded'].values())
  failed = ', '.join(f'{n} {c}' for n, c in sorted(local['failed'].items()))
  load = ', '.join(f'{x:.1f}' for x in st['load_average'])
  best = (f'the sweep\'s best mean under the {st["cap_ms"]:g} ms cap: '
          f'{truth["throughput"]:,.0f} ops/s at {truth["connections"]} '
          'connections' if truth else 'no sweep load was under the cap')
  return [
      f'`{st["command"]} --local_raw_out={st["raw_out"]}`, {st["date"]}: '
      f'{st["repetitions_run"]} repetitions, {st["load_generator"]}, '
      f'{st["probe_seconds"]} s probes, {st["wall_s"] / 60:.1f} min wall on '
      f'{st["cpus"]} cores (load average {load} at the end); foreign CPU '
      f'{sum(foreign) / max(1, len(foreign)):.0f} % on average, '
      f'{min(foreign, default=0):.0f}-{max(foreign, default=0):.0f} % per '
      f'kept search (over {st["max_foreign_cpu_pct"]:g} % a search is run '
      f'again: {discarded} were); failed searches: {failed or "none"}; '
      f'{best}; the preload of {local["keys"]:,} keys (start, preload, '
      f'verify) took {local["prepare_s"]:.1f} s.']


def LocalSummaryLines(local):
  rows = local['rows']
  lines = []
  for name in ('sweep',) + POLICIES:
    if name in rows:
      values = ', '.join(f'{v:,.0f}'
                         for v in local['capped_per_repetition'][name])
      lines.append(f'- {name}, reported ops/s per repetition: {values}')
  ours, step = rows.get('adaptive'), rows.get('stepup')
  if ours and step and step['probe_s']:
    lines += ['', '```',
              f'found_pct={ours["found_pct"]:.1f} time_pct='
              f'{ours["probe_s"] / step["probe_s"] * 100:.1f} '
              f'cv_pct={ours["cv_pct"]:.2f}', '```']
  return lines


INSTALL_PATHS = {'ours_server': 'ours, server VM',
                 'ours_client': 'ours, client VM',
                 'pkb_server': 'PKB, server VM',
                 'pkb_client': 'PKB, client VM'}
INSTALL_STEPS = {
    'redis-server (Debian package)': 'redis-server (Debian package; '
                                     '`package_commands.RedisServerInstall`)',
    'C compiler for argv_secret': 'C compiler for argv_secret (a cloud image '
                                  'has none)',
    'build tools + tcl-dev': 'build tools + tcl-dev (PKB\'s build_tools and '
                             'redis_server package lists)',
    'Redis source': 'Redis source (the upstream tarball in Debian\'s source '
                    'package)',
    'make (one job)': 'Redis 7.0 `make`, one job as PKB runs it',
    'build tools + memtier build deps': 'build tools + memtier\'s build '
                                        'dependencies',
}


def InstallLines(install):
  lines = ['| path | step | s |', '|---|---|---:|']
  for t in install['steps']:
    lines.append(f'| {INSTALL_PATHS.get(t["path"], t["path"])} | '
                 f'{INSTALL_STEPS.get(t["step"], t["step"])} | '
                 f'{t["seconds"]:.1f} |')
  return lines


def InstallSummaryLines(install):
  ours, pkb = install['install_ours_s'], install['install_pkb_s']
  return [f'(`sudo ./scripts/bench_install.py --out={install["raw_out"]}`, '
          f'{install["date"]}, Debian {install["suite"]}; '
          f'{install["conditions"]}.) The install phase is the slower VM of '
          f'each: **ours {ours:.0f} s, PKB\'s {pkb:.0f} s** '
          f'({ours / pkb * 100:.0f} %).']


def FloorSettingsLines(floor):
  st = floor['settings']
  load = ', '.join(f'{x:.1f}' for x in st['load_average'])
  foreign = [f['foreign_cpu_pct'] for runs in floor['runs'].values()
             for f in runs]
  failed = ', '.join(f'{n} {c}' for n, c in sorted(st['failed'].items()))
  return [
      f'`{st["command"]}`, {st["date"]}: {st["load_generator"]} '
      f'{st["load_generator_version"]}, {st["probe_seconds"]} s probes, '
      f'{st["cap_ms"]:g} ms cap, {st["wall_s"] / 60:.1f} min wall on '
      f'{st["cpus"]} cores (load average {load} at the end); foreign CPU '
      f'{sum(foreign) / max(1, len(foreign)):.0f} % on average, '
      f'{min(foreign, default=0):.0f}-{max(foreign, default=0):.0f} % per '
      f'search (none discarded); failed searches: {failed or "none"}; '
      f'floor = 1 plateau probe + {st["floor"] - 1} repeats = '
      f'{st["floor"]} probes.']


def FloorLines(floor):
  lines = ['| policy | searches | probes (range) | probes / floor | search '
           'probes | repeat sets | repeats counted | disturbed repeats run '
           'again | interval reached | ops/s | verdicts |',
           '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|']
  for name, row in floor['rows'].items():
    verdicts = ', '.join(f'{v} {c}' for v, c in sorted(row['verdicts'].items()))
    ci = (f'+-{row["ci95_pct"]:.1f} %' if row['ci95_pct'] is not None
          else 'n/a')
    lines.append(
        f'| {FLOOR_POLICIES.get(name, name)} | {row["runs"]} | '
        f'{row["probes"]:.1f} ({row["probes_min"]}-{row["probes_max"]}) | '
        f'**{row["ratio"]:.2f}** | {row["search_probes"]:.1f} | '
        f'{row["repeat_sets"]:.1f} | {row["counted_repeats"]:.1f} | '
        f'{row["excluded_repeats"]} | {ci} | {row["capped"]:,.0f} | '
        f'{verdicts} |')
  return lines


class NotRawOutput(Exception):
  """A raw file not shaped as its bench writes it: (which input, why)."""


@contextlib.contextmanager
def _Reading(name, tables):
  """Adds the tables the block renders from input `name` (each a list of
  lines) to `tables`; a file of another shape (another tool's JSON, a
  hand-edited or older one) is NotRawOutput, not a traceback."""
  part = {}
  try:
    yield part
    for lines in part.values():
      if not isinstance(lines, list) or not all(
          isinstance(line, str) for line in lines):
        raise TypeError('a table that is not a list of lines')
  except (LookupError, TypeError, ValueError, AttributeError) as e:
    raise NotRawOutput(name, f'{type(e).__name__}: {e}') from None
  tables.update(part)


def Render(raw, local, install, floors=None):
  """{table name: markdown lines} for every generated section;
  NotRawOutput names the input ('raw', 'local_raw', 'install_raw' or
  'floor_<kind>') that is not shaped as its bench writes it."""
  tables = {}
  for kind, floor in (floors or {}).items():
    with _Reading(f'floor_{kind}', tables) as part:
      part[f'floor_{kind}_settings'] = FloorSettingsLines(floor)
      part[f'floor_{kind}'] = FloorLines(floor)
  with _Reading('raw', tables) as part:
    part.update({'model_settings': SettingsLines(raw),
                 'model_fit': raw['fit_lines'],
                 'model_scenarios': ScenarioLines(raw),
                 'model_results': ResultLines(raw['scenarios']),
                 'model_targets': TargetLines(raw),
                 'study_cost': CostLines(raw),
                 'model_assumed': AssumedLines(raw)})
  with _Reading('local_raw', tables) as part:
    part.update({'local_settings': LocalSettingsLines(local),
                 'local_fit': local['fit_lines'],
                 'local_results': LocalLines(local['rows']),
                 'local_summary': LocalSummaryLines(local)})
  with _Reading('install_raw', tables) as part:
    part.update({'install_steps': InstallLines(install),
                 'install_summary': InstallSummaryLines(install)})
  return tables


def Rewrite(text, tables):
  """`text` with every generated section's body replaced; unknown names and
  tables with no section are errors."""
  seen = set()

  def Body(match):
    name = match.group('name')
    if name not in tables:
      raise KeyError(f'docs/search.md names no table {name!r}')
    seen.add(name)
    return match.group(1) + '\n'.join(tables[name]) + '\n' + match.group(4)

  out = GENERATED.sub(Body, text)
  missing = sorted(set(tables) - seen)
  if missing:
    raise KeyError(f'docs/search.md has no section for {", ".join(missing)}')
  return out


def _Read(path):
  """The text of the regular file at `path`, bounded; NotRegular (a
  FIFO would hang the read, /dev/zero never end it) or NotText."""
  return regular_files.Utf8Text(
      regular_files.ReadRegular(path, MAX_INPUT_BYTES))


def Main(argv):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--raw', default=RAW)
  parser.add_argument('--local_raw', default=LOCAL_RAW)
  parser.add_argument('--install_raw', default=INSTALL_RAW)
  parser.add_argument('--doc', default=DOC)
  parser.add_argument('--write', action='store_true',
                      help='rewrite the doc instead of checking it')
  args = parser.parse_args(argv[1:])
  raws = []
  for path in (args.raw, args.local_raw, args.install_raw):
    try:
      raws.append(json.loads(_Read(path)))
    except (regular_files.NotRegular, ValueError, RecursionError) as e:
      print(f'search_doc_tables: cannot read {path}: {e}', file=sys.stderr)
      return 2
  floors = {}
  for kind, path in FLOOR_RAW.items():
    if os.path.lexists(path):
      try:
        floors[kind] = json.loads(_Read(path))
      except (regular_files.NotRegular, ValueError, RecursionError) as e:
        print(f'search_doc_tables: cannot read {path}: {e}', file=sys.stderr)
        return 2
  try:
    text = _Read(args.doc)
  except (regular_files.NotRegular, ValueError) as e:
    print(f'search_doc_tables: cannot read {args.doc}: {e}', file=sys.stderr)
    return 2
  try:
    tables = Render(*raws, floors)
  except NotRawOutput as e:
    name, why = e.args
    path = (FLOOR_RAW[name[len('floor_'):]] if name.startswith('floor_')
            else getattr(args, name))
    print(f'search_doc_tables: {path} is not shaped as its bench writes '
          f'its raw output ({why})', file=sys.stderr)
    return 2
  try:
    new = Rewrite(text, tables)
  except KeyError as e:
    print(f'search_doc_tables: {e.args[0]}', file=sys.stderr)
    return 2
  if args.write:
    with open(args.doc, 'w') as f:
      f.write(new)
    return 0
  if new != text:
    print(f'search_doc_tables: {os.path.relpath(args.doc, _REPO)} is stale; '
          'run ./scripts/search_doc_tables.py --write', file=sys.stderr)
    return 1
  return 0


if __name__ == '__main__':
  sys.exit(Main(sys.argv))
