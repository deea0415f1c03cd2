#!/usr/bin/env python3
"""Installs the redis_price_performance benchmark into an upstream PKB checkout.

  ./scripts/install_pkb_plugin.py /path/to/PerfKitBenchmarker

Writes one file, perfkitbenchmarker/linux_benchmarks/
redis_price_performance_benchmark.py, with this harness checkout's path in
it (pkb_plugin/README.md). Refuses, in one line and exit 2, a directory that
is not an upstream checkout (this harness's own checkout included), a module or benchmark name upstream already
has, or a flag name upstream already defines. Running it again updates the
file; --uninstall removes it.
"""

import argparse
import ast
import os
import re
import stat
import sys
import tempfile

HARNESS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.join(HARNESS, 'pkb_plugin',
                      'redis_price_performance_benchmark.py')
MODULE = 'redis_price_performance_benchmark.py'
MARKER = "HARNESS_DIR = '@HARNESS_DIR@'"
# What one of upstream's modules may have (its largest, 2026-08:
# linux_virtual_machine.py, 137 kB): more is no module of upstream's.
MAX_SOURCE_BYTES = 4 << 20


class InstallError(Exception):
  pass


def _Names(source: str):
  """(BENCHMARK_NAME, flag names) the plugin module defines."""
  tree = ast.parse(source)
  benchmark, flag_names = None, []
  for node in ast.walk(tree):
    if (isinstance(node, ast.Assign) and len(node.targets) == 1 and
        getattr(node.targets[0], 'id', None) == 'BENCHMARK_NAME'):
      benchmark = node.value.value
    if (isinstance(node, ast.Call) and
        getattr(node.func, 'attr', '').startswith('DEFINE') and node.args and
        isinstance(node.args[0], ast.Constant)):
      flag_names.append(node.args[0].value)
  return benchmark, flag_names


def _ReadSource(path: str) -> str:
  """A module of the checkout, read as input: a regular file itself (a
  symlink is not followed, a FIFO not waited on), of at most
  MAX_SOURCE_BYTES."""
  try:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW |
                 os.O_CLOEXEC)
  except OSError as e:
    if os.path.islink(path):
      raise InstallError(f'{path} is a symlink, not one of upstream\'s '
                         'files (not followed); nothing changed.') from None
    raise InstallError(f'{path}: {e.strerror}; nothing changed.') from None
  with os.fdopen(fd, 'rb') as f:
    if not stat.S_ISREG(os.fstat(fd).st_mode):
      raise InstallError(f'{path} is not a regular file; nothing changed.')
    data = f.read(MAX_SOURCE_BYTES + 1)
  if len(data) > MAX_SOURCE_BYTES:
    raise InstallError(f'{path} has more than {MAX_SOURCE_BYTES:,} bytes, '
                       'more than a module of upstream\'s; nothing changed.')
  return data.decode(errors='replace')


def _UpstreamSources(upstream: str):
  root = os.path.join(upstream, 'perfkitbenchmarker')
  for directory, _, files in os.walk(root):
    for name in files:
      if name.endswith('.py'):
        yield os.path.join(directory, name)


def Target(upstream: str) -> str:
  """The plugin's path in an upstream checkout; InstallError when the
  directory is no upstream checkout or a module of upstream's has that
  path."""
  benchmarks = os.path.join(upstream, 'perfkitbenchmarker', 'linux_benchmarks')
  if not (os.path.isfile(os.path.join(upstream, 'pkb.py')) and
          os.path.isfile(os.path.join(benchmarks, '__init__.py'))):
    raise InstallError(
        f'{upstream} is not a PerfKitBenchmarker checkout (no pkb.py and '
        'perfkitbenchmarker/linux_benchmarks/); give the directory you run '
        'upstream\'s ./pkb.py from.')
  if os.path.isfile(os.path.join(upstream, 'pkb_plugin', MODULE)):
    # This harness has a pkb.py and linux_benchmarks/ too, but the plugin
    # imports upstream's errors.Setup: installed here it breaks ./pkb.py.
    raise InstallError(
        f'{upstream} is a checkout of this harness, not of upstream '
        'PerfKitBenchmarker; give the directory you run upstream\'s ./pkb.py '
        'from.')
  target = os.path.join(benchmarks, MODULE)
  ours = ''
  if os.path.lexists(target):
    ours = _ReadSource(target)
    if 'redis_price_performance' not in ours or 'HARNESS_DIR = ' not in ours:
      raise InstallError(f'{target} exists and is not this plugin; upstream '
                         'has a module of that name.')
  return target


def Check(upstream: str, source: str) -> str:
  """The target path; InstallError when installing would clash."""
  target = Target(upstream)
  benchmark, flag_names = _Names(source)
  name_re = re.compile(r"^BENCHMARK_NAME\s*=\s*['\"]([^'\"]+)", re.M)
  flag_re = re.compile(r"DEFINE_\w+\(\s*['\"]([a-z0-9_]+)['\"]")
  for path in _UpstreamSources(upstream):
    if os.path.abspath(path) == os.path.abspath(target):
      continue
    text = _ReadSource(path)
    if benchmark in name_re.findall(text):
      raise InstallError(f'upstream already has a benchmark named '
                         f'{benchmark} ({path}); not installing.')
    clash = set(flag_names) & set(flag_re.findall(text))
    if clash:
      raise InstallError(f'upstream already defines --{clash.pop()} '
                         f'({path}); not installing.')
  return target


def Install(upstream: str, harness: str = HARNESS) -> str:
  with open(SOURCE) as f:
    source = f.read()
  if MARKER not in source:
    raise InstallError(f'{SOURCE} lacks the line {MARKER!r}.')
  target = Check(upstream, source)
  text = source.replace(MARKER, f'HARNESS_DIR = {os.path.abspath(harness)!r}')
  # A file of its own (O_EXCL), never through a name that exists: a
  # fixed '<target>.tmp' left as a symlink was written through.
  fd, temporary = tempfile.mkstemp(prefix=f'.{MODULE}.', suffix='.tmp',
                                   dir=os.path.dirname(target))
  try:
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)  # as open(..., 'w') would have made it
    with os.fdopen(fd, 'w') as f:
      f.write(text)
    os.replace(temporary, target)
  except BaseException:
    if os.path.lexists(temporary):
      os.remove(temporary)
    raise
  return target


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('upstream', help='upstream PerfKitBenchmarker checkout')
  parser.add_argument('--uninstall', action='store_true')
  args = parser.parse_args(argv)
  upstream = os.path.abspath(os.path.expanduser(args.upstream))
  try:
    if args.uninstall:
      # Not Check: an upstream that has since gained a benchmark or flag of
      # the plugin's names is where removing the plugin matters most.
      target = Target(upstream)
      if not os.path.exists(target):
        print(f'not installed, nothing removed: {target}')
        return 0
      os.remove(target)
      print(f'removed {target}')
      return 0
    target = Install(upstream)
  except (InstallError, OSError) as e:
    print(f'install_pkb_plugin: {e}', file=sys.stderr)
    return 2
  print(f'installed {target} (harness: {HARNESS}); run upstream\'s '
        './pkb.py --benchmarks=redis_price_performance')
  return 0


if __name__ == '__main__':
  sys.exit(main())
