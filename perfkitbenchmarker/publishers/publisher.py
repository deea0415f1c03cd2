"""Turns Samples into PKB's published rows and fans them out to publishers."""

import dataclasses
import functools
import uuid
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from perfkitbenchmarker import sample as sample_lib
from perfkitbenchmarker import verdict as verdict_lib
from perfkitbenchmarker import version as version_lib
from perfkitbenchmarker import vm_util

PRODUCT_NAME = 'PerfKitBenchmarker'
# Every row names the tool that made it: in a table shared with upstream
# PKB's own runs, whose redis_memtier rows have the same test and metric
# names, `harness` tells this harness's rows apart (upstream sets neither key).
HARNESS_KEY = 'harness'
HARNESS_NAME = 'redis_price_performance'
HARNESS_VERSION_KEY = 'harness_version'


@dataclasses.dataclass(frozen=True)
class RunInfo:
  """Per-run fields PKB adds to every published sample.

  Rows carry run_uri as PKB writes it, '<run_uri>-<uuid4>' (`ShortRunUri`
  gives back the --run_uri the history keys on); a None version is this
  checkout's `git describe`, else the package version, as PKB's.
  """
  run_uri: str
  owner: str
  official: bool = False
  perfkitbenchmarker_version: Optional[str] = None
  run_uuid: str = dataclasses.field(
      default_factory=lambda: str(uuid.uuid4()))

  @property
  def row_run_uri(self) -> str:
    return f'{self.run_uri}-{self.run_uuid}'


def ShortRunUri(row_run_uri: str) -> str:
  """The --run_uri of a row's run_uri ('<run_uri>-<uuid4>', or already
  short); exact, as a --run_uri has no '-' (pkb.py)."""
  return str(row_run_uri).split('-', 1)[0]


def ToRow(sample: sample_lib.Sample, test: str,
          run_info: RunInfo) -> Dict[str, Any]:
  """The dict PKB publishers write: sample and run fields, the version and
  harness keys first in the metadata. `official` is --official, except for a
  sample whose verdict or probe says it is not a confirmed server figure
  (`verdict.IsOfficial`)."""
  version = run_info.perfkitbenchmarker_version or version_lib.VersionOf()
  metadata = {version_lib.VERSION_KEY: version, HARNESS_KEY: HARNESS_NAME,
              HARNESS_VERSION_KEY: version}
  metadata.update(sample.metadata)
  return {
      'metric': sample.metric,
      'value': sample.value,
      'unit': sample.unit,
      'timestamp': sample.timestamp,
      'test': test,
      'product_name': PRODUCT_NAME,
      'official': (run_info.official and
                   verdict_lib.IsOfficial(sample.metadata)),
      'owner': run_info.owner,
      'run_uri': run_info.row_run_uri,
      'sample_uri': str(uuid.uuid4()),
      # Secrets masked out of every text value before any publisher has it.
      'metadata': {k: vm_util.Mask(v) if isinstance(v, str) else v
                   for k, v in metadata.items()},
  }


class SampleCollector:
  """Collects samples and hands each to every publisher at once.

  `room(path, write)`: how a publisher's write of its file `path` is made
  (the driver's gives it the run's room on a full disk, evidence.WithRoom);
  a publisher's write that fails is cut back whole (results_file), so it
  may be made again.
  """

  def __init__(self, publishers: Sequence[Any], run_info: RunInfo,
               room: Callable[[str, Callable[[], Any]], Any] = (
                   lambda unused_path, write: write())):
    self.publishers = list(publishers)
    self.run_info = run_info
    self.samples: List[sample_lib.Sample] = []
    self._room = room

  def Add(self, samples: Sequence[sample_lib.Sample], test: str) -> None:
    for s in samples:
      row = ToRow(s, test, self.run_info)
      for p in self.publishers:
        self._room(getattr(p, 'path', ''), functools.partial(p.Publish, row))
      # Counted once every publisher has it: a results file the disk
      # refused never reports a sample it does not hold.
      self.samples.append(s)

  def Close(self) -> None:
    for p in self.publishers:
      p.Close()
