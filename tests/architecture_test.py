"""docs/architecture.md's layers, held against the code's imports.

The doc places every product module (perfkitbenchmarker/, pkb_plugin/,
pkb.py) in one numbered layer. Every import a module makes, at its top or
inside a function, is read with `ast` (nothing is imported or run) and must
point to its own layer or a lower one, unless the doc lists that very import
under "Imports that point up" with its reason. A module missing from the
doc, a doc entry for a file that is gone, an exception no longer needed and
a circle of imports fail here with the names to fix.
"""

import ast
import os
import re
from typing import Dict, List, Set, Tuple

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(REPO, 'docs', 'architecture.md')
PRODUCT_DIRS = ('perfkitbenchmarker', 'pkb_plugin')
PRODUCT_FILES = ('pkb.py',)
# An entry's path starts before this column; deeper lines continue the
# description of the entry above.
ENTRY_COLUMN = 20
LAYER_HEADING = re.compile(r'^### (\d+) (\w[\w ]*):')
EXCEPTION_LINE = re.compile(r'^- `([^`]+)` -> `([^`]+)`: (\S.*)$')


def ProductFiles() -> List[str]:
  """Every product module, as a path from the repository root."""
  files = list(PRODUCT_FILES)
  for top in PRODUCT_DIRS:
    for directory, dirs, names in os.walk(os.path.join(REPO, top)):
      dirs[:] = sorted(d for d in dirs if d != '__pycache__')
      files += [os.path.relpath(os.path.join(directory, n), REPO)
                for n in sorted(names) if n.endswith('.py')]
  return files


def ModuleName(path: str) -> str:
  name = path[:-len('.py')].replace(os.sep, '.')
  return name[:-len('.__init__')] if name.endswith('.__init__') else name


def _Section(text: str, heading: str) -> List[str]:
  """The lines of the `## heading` section."""
  lines = text.splitlines()
  start = lines.index(f'## {heading}') + 1
  end = next((i for i in range(start, len(lines))
              if lines[i].startswith('## ')), len(lines))
  return lines[start:end]


def DocLayers(text: str) -> Dict[str, Tuple[int, str]]:
  """path -> (layer number, layer name), from the fenced trees under each
  `### N name:` heading of "## Layers"."""
  layers: Dict[str, Tuple[int, str]] = {}
  layer = None
  in_block = False
  folders: List[Tuple[int, str]] = []  # (indent, folder) of open folders
  for line in _Section(text, 'Layers'):
    heading = LAYER_HEADING.match(line)
    if heading:
      layer = (int(heading.group(1)), heading.group(2).strip())
      continue
    if line.strip().startswith('```'):
      in_block = not in_block
      folders = []
      continue
    if not in_block or layer is None or not line.strip():
      continue
    indent = len(line) - len(line.lstrip())
    token = line.split()[0]
    if indent >= ENTRY_COLUMN or not token.endswith(('.py', '/')):
      continue  # A description's continuation.
    folders = [(i, f) for i, f in folders if i < indent]
    path = ''.join(f for _, f in folders) + token
    if token.endswith('/'):
      folders.append((indent, token))
      continue
    assert path not in layers, f'{path} is placed twice in {DOC}'
    layers[path] = layer
  return layers


def DocExceptions(text: str) -> Dict[Tuple[str, str], str]:
  """(importer, imported) -> reason, from "## Imports that point up"."""
  found = {}
  for line in _Section(text, 'Imports that point up'):
    match = EXCEPTION_LINE.match(line)
    if match:
      found[(match.group(1), match.group(2))] = match.group(3)
  return found


def Imports(path: str, modules: Dict[str, str]) -> Set[str]:
  """The product modules (as paths) that `path` imports, anywhere in it.

  `from a.b import c` names module a.b.c when that is a module, else a.b;
  an import of a package is an import of its __init__.py."""
  name = ModuleName(path)
  package = name if path.endswith('__init__.py') else name.rpartition('.')[0]
  with open(os.path.join(REPO, path), encoding='utf-8') as f:
    tree = ast.parse(f.read(), path)
  wanted = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      wanted += [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
      base = node.module or ''
      if node.level:
        parts = package.split('.')
        parts = parts[:len(parts) - node.level + 1]
        base = '.'.join(parts + ([base] if base else []))
      wanted += [f'{base}.{alias.name}' for alias in node.names]
  found = set()
  for target in wanted:
    while target and target not in modules:
      target = target.rpartition('.')[0]
    if target and modules[target] != path:
      found.add(modules[target])
  return found


@pytest.fixture(scope='module')
def doc_text():
  with open(DOC, encoding='utf-8') as f:
    return f.read()


@pytest.fixture(scope='module')
def graph():
  files = ProductFiles()
  modules = {ModuleName(p): p for p in files}
  return {p: Imports(p, modules) for p in files}


def test_every_product_module_has_one_layer_in_the_doc(doc_text):
  layers = DocLayers(doc_text)
  files = set(ProductFiles())
  missing = sorted(files - set(layers))
  gone = sorted(set(layers) - files)
  assert not missing, (
      f'{DOC} places no layer for: {", ".join(missing)} (add each under '
      'its layer in "## Layers")')
  assert not gone, f'{DOC} lists files that do not exist: {", ".join(gone)}'


def test_imports_point_down_the_layers(doc_text, graph):
  layers = DocLayers(doc_text)
  allowed = DocExceptions(doc_text)
  up = sorted((a, b) for a, targets in graph.items() for b in targets
              if a in layers and b in layers and layers[b][0] > layers[a][0])
  unexplained = [f'{a} ({layers[a][1]}) -> {b} ({layers[b][1]})'
                 for a, b in up if (a, b) not in allowed]
  assert not unexplained, (
      'imports that point up a layer (move the code, or list the import '
      'with its reason under "Imports that point up" in docs/architecture.md'
      '): ' + '; '.join(unexplained))
  stale = sorted(set(allowed) - set(up))
  assert not stale, (
      'listed under "Imports that point up" but no longer an upward import '
      '(strike it): ' + '; '.join(f'{a} -> {b}' for a, b in stale))


def test_engines_and_load_generators_never_import_each_other(graph):
  engines, clients = 'perfkitbenchmarker/engines/', (
      'perfkitbenchmarker/load_generators/')
  crossed = sorted(f'{a} -> {b}' for a, targets in graph.items()
                   for b in targets
                   if (a.startswith(engines) and b.startswith(clients)) or
                   (a.startswith(clients) and b.startswith(engines)))
  assert not crossed, crossed


def test_only_the_driver_imports_the_results_layer(doc_text, graph):
  layers = DocLayers(doc_text)
  results = {layers[p][0] for p in layers if layers[p][1] == 'results'}
  driver = {layers[p][0] for p in layers if layers[p][1] == 'driver'}
  assert results and driver
  wired = sorted(f'{a} ({layers[a][1]}) -> {b}'
                 for a, targets in graph.items() for b in targets
                 if layers.get(b, (0,))[0] in results and
                 layers.get(a, (0,))[0] not in results | driver)
  assert not wired, wired


def test_declared_exceptions_are_few_and_give_a_reason(doc_text):
  allowed = DocExceptions(doc_text)
  assert len(allowed) <= 2, allowed  # Issue 27's target: at most 2.
  for (importer, imported), reason in allowed.items():
    assert len(reason.split()) >= 5, (importer, imported, reason)


def test_no_module_imports_itself_through_others(graph):
  """No circles: Tarjan's strongly connected components of the imports."""
  index: Dict[str, int] = {}
  low: Dict[str, int] = {}
  stack: List[str] = []
  on_stack: Set[str] = set()
  circles = []

  def Visit(node: str) -> None:
    # Iterative, so a long chain of imports needs no deep recursion.
    work = [(node, iter(sorted(graph[node])))]
    index[node] = low[node] = len(index)
    stack.append(node)
    on_stack.add(node)
    while work:
      current, targets = work[-1]
      for target in targets:
        if target not in index:
          index[target] = low[target] = len(index)
          stack.append(target)
          on_stack.add(target)
          work.append((target, iter(sorted(graph[target]))))
          break
        if target in on_stack:
          low[current] = min(low[current], index[target])
      else:
        work.pop()
        if work:
          low[work[-1][0]] = min(low[work[-1][0]], low[current])
        if low[current] == index[current]:
          component = []
          while True:
            member = stack.pop()
            on_stack.discard(member)
            component.append(member)
            if member == current:
              break
          if len(component) > 1:
            circles.append(sorted(component))

  for node in sorted(graph):
    if node not in index:
      Visit(node)
  assert not circles, 'modules that import each other: ' + '; '.join(
      ' <-> '.join(c) for c in circles)


def test_the_reader_sees_what_the_doc_says():
  """The parser itself, on a doc written for it."""
  text = '\n'.join([
      '## Layers', '', '### 2 upper: uses the lower', '', '```',
      'pkb.py                    the command',
      'perfkitbenchmarker/',
      '  study/                  steps',
      '    deployment.py         what prepare builds;',
      '                          a.py here is a description',
      '  pkb.py                  the driver', '```', '',
      '### 1 lower: imports nothing above', '', '```',
      'perfkitbenchmarker/',
      '  errors.py               one line each', '```', '',
      '## Imports that point up', '',
      '- `perfkitbenchmarker/errors.py` -> `pkb.py`: a reason in words here',
      '', '## Run stages', '- `x` -> `y`: not an exception'])
  assert DocLayers(text) == {
      'pkb.py': (2, 'upper'),
      'perfkitbenchmarker/study/deployment.py': (2, 'upper'),
      'perfkitbenchmarker/pkb.py': (2, 'upper'),
      'perfkitbenchmarker/errors.py': (1, 'lower')}
  assert DocExceptions(text) == {
      ('perfkitbenchmarker/errors.py', 'pkb.py'): 'a reason in words here'}
