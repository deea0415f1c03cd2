"""Pure latency-capped search algorithms: no flags, VMs, I/O or clock.

  driver.py     FindLatencyCappedMaximum: runs a policy against an injected
                `measure(load) -> Measurement`; ProbeRecord, Outcome,
                SearchResult
  linear.py     LinearStepPolicy: +N threads per probe (the published study)
  adaptive.py   AdaptiveStepPolicy: geometric growth, Little's-law prediction,
                confirmation by repeats (the default)
  staircase.py  StaircasePolicy: replays a memtier staircase run, confirms
  shards.py     OptimizeShardCount: hill-climb over shards per server VM,
                each point scored by an injected evaluate(shards)
  stats.py      mean of repeats and its 95 % interval

Extension seam: a new policy is a class with `NAME` and a `Steps(cap_ms)`
generator (see driver.StepPolicy); everything above is tested with scripted
measurements (tests/*search*_test.py).
"""

from perfkitbenchmarker import errors


class InvalidSearchArgument(errors.UsageError, ValueError):
  """A search was configured with a value it cannot work with.

  It is a `ValueError` for callers of this pure module and a `UsageError`, so
  that pkb reports it as one line before anything is provisioned.
  """
