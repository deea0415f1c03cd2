"""Fake upstream (tests only): sample.Sample's fields and constructor."""

import collections
import time


class Sample(collections.namedtuple(
    'Sample', ['metric', 'value', 'unit', 'metadata', 'timestamp'])):

  def __new__(cls, metric, value, unit, metadata=None, timestamp=None):
    return super().__new__(cls, metric, float(value or 0.0), unit,
                           dict(metadata or {}), timestamp or time.time())
