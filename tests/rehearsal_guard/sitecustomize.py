"""The cloud rehearsal's network guard, in every Python process of the run.

Test support code, not product code: tests/rehearsal_hosts.py puts this
directory on PYTHONPATH (with PKB_REHEARSAL_GUARD_LOG set) for pkb and
every Python child it starts, so it is imported at interpreter start-up.
An audit hook refuses any socket connection, datagram or name lookup
whose host is not loopback or one of the rehearsal namespace's own
addresses (PKB_REHEARSAL_ALLOWED), the GCE metadata server 169.254.169.254
included, and appends one JSON line per refusal to the log, which the test
requires to hold none. Each process also logs that the guard is on, so the
test can see that it really ran in pkb.
"""

import ipaddress
import json
import os
import sys

_LOG = os.environ.get('PKB_REHEARSAL_GUARD_LOG')
_ALLOWED = {a for a in os.environ.get('PKB_REHEARSAL_ALLOWED', '').split(',')
            if a}


def _Cmdline():
  try:
    with open('/proc/self/cmdline', 'rb') as f:
      return f.read().split(b'\0')[:3]
  except OSError:
    return []


def _Write(entry):
  entry['cmdline'] = [a.decode(errors='replace') for a in _Cmdline()]
  with open(_LOG, 'a') as f:
    f.write(json.dumps(entry) + '\n')


def _HostAllowed(host):
  if isinstance(host, bytes):
    host = host.decode(errors='replace')
  if host is None or host == 'localhost':
    return True
  host = str(host).split('%')[0]
  try:
    address = ipaddress.ip_address(host)
  except ValueError:
    return False  # A name: resolving it could already leave the machine.
  return address.is_loopback or str(address) in _ALLOWED


def _Hook(event, args):
  if event in ('socket.connect', 'socket.sendto'):
    address = args[1]
    if not isinstance(address, tuple):
      return  # AF_UNIX and friends.
    host = address[0]
  elif event == 'socket.getaddrinfo':
    host = args[0]
  elif event in ('socket.gethostbyname', 'socket.gethostbyaddr'):
    host = args[0]
  else:
    return
  if _HostAllowed(host):
    return
  _Write({'refused': event, 'host': str(host), 'pid': os.getpid()})
  raise OSError(f'rehearsal guard: {event} to {host} refused (only loopback '
                'and the rehearsal namespace)')


if _LOG:
  sys.addaudithook(_Hook)
  _Write({'guard': 'on', 'pid': os.getpid()})
