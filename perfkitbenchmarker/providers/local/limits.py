"""What this machine lets a Local run's redis-servers do, known up front.

A Local shard is a redis-server started by pkb, as pkb's user with pkb's
capabilities and limits, so two of its failures can be told before
anything starts rather than once the shards start:
  * a port below the kernel's first unprivileged one
    (net.ipv4.ip_unprivileged_port_start, 1024 by default) needs
    CAP_NET_BIND_SERVICE, which root has ('bind: Permission denied');
  * Redis lowers maxclients to its open-file limit less 32 when it cannot
    raise that limit (the hard limit, unless it holds CAP_SYS_RESOURCE),
    and then refuses connections past it ('max number of clients reached').
"""

import contextlib
import resource
from typing import Optional, Tuple

_CAP_NET_BIND_SERVICE = 10
_CAP_SYS_RESOURCE = 24
# Redis keeps this many descriptors for itself (CONFIG_MIN_RESERVED_FDS).
_RESERVED_FDS = 32
_UNPRIVILEGED_PORT_START = '/proc/sys/net/ipv4/ip_unprivileged_port_start'


def _Read(path: str) -> str:
  """The start of a small /proc file; '' when it cannot be read."""
  with contextlib.suppress(OSError, UnicodeDecodeError), open(
      path, 'rb') as f:
    return f.read(4096).decode()
  return ''


def _Capable(bit: int) -> bool:
  """Whether this process holds capability `bit` (its effective set)."""
  for line in _Read('/proc/self/status').splitlines():
    if line.startswith('CapEff:'):
      with contextlib.suppress(ValueError):
        return bool(int(line.split()[1], 16) >> bit & 1)
  return False


def FirstUnprivilegedPort() -> int:
  """The lowest port a process without CAP_NET_BIND_SERVICE may bind."""
  text = _Read(_UNPRIVILEGED_PORT_START).strip()
  return int(text) if text.isdigit() else 1024


def LowPortProblem(start_port: int) -> Optional[str]:
  """Why shards from `start_port` cannot listen here (one line ending in
  what to do), or None."""
  first = FirstUnprivilegedPort()
  if start_port >= first or _Capable(_CAP_NET_BIND_SERVICE):
    return None
  return (f'--redis_start_port={start_port}: a port below {first} needs '
          'root (CAP_NET_BIND_SERVICE) on this machine, and this run does '
          f'not have it; give --redis_start_port={first} or more (default '
          '7001), or run as root.')


def ConnectionLimit() -> Optional[Tuple[int, str, str]]:
  """The connections a redis-server started here takes at most, why, and
  what else to do (RedisStudyOptions.CheckConnections' `shard_limit`), or
  None when it may raise its hard open-file limit (CAP_SYS_RESOURCE) or
  there is none."""
  hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
  if hard == resource.RLIM_INFINITY or _Capable(_CAP_SYS_RESOURCE):
    return None
  return (max(0, hard - _RESERVED_FDS),
          f'its open-file limit, ulimit -Hn {hard:,}, less {_RESERVED_FDS}',
          'raise the limit (ulimit -Hn, as root) for the run')
