"""Result history: every stored PKB sample as one typed frame, and its views.

One loader (`loader.Load`) turns result directories, PKB JSON-lines files or a
BigQuery table into one pandas DataFrame; everything else is a view of it:

  loader.py        sources -> rows -> typed frame (metadata flattened)
  cells.py         the comparison cell of each sample: machine type, engine,
                   topology, workload
  nights.py        which night each run belongs to
  answers.py       each run's own answer per cell and its verdict; a cell's
                   figure and interval from its runs (within-run or across)
  leaderboard.py   the latest night's ranking, with intervals and noise calls
  changepoints.py  per-series history over nights and its change points
                   (Apache Otava's E-divisive)
  charts.py        matplotlib figures of those views, as embeddable PNG
  report.py        text, Markdown and the self-contained HTML page (Jinja2
                   templates in templates/)

scripts/compare.py is the command line over these modules.
"""
