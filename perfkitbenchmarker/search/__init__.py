"""Pure latency-capped search algorithms: no flags, VMs, I/O or clock.

Extension seam: a new policy is a class with `NAME` and a `Steps(cap_ms)`
generator (driver.StepPolicy), tested with scripted measurements.
"""

from perfkitbenchmarker import errors


class InvalidSearchArgument(errors.UsageError, ValueError):
  """A search was configured with a value it cannot work with: a
  ValueError to callers, and a UsageError so pkb reports it in one line."""
