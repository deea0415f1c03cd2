"""A safe evaluator for PKB's `flag_matrix_filters` expressions.

Upstream eval()s a filter such as `"machine_type == 'n1-standard-1' and
zones < extra_zones"` over the cell's flags. A config file is input, so the
text is parsed with `ast` and only a whitelist is walked: flag names,
constants (and tuples/lists/sets of them, negative numbers), comparisons
(chained too) and and/or/not. Anything else is a FilterError naming it,
before any part is evaluated.
"""

import ast
import operator
from typing import Any, Callable, Mapping

MAX_FILTER_CHARS = 2000
_MAX_NODES = 500

_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
            ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
            ast.Is: operator.is_, ast.IsNot: operator.is_not}
_CONSTANT_TYPES = (str, int, float, bool, type(None))
# Nodes allowed as they are (constants and unary operators are checked).
_ALLOWED = (ast.Expression, ast.Load, ast.And, ast.Or, ast.Not, ast.USub,
            ast.BoolOp, ast.Compare, ast.Name, ast.Tuple, ast.List, ast.Set,
            *_COMPARE)


class FilterError(ValueError):
  """A filter that is not a safe boolean expression over flags."""


def _Check(node: ast.AST) -> None:
  """Raises FilterError for any node outside the whitelist."""
  for count, child in enumerate(ast.walk(node), 1):
    if count > _MAX_NODES:
      raise FilterError(f'is too complex (more than {_MAX_NODES} nodes)')
    if isinstance(child, _ALLOWED):
      continue
    if isinstance(child, ast.Constant):
      if not isinstance(child.value, _CONSTANT_TYPES):
        raise FilterError(
            f'uses a {type(child.value).__name__} constant; only strings, '
            'numbers, booleans and None are allowed')
      continue
    if isinstance(child, ast.UnaryOp):
      if isinstance(child.op, ast.Not):
        continue
      if (isinstance(child.op, ast.USub) and
          isinstance(child.operand, ast.Constant) and
          isinstance(child.operand.value, (int, float)) and
          not isinstance(child.operand.value, bool)):
        continue
      raise FilterError('uses a unary operator other than "not" or a '
                        'negative number')
    raise FilterError(
        f'uses {type(child).__name__}, which is not allowed; a filter may '
        'only compare flags with constants and combine the comparisons with '
        'and / or / not')
  for child in ast.walk(node):
    if isinstance(child, (ast.Tuple, ast.List, ast.Set)):
      for element in child.elts:
        if not isinstance(element, (ast.Constant, ast.UnaryOp)):
          raise FilterError('may only list constants inside ( ), [ ] or { }')


def Parse(text: Any) -> ast.Expression:
  """Parses and checks a filter; raises FilterError when it is not safe."""
  if not isinstance(text, str):
    raise FilterError(f'must be a string, not {type(text).__name__}')
  if len(text) > MAX_FILTER_CHARS:
    raise FilterError(f'is longer than {MAX_FILTER_CHARS} characters')
  try:
    tree = ast.parse(text.strip(), mode='eval')
  except SyntaxError as e:
    raise FilterError(f'is not a valid expression ({e.msg})') from None
  _Check(tree)
  return tree


def _Evaluate(node: ast.AST, lookup: Callable[[str], Any]) -> Any:
  if isinstance(node, ast.Expression):
    return _Evaluate(node.body, lookup)
  if isinstance(node, ast.Constant):
    return node.value
  if isinstance(node, ast.Name):
    return lookup(node.id)
  if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
    return tuple(_Evaluate(e, lookup) for e in node.elts)
  if isinstance(node, ast.UnaryOp):
    value = _Evaluate(node.operand, lookup)
    return (not value) if isinstance(node.op, ast.Not) else -value
  if isinstance(node, ast.BoolOp):
    is_and = isinstance(node.op, ast.And)
    value = is_and
    for operand in node.values:  # Short-circuits like Python.
      value = _Evaluate(operand, lookup)
      if bool(value) != is_and:
        return value
    return value
  if isinstance(node, ast.Compare):
    left = _Evaluate(node.left, lookup)
    for op, comparator in zip(node.ops, node.comparators):
      right = _Evaluate(comparator, lookup)
      try:
        if not _COMPARE[type(op)](left, right):
          return False
      except TypeError as e:
        raise FilterError(f'cannot compare {left!r} with {right!r} ({e})'
                          ) from None
      left = right
    return True
  raise FilterError(f'uses {type(node).__name__}')  # _Check prevents this.


def Matches(text: str, flag_values: Mapping[str, Any]) -> bool:
  """Evaluates filter `text` over a cell's flags; True keeps the cell.

  A name that is not in `flag_values` is an error naming it (upstream PKB
  raises NameError there too).
  """
  tree = Parse(text)

  def Lookup(name: str) -> Any:
    if name not in flag_values:
      raise FilterError(
          f'names "{name}", which is neither a flag of this cell nor a known '
          'flag')
    return flag_values[name]

  return bool(_Evaluate(tree, Lookup))
