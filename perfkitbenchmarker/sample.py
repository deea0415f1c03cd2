"""Benchmark samples, as in PKB's sample.py: built as upstream's, sealed
(read-only) once published."""

import dataclasses
import time
import types
from typing import Any, Dict, Mapping, Optional


@dataclasses.dataclass(frozen=True)
class Sample:
  """One measured value: (metric, value, unit, metadata, timestamp).

  Built as upstream PKB's Sample is: Sample(metric, value, unit,
  metadata=None, timestamp=None), where None metadata is {} and None
  timestamp is now; a value of None is 0.0, as upstream makes it. As
  upstream's, it holds a copy of the metadata as a dict that a module may
  add to (`s.metadata.update(...)`, as a quarter of upstream's modules do
  before Run returns). The fields are never reassigned, and a published
  sample (BenchmarkSpec.EmitSamples, the one channel) is a sealed copy
  whose metadata is read-only: what was written is what the run keeps.
  """
  metric: str
  value: float
  unit: str
  metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  timestamp: float = dataclasses.field(default_factory=time.time)

  def __post_init__(self):
    object.__setattr__(self, 'metadata', dict(self.metadata or {}))
    object.__setattr__(self, 'value', float(self.value or 0.0))
    if self.timestamp is None:
      object.__setattr__(self, 'timestamp', time.time())

  def asdict(self) -> Dict[str, Any]:  # pylint: disable=invalid-name
    """The five fields by name (upstream's Sample.asdict)."""
    return dict(metric=self.metric, value=self.value, unit=self.unit,
                metadata=dict(self.metadata), timestamp=self.timestamp)

  def _replace(self, **changes: Any) -> 'Sample':  # pylint: disable=invalid-name
    """A copy with `changes` (upstream's namedtuple method: its
    redis_memtier module renames a sample's metric so)."""
    unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
    if unknown:  # upstream's words and type
      raise ValueError(f'Got unexpected field names: {sorted(unknown)!r}')
    return dataclasses.replace(self, **changes)

  def WithMetadata(self, **extra: Any) -> 'Sample':
    """Returns a copy with `extra` merged into the metadata."""
    return dataclasses.replace(self, metadata={**self.metadata, **extra})

  def Sealed(self, under: Optional[Mapping[str, Any]] = None) -> 'Sample':
    """A copy whose metadata, `under`'s beneath this sample's own, is
    read-only: the sample as published."""
    sealed = dataclasses.replace(self)
    object.__setattr__(sealed, 'metadata', types.MappingProxyType(
        {**(under or {}), **self.metadata}))
    return sealed


def FormatLabels(metadata: Mapping[str, Any]) -> str:
  """PKB's collapsed labels: |key:value|,|key:value| sorted by key."""
  return ','.join(f'|{k}:{metadata[k]}|' for k in sorted(metadata))


def ParseLabels(labels: str) -> Dict[str, str]:
  """PKB's collapsed labels `|k:v|,|k:v|` -> {k: v} (values stay strings).

  Values may contain ',' and ':' (e.g. `test_rps:SET=1,GET=2`), so items are
  split on the `|,|` separator and each on its first ':'. Raises ValueError
  on text that is not such labels, and on a key given twice (labels made
  from a dict never repeat one; which to read would be a guess).
  """
  text = (labels or '').strip()
  if not text:
    return {}
  if len(text) < 2 or text[0] != '|' or text[-1] != '|':
    raise ValueError(f'labels are not |key:value|,...: {text[:40]!r}')
  result = {}
  for item in text[1:-1].split('|,|'):
    key, sep, value = item.partition(':')
    if not sep or not key:
      raise ValueError(f'label item without key:value: {item[:40]!r}')
    if key in result:
      raise ValueError(f'the label {key[:40]!r} is given twice')
    result[key] = value
  return result
