"""Plain-text tables for the console: the one renderer (tabulate's "simple").

The run summary (reporting.py), the matrix plan and summary
(matrix_runner.py) and compare's leaderboard and change points
(results_history/report.py) all print through `Lines`: a title row, a dashed
rule per column, one row per line, columns two spaces apart.
"""

from typing import Any, Collection, List, Sequence


def Lines(titles: Sequence[str], rows: Sequence[Sequence[Any]],
          right: Collection[int] = ()) -> List[str]:
  """The table's lines; cells shown as str() gives them, never re-parsed.

  Columns whose index is in `right` are right-aligned (numbers), the others
  left-aligned; trailing spaces are dropped.
  """
  # Here, not at the top: a pkb that refuses its input prints no table,
  # and tabulate's import is a part of every start.
  import tabulate  # pylint: disable=g-import-not-at-top
  text = tabulate.tabulate(
      [[str(c) for c in row] for row in rows], headers=list(titles),
      tablefmt='simple', disable_numparse=True,
      colalign=['right' if i in right else 'left'
                for i in range(len(titles))])
  return [line.rstrip() for line in text.split('\n')]
