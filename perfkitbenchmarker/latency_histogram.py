"""Latency histograms: decoded with the hdrhistogram library, merged exactly.

memtier writes HDR histograms in its JSON ('Compressed Histogram': base64 of
the compressed V2 encoding). They are decoded with `hdrh` (the maintained
HdrHistogram port) into an immutable list of (highest equivalent value in
us, count) buckets, so a Measurement stays a frozen record. Merging
histograms is the only exact way to get percentiles of processes that ran
side by side; `measurement.Combine` uses it whenever every part has one.
"""

import base64
import collections
import dataclasses
import zlib
from typing import Optional, Tuple

from hdrh import histogram as hdrh_histogram

# What a histogram's compressed counts may inflate to: hdrh's own bound on
# the counts (codec.MAX_COUNTS_SIZE, 4 MiB) plus its 40-byte payload header.
# memtier's histogram (10 us to 60 s, 3 digits) has 17,408 counts, at most
# 9 bytes each encoded: under 160 kB.
MAX_INFLATED_BYTES = (4 << 20) + 40
# The base64 text's binary header before the compressed payload (hdrh's
# ExternalHeader: cookie and length, 4 bytes each).
_EXTERNAL_HEADER_BYTES = 8


@dataclasses.dataclass(frozen=True)
class LatencyHistogram:
  """(highest equivalent value in us, count) buckets, sorted by value."""
  buckets: Tuple[Tuple[int, int], ...]

  @property
  def total_count(self) -> int:
    return sum(count for _, count in self.buckets)

  @classmethod
  def FromCompressed(cls, text: str) -> 'LatencyHistogram':
    """Decodes a base64 compressed HdrHistogram (memtier's JSON field)."""
    try:
      _CheckInflatedSize(text)
      decoded = hdrh_histogram.HdrHistogram.decode(text)
    except Exception as e:  # hdrh raises several types for bad input.
      raise ValueError(f'Not an HDR histogram: {e}') from None
    # Each non-empty bucket read straight from the counts array, keyed as
    # the library's recorded iterator keys it (its highest equivalent
    # value): the iterator steps every sub-bucket in Python, 4x the time,
    # and this runs for three histograms per memtier process per probe.
    counts = collections.Counter()
    array = decoded.counts
    for index in range(decoded.counts_len):
      count = array[index]
      if count:
        counts[int(decoded.get_highest_equivalent_value(
            decoded.get_value_from_index(index)))] += int(count)
    return cls(tuple(sorted(counts.items())))

  def Merge(self, other: 'LatencyHistogram') -> 'LatencyHistogram':
    counts = collections.Counter(dict(self.buckets))
    counts.update(dict(other.buckets))
    return LatencyHistogram(tuple(sorted(counts.items())))

  def ValueAtPercentile(self, percentile: float) -> Optional[float]:
    """Latency in ms, chosen as memtier's hdr_value_at_percentile does."""
    target = max(1, int(percentile / 100 * self.total_count + 0.5))
    seen = 0
    for value_us, count in self.buckets:
      seen += count
      if seen >= target:
        return value_us / 1000
    return None


def _CheckInflatedSize(text: str) -> None:
  """Raises ValueError when the payload inflates past MAX_INFLATED_BYTES.

  hdrh inflates the payload whole (zlib.decompress) before any check, and
  its bound on the counts is never applied: 650 kB of text (a run
  directory's raw memtier JSON may hold 32 MB) inflated to 500 MB, so a
  downloaded run could exhaust pkb-recompute's memory. Inflated here first,
  at most one byte past the bound.
  """
  payload = base64.b64decode(text)[_EXTERNAL_HEADER_BYTES:]
  inflated = zlib.decompressobj().decompress(payload, MAX_INFLATED_BYTES + 1)
  if len(inflated) > MAX_INFLATED_BYTES:
    raise ValueError(f'its counts inflate past {MAX_INFLATED_BYTES:,} bytes')

