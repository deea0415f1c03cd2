"""A run directory read as input (regular_files.Directory, evidence.Probe):
its own regular files only, bounded before and after unzipping, read only
when asked for (issue 35 class 2).

The files are real (tmp_path); the hostile ones are made the way a shared
or downloaded run directory could hold them.
"""

import gzip
import io
import os
import zlib

import pytest

from perfkitbenchmarker import evidence
from perfkitbenchmarker import regular_files


@pytest.fixture
def run_dir(tmp_path):
  probe = tmp_path / 'run' / 'raw' / 'clients-0' / 'memtier-1'
  probe.mkdir(parents=True)
  (probe / 'out.0').write_text('plain output')
  (probe / 'file.x.json.gz').write_bytes(gzip.compress(b'{"a": 1}'))
  (tmp_path / 'secret').write_text('root:HASH:1:2')
  return tmp_path / 'run'


def _Refused(call, *words):
  with pytest.raises(regular_files.NotRegular) as caught:
    call()
  message = str(caught.value)
  assert '\n' not in message and 'HASH' not in message
  for word in words:
    assert word in message, message
  return message


def test_reads_its_own_files_plain_and_gzipped(run_dir):
  with regular_files.Directory(str(run_dir)) as d:
    probe = evidence.Probe(d, 'raw/clients-0/memtier-1')
    assert probe.Text('out.0') == 'plain output'
    assert probe.Text('file.x.json') == '{"a": 1}'
    assert probe.Keys() == ['file.x.json', 'out.0']
    assert not probe.Has('out.1')
    with pytest.raises(evidence.Missing):
      probe.Text('out.1')
  with regular_files.Directory(str(run_dir)) as d:
    with pytest.raises(evidence.Missing):
      evidence.Probe(d, 'raw/clients-0/memtier-2')


def test_never_follows_a_symlink_anywhere_on_the_path(run_dir):
  probe = run_dir / 'raw' / 'clients-0' / 'memtier-1'
  os.symlink(run_dir.parent / 'secret', probe / 'out.1')
  os.symlink(probe, run_dir / 'raw' / 'linked')
  os.symlink('/dev/zero', probe / 'out.2')
  with regular_files.Directory(str(run_dir)) as d:
    _Refused(lambda: d.Read('raw/clients-0/memtier-1/out.1', 100),
             'memtier-1/out.1', 'symbolic link')
    _Refused(lambda: d.Read('raw/linked/out.0', 100), 'raw/linked',
             'symbolic link')
    _Refused(lambda: d.Read('raw/clients-0/memtier-1/out.2', 100),
             'symbolic link')
    assert d.Kind('raw/linked') == 'symbolic link'


@pytest.mark.parametrize('rel', ['../secret', 'raw/../../secret', '/etc/passwd',
                                 'raw//clients-0', './raw', ''])
def test_never_leaves_the_directory(run_dir, rel):
  with regular_files.Directory(str(run_dir)) as d:
    _Refused(lambda: d.Read(rel, 100), 'is not a path inside')


def test_a_fifo_or_a_directory_is_refused_without_waiting(run_dir):
  probe = run_dir / 'raw' / 'clients-0' / 'memtier-1'
  os.mkfifo(probe / 'out.1')
  (probe / 'out.2').mkdir()
  with regular_files.Directory(str(run_dir)) as d:
    _Refused(lambda: d.Read('raw/clients-0/memtier-1/out.1', 100), 'FIFO')
    _Refused(lambda: d.Read('raw/clients-0/memtier-1/out.2', 100),
             'a directory')


def test_sizes_are_bounded_zipped_and_unzipped(run_dir):
  probe = run_dir / 'raw' / 'clients-0' / 'memtier-1'
  (probe / 'big').write_bytes(b'x' * 1001)
  # 10 MB of zeros in some 10 KB: unzipping stops at the bound.
  (probe / 'bomb.gz').write_bytes(gzip.compress(bytes(10 << 20)))
  assert os.path.getsize(probe / 'bomb.gz') < 20000
  with regular_files.Directory(str(run_dir)) as d:
    _Refused(lambda: d.Read('raw/clients-0/memtier-1/big', 1000),
             '1,001 bytes', 'more than the 1,000')
    _Refused(lambda: d.ReadUnzipped('raw/clients-0/memtier-1/bomb.gz',
                                    1 << 20), 'bomb.gz', 'unzips to more')


def test_damaged_gzip_is_one_line(run_dir):
  probe = run_dir / 'raw' / 'clients-0' / 'memtier-1'
  whole = gzip.compress(b'y' * 100000)
  (probe / 'cut.gz').write_bytes(whole[:len(whole) // 2])
  (probe / 'junk.gz').write_bytes(b'not gzip at all')
  (probe / 'empty.gz').write_bytes(b'')
  (probe / 'two.gz').write_bytes(gzip.compress(b'ab') + gzip.compress(b'cd'))
  with regular_files.Directory(str(run_dir)) as d:
    read = lambda name: d.ReadUnzipped(f'raw/clients-0/memtier-1/{name}',
                                       1 << 20)
    _Refused(lambda: read('cut.gz'), 'cut.gz', 'truncated')
    _Refused(lambda: read('junk.gz'), 'junk.gz', 'not gzip')
    _Refused(lambda: read('empty.gz'), 'empty.gz', 'truncated')
    assert read('two.gz') == b'abcd'  # gzip's several members, as gunzip.


def test_unzipping_goes_in_small_steps(monkeypatch):
  # Each step (one C call) makes at most _STEP_BYTES, so Ctrl-C, raised
  # between Python steps, is seen within one step, not after the bomb.
  made = []
  real = zlib.decompressobj

  class Recorder:
    def __init__(self, *args):
      self._unzip = real(*args)

    def decompress(self, chunk, max_length):
      out = self._unzip.decompress(chunk, max_length)
      made.append(len(out))
      return out

    def __getattr__(self, name):
      return getattr(self._unzip, name)

  monkeypatch.setattr(regular_files.zlib, 'decompressobj', Recorder)
  data = gzip.compress(bytes(8 << 20))
  assert len(regular_files.Gunzip(io.BytesIO(data), 16 << 20)) == 8 << 20
  assert max(made) <= regular_files._STEP_BYTES and len(made) >= 8
