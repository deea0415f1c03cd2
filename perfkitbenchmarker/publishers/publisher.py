"""Turns Samples into PKB's published rows and fans them out to publishers."""

import dataclasses
import uuid
from typing import Any, Dict, List, Mapping, Optional, Sequence

from perfkitbenchmarker import sample as sample_lib
from perfkitbenchmarker import version as version_lib
from perfkitbenchmarker import vm_util

PRODUCT_NAME = 'PerfKitBenchmarker'


@dataclasses.dataclass(frozen=True)
class RunInfo:
  """Per-run fields PKB adds to every published sample.

  run_uri stays the short --run_uri (PKB's rows carry '<run_uri>-<uuid4>',
  one uuid per benchmark spec); README.md, "Results files", says why.
  perfkitbenchmarker_version: None means this checkout's `git describe`
  (else the package version), as PKB's version.VERSION.
  """
  run_uri: str
  owner: str
  official: bool = False
  perfkitbenchmarker_version: Optional[str] = None


def _Clean(value: Any) -> Any:
  if isinstance(value, str):
    return vm_util.Mask(value)
  return value


def ToRow(sample: sample_lib.Sample, test: str,
          run_info: RunInfo) -> Dict[str, Any]:
  """The dict PKB publishers write: sample fields plus run fields."""
  metadata = {version_lib.VERSION_KEY: (run_info.perfkitbenchmarker_version or
                                        version_lib.VersionOf())}
  metadata.update(sample.metadata)
  return {
      'metric': sample.metric,
      'value': sample.value,
      'unit': sample.unit,
      'timestamp': sample.timestamp,
      'test': test,
      'product_name': PRODUCT_NAME,
      'official': run_info.official,
      'owner': run_info.owner,
      'run_uri': run_info.run_uri,
      'sample_uri': str(uuid.uuid4()),
      'metadata': {k: _Clean(v) for k, v in metadata.items()},
  }


def FormatLabels(metadata: Mapping[str, Any]) -> str:
  """PKB's collapsed labels: |key:value|,|key:value| sorted by key."""
  return ','.join(f'|{k}:{metadata[k]}|' for k in sorted(metadata))


class SampleCollector:
  """Collects samples and hands each to every publisher at once."""

  def __init__(self, publishers: Sequence[Any], run_info: RunInfo):
    self.publishers = list(publishers)
    self.run_info = run_info
    self.samples: List[sample_lib.Sample] = []

  def Add(self, samples: Sequence[sample_lib.Sample], test: str) -> None:
    for s in samples:
      self.samples.append(s)
      row = ToRow(s, test, self.run_info)
      for p in self.publishers:
        p.Publish(row)

  def Close(self) -> None:
    for p in self.publishers:
      p.Close()
