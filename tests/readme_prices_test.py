"""The README's price examples run as written and print what it says."""

import os
import re
import shlex

from perfkitbenchmarker import pkb

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _PriceExamples():
  """(argv, what its comment says) of each dry run in README's "Prices"
  block (the lines giving --price_basis and --machine_price)."""
  with open(os.path.join(REPO, 'README.md'), encoding='utf-8') as f:
    text = re.sub(r'\\\n\s*', ' ', f.read())  # Continued lines joined.
  examples = []
  for line in text.splitlines():
    if (line.startswith('./pkb.py --cloud=') and '--dry_run' in line and
        ('--machine_price=' in line or '$' in line)):
      command, _, comment = line.partition('#')
      examples.append((shlex.split(command)[1:], comment.strip()))
  return examples


def test_the_readme_price_examples_dry_run_as_written(
    pkb_main, tmp_path, capsys):
  # The AWS one was refused: its clients (the config's c6gn.16xlarge) have
  # no us-west-2 price either, so one --machine_price was not enough.
  examples = _PriceExamples()
  assert len(examples) == 3, examples
  for argv, comment in examples:
    code = pkb_main([f'--results_dir={tmp_path}'] + argv)
    out, err = capsys.readouterr()
    assert code == pkb.EXIT_OK, err
    figure = re.search(r'\$[\d.]+/hr', comment)
    if figure:
      assert f', {figure.group(0)} each' in out, out
    else:
      assert 'as given with --machine_price' in out
