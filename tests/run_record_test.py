"""Run record: recorded before use, atomic, versioned, teardown walks it."""

import json
import os

import pytest

from perfkitbenchmarker import errors
from perfkitbenchmarker import resource
from perfkitbenchmarker import run_record


class _Thing(resource.BaseResource):
  KIND = 'test_thing'
  log = []
  fail_creates = 0

  def _Create(self):
    if _Thing.fail_creates:
      _Thing.fail_creates -= 1
      raise resource.RetryableError('flaky')
    _Thing.log.append(('create', self.name))

  def _Delete(self):
    _Thing.log.append(('delete', self.name))


resource.RegisterKind(_Thing.KIND,
                      lambda entry, record: _Thing(entry['name']))


def test_resource_recorded_before_create(tmp_path):
  record = run_record.RunRecord.Create(str(tmp_path), 'r1')
  seen = {}

  class Spy(_Thing):
    def _Create(self):
      seen['status'] = run_record.RunRecord.Load(str(tmp_path)).FindResource(
          self.KIND, self.name)['status']

  Spy('a', record=record).Create()
  assert seen['status'] == 'creating'
  assert record.FindResource('test_thing', 'a')['status'] == 'created'


def test_retries_then_teardown_in_reverse(tmp_path):
  _Thing.log.clear()
  _Thing.fail_creates = 2
  record = run_record.RunRecord.Create(str(tmp_path), 'r2')
  for name in ('first', 'second', 'third'):
    _Thing(name, record=record, sleep=lambda s: None).Create()
  reloaded = run_record.RunRecord.Load(str(tmp_path))
  assert resource.TeardownFromRecord(reloaded) == []
  deletes = [n for op, n in _Thing.log if op == 'delete']
  assert deletes == ['third', 'second', 'first']
  assert list(run_record.RunRecord.Load(str(tmp_path)).LiveResources()) == []


def test_a_name_created_again_is_updated_and_deleted_as_the_new_entry(
    tmp_path):
  # --run_stage=cleanup then prepare again starts a shard of the same name
  # (servers-0:7001): its updates went to the old, deleted entry, so the new
  # one stayed 'creating' for ever and teardown never cleared it.
  _Thing.log.clear()
  record = run_record.RunRecord.Create(str(tmp_path), 'r5')
  first = _Thing('servers-0:7001', record=record)
  first.Create()
  first.Delete()
  _Thing('servers-0:7001', record=record).Create()
  assert [e['status'] for e in record.Resources()] == ['deleted', 'created']
  reloaded = run_record.RunRecord.Load(str(tmp_path))
  assert resource.TeardownFromRecord(reloaded) == []
  assert list(run_record.RunRecord.Load(str(tmp_path)).LiveResources()) == []


def test_retries_exhausted_is_one_line_error(tmp_path):
  _Thing.fail_creates = 5
  with pytest.raises(errors.ResourceError, match='after 3 attempts'):
    _Thing('x', sleep=lambda s: None).Create()
  _Thing.fail_creates = 0


def test_version_checked(tmp_path):
  run_record.RunRecord.Create(str(tmp_path), 'r3')
  path = tmp_path / run_record.RECORD_FILE
  data = json.loads(path.read_text())
  data['format_version'] = 99
  path.write_text(json.dumps(data))
  with pytest.raises(errors.UsageError, match='format version 99'):
    run_record.RunRecord.Load(str(tmp_path))


def test_a_key_twice_in_a_record_is_one_line_not_the_last_read(tmp_path):
  """A record with a second "resources": [] after the real list was read
  as the last, silently: teardown of a downloaded or edited run directory
  found nothing to delete and left every VM the run made."""
  record = run_record.RunRecord.Create(str(tmp_path), 'r4')
  _Thing('vm', record=record).Create()
  path = tmp_path / run_record.RECORD_FILE
  text = path.read_text().rstrip()
  path.write_text(text[:-1] + ', "resources": []}')
  with pytest.raises(errors.UsageError) as refused:
    run_record.RunRecord.Load(str(tmp_path))
  assert str(refused.value) == (
      f'Run record {path}: the key "resources" is given twice in one '
      'object, which a run never writes; refused rather than reading either '
      '(the file was edited or damaged); nothing was deleted.')


def test_missing_record_is_usage_error(tmp_path):
  with pytest.raises(errors.UsageError, match='No run record'):
    run_record.RunRecord.Load(str(tmp_path / 'nope'))


def test_a_record_read_back_is_a_regular_file_bounded_never_a_link(
    tmp_path):
  # A downloaded run directory's record: a FIFO hung teardown (and the
  # run stages, which only note SIGTERM then), a symlink to /dev/zero ended
  # in MemoryError, a symlink elsewhere was followed.
  cases = {'fifo': 'not a regular file (a FIFO)',
           'zero': 'a symbolic link (never followed',
           'elsewhere': 'a symbolic link (never followed',
           'huge': f'more than the {run_record.MAX_RECORD_BYTES:,} such'}
  for name, needle in cases.items():
    run_dir = tmp_path / name
    run_dir.mkdir()
    path = run_dir / run_record.RECORD_FILE
    if name == 'fifo':
      os.mkfifo(path)
    elif name == 'zero':
      path.symlink_to('/dev/zero')
    elif name == 'elsewhere':
      run_record.RunRecord.Create(str(tmp_path / 'other'), 'other')
      path.symlink_to(tmp_path / 'other' / run_record.RECORD_FILE)
    else:
      path.write_text(' ' * (run_record.MAX_RECORD_BYTES + 1))
    with pytest.raises(errors.UsageError) as raised:
      run_record.RunRecord.Load(str(run_dir))
    assert str(raised.value).startswith(
        f'Run record {path} is unreadable: '), raised.value
    assert needle in str(raised.value), raised.value


def test_a_save_never_writes_through_a_link_left_at_its_temporary_name(
    tmp_path):
  # A downloaded run directory with run_record.json.tmp -> a file of the
  # user's: --run_stage=teardown overwrote that file with the record and
  # left run_record.json a symlink to it.
  victim = tmp_path / 'victim.txt'
  victim.write_text('precious\n')
  run_dir = tmp_path / 'run'
  record = run_record.RunRecord.Create(str(run_dir), 'r6')
  (run_dir / (run_record.RECORD_FILE + '.tmp')).symlink_to(victim)
  record.MarkStageDone('teardown')
  assert victim.read_text() == 'precious\n'
  path = run_dir / run_record.RECORD_FILE
  assert not path.is_symlink()
  assert run_record.RunRecord.Load(str(run_dir)).stages_done == ['teardown']


def test_unknown_kind_reported_not_raised(tmp_path):
  record = run_record.RunRecord.Create(str(tmp_path), 'r4')
  record.AddResource('martian', 'm1')
  failures = resource.TeardownFromRecord(record)
  assert len(failures) == 1 and 'unknown kind "martian"' in failures[0]
