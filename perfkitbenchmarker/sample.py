"""Immutable benchmark samples, as in PKB's sample.py."""

import dataclasses
import time
import types
from typing import Any, Mapping

def _Freeze(metadata: Mapping[str, Any]) -> Mapping[str, Any]:
  return types.MappingProxyType(dict(metadata))


@dataclasses.dataclass(frozen=True)
class Sample:
  """One measured value: (metric, value, unit, metadata, timestamp)."""
  metric: str
  value: float
  unit: str
  metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  timestamp: float = dataclasses.field(default_factory=time.time)

  def __post_init__(self):
    object.__setattr__(self, 'metadata', _Freeze(self.metadata))
    object.__setattr__(self, 'value', float(self.value))

  def WithMetadata(self, **extra: Any) -> 'Sample':
    """Returns a copy with `extra` merged into the metadata."""
    merged = dict(self.metadata)
    merged.update(extra)
    return dataclasses.replace(self, metadata=merged)
