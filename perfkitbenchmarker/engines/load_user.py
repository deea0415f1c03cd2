"""The Redis user load generators log in as, kept apart from the run's password.

memtier_benchmark takes a password only as an argument (`-a`), and Debian's
redis-benchmark 7.0 ignores REDISCLI_AUTH. linux_packages/argv_secret.py keeps
the password out of their argv where the client VM has a C compiler; where it
has none (a Local machine set up by hand) it is readable in `ps` for the
probe's length. Either way that password is not the run's `requirepass` (the
default user, which can read the config, FLUSHALL, SHUTDOWN or change ACLs)
but that of an ACL user the shards' config defines, limited to data
commands. Its password is
derived from the run's password with HMAC-SHA256, one way: seeing it in `ps`
reveals nothing of the run's password, and a resumed run derives it again from
the config file. Both are masked in logs and results (vm_util.RegisterSecret).
"""

import hashlib
import hmac

LOAD_USER = 'pkb-load'
# Data commands only: no CONFIG (it would print requirepass), ACL, SHUTDOWN,
# FLUSHALL, DEBUG, KEYS and the like.
LOAD_USER_RULES = ('~* &* +@all -@admin -@dangerous '
                   # Cluster clients read the topology.
                   '+cluster|slots +cluster|nodes')


def LoadPassword(password: str) -> str:
  """The load user's password for the run password `password`."""
  return hmac.new(password.encode(), LOAD_USER.encode(),
                  hashlib.sha256).hexdigest()


def UserDirective(password: str) -> str:
  """The redis.conf line that defines the load user."""
  return f'user {LOAD_USER} on >{LoadPassword(password)} {LOAD_USER_RULES}'
