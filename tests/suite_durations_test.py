"""scripts/suite_durations.py: tests/durations.json from a JUnit report.

tests/data/junit_two_files.xml is pytest's own report of a real run:
`.venv/bin/python -m pytest tests/background_tasks_test.py
tests/capped_result_test.py --junitxml=...` (13 passed) at 41209dd.
"""

import json

import pytest

from scripts import suite_durations


@pytest.fixture
def checkout(tmp_path):
  """A checkout whose test files are the report's two."""
  (tmp_path / 'tests').mkdir()
  for name in ('background_tasks_test.py', 'capped_result_test.py'):
    (tmp_path / 'tests' / name).write_text('')
  return tmp_path


def test_each_file_gets_the_sum_of_its_tests_seconds(checkout, data_path):
  seconds = suite_durations.FromJunit(data_path('junit_two_files.xml'),
                                     str(checkout))
  assert seconds == {
      'tests/background_tasks_test.py': pytest.approx(0.113),
      'tests/capped_result_test.py': pytest.approx(2.227)}
  out = checkout / 'durations.json'
  suite_durations.Write(seconds, str(out))
  # The format conftest reads and writes: sorted, 0.1 s, one a line.
  assert out.read_text() == ('{\n "tests/background_tasks_test.py": 0.1,\n'
                             ' "tests/capped_result_test.py": 2.2\n}\n')
  assert json.loads(out.read_text()) == {
      'tests/background_tasks_test.py': 0.1,
      'tests/capped_result_test.py': 2.2}


def test_a_class_or_a_module_skipped_whole_is_its_file(checkout, tmp_path,
                                                      data_path):
  text = open(data_path('junit_two_files.xml')).read()
  text = text.replace(
      'classname="tests.capped_result_test" name="test_a_fixed_load',
      'classname="tests.capped_result_test.TestSome" name="test_a_fixed_load')
  # pytest's case for a module skipped at collection: no class, the
  # module's dotted path as the name.
  text = text.replace(
      '</testsuite>', '<testcase classname="" name="tests.skipped_test" '
      'time="0.500"><skipped message="no tool" /></testcase></testsuite>')
  (checkout / 'tests' / 'skipped_test.py').write_text('')
  report = tmp_path / 'report.xml'
  report.write_text(text)
  seconds = suite_durations.FromJunit(str(report), str(checkout))
  assert seconds['tests/capped_result_test.py'] == pytest.approx(2.227)
  assert seconds['tests/skipped_test.py'] == pytest.approx(0.5)


@pytest.mark.parametrize('change,words', [
    (('time="0.155" />', 'time="0.155"><failure message="x" /></testcase>'),
     'test_summary_row_pairs_the_repeats_average_with_their_p99 failed'),
    (('time="0.155" />', 'time="0.155"><error message="x" /></testcase>'),
     'failed'),
    (('<testcase classname="tests.background', '<testcase classname="x.y'),
     "names no file"),
])
def test_a_report_that_cannot_give_every_files_seconds_is_refused(
    checkout, tmp_path, data_path, change, words):
  report = tmp_path / 'report.xml'
  report.write_text(
      open(data_path('junit_two_files.xml')).read().replace(*change, 1))
  with pytest.raises(suite_durations.ReportError, match=words):
    suite_durations.FromJunit(str(report), str(checkout))


def test_a_part_of_the_suite_is_refused(checkout, data_path):
  (checkout / 'tests' / 'other_test.py').write_text('')
  with pytest.raises(suite_durations.ReportError,
                     match=r'no test of 1 test file\(s\) \(tests/other_test'):
    suite_durations.FromJunit(data_path('junit_two_files.xml'), str(checkout))


def test_an_unreadable_report_is_one_line(checkout, tmp_path):
  broken = tmp_path / 'broken.xml'
  broken.write_text('<testsuites')
  with pytest.raises(suite_durations.ReportError, match='cannot read'):
    suite_durations.FromJunit(str(broken), str(checkout))
