"""redis.conf lines read the way redis-server reads them.

redis-server splits each config line into arguments with its own rules
(sds.c `sdssplitargs`): arguments are separated by blanks; "double quotes"
take backslash escapes (\\n, \\r, \\t, \\b, \\a, \\xHH, and \\ before any
other character stands for it); 'single quotes' take only \\'; a quote may
start in the middle of an argument (po"rt" is port); a closing quote must be
followed by a blank or the end of the line, and an unclosed quote makes the
line invalid. The directive, the first argument, is matched without regard
to case. `SplitArgs` applies those rules, so a check of a user's line sees
the directive redis-server would act on, whatever the quoting.

`UserLineProblem` is the one parser of a user's extra config line
(--redis_server_options, from the command line, a config file, a matrix
axis or the PKB plugin): a line passes only if its directive is in
TUNABLE_DIRECTIVES, an allow-list of directives that tune a shard and leave
alone everything the harness finds, stops and tears it down by (its name
and process title, ports and sockets, files and directory, pidfile, logins,
commands, modules). A deny-list of what is managed missed one directive
after another ('port' quoted, then proc-title-template, which started a
shard no teardown could recognise); an allow-list ends that class: a
directive nobody reviewed is refused, not passed on.

Pure: strings in, arguments out.
"""

import re
from typing import List, Optional

_BLANKS = ' \n\r\t\f\v\0'
_BLANK_RUN = re.compile('[' + re.escape(_BLANKS) + ']*')
# One argument: unquoted characters, then at most one quoted part ("double",
# where a backslash takes the next character, or 'single', where only \'
# is an escape); the caller checks what follows it.
_ARGUMENT = re.compile(
    '([^' + re.escape(_BLANKS) + '"\']*)'
    r"""(?:"((?:\\.|[^"\\])*)"|'((?:\\'|\\(?!')|[^'\\])*)')?""",
    re.DOTALL)
_DOUBLE_ESCAPE = re.compile(r'\\(x[0-9a-fA-F]{2}|.)', re.DOTALL)
_ESCAPES = {'n': '\n', 'r': '\r', 't': '\t', 'b': '\b', 'a': '\a'}


def _Unescape(escape: re.Match) -> str:
  code = escape.group(1)
  return chr(int(code[1:], 16)) if len(code) == 3 else _ESCAPES.get(code, code)


def SplitArgs(line: str) -> Optional[List[str]]:
  """The arguments of one config line, or None where redis-server would
  refuse it (unbalanced quotes, a quote closed in mid-argument)."""
  args: List[str] = []
  i = 0
  while True:
    i = _BLANK_RUN.match(line, i).end()
    if i == len(line):
      return args
    argument = _ARGUMENT.match(line, i)
    i = argument.end()
    if i < len(line) and line[i] not in _BLANKS:
      return None  # A quote left open, or text right after a closing one.
    plain, double, single = argument.groups()
    if double is not None:
      plain += _DOUBLE_ESCAPE.sub(_Unescape, double)
    elif single is not None:
      plain += single.replace("\\'", "'")
    args.append(plain)


def Directive(line: str) -> Optional[str]:
  """The directive redis-server takes from `line` (lowercase), '' for a
  blank or comment line, None for a line it refuses."""
  stripped = line.strip(' \t\r\n')
  if not stripped or stripped.startswith('#'):
    return ''
  args = SplitArgs(stripped)
  if args is None:
    return None
  return args[0].lower() if args else ''


# Directives the harness writes itself (each shard's config): a user value
# would make the run record describe a server other than the one running.
MANAGED_DIRECTIVES = frozenset({
    'port', 'bind', 'unixsocket', 'unixsocketperm', 'requirepass',
    'masterauth', 'masteruser', 'aclfile', 'user', 'dir', 'dbfilename',
    'daemonize', 'pidfile', 'logfile', 'include', 'cluster-enabled',
    'cluster-config-file', 'cluster-port', 'tls-port', 'protected-mode',
    'supervised', 'replicaof', 'slaveof'})
# Commands the harness sends; renaming them breaks the run.
MANAGED_COMMANDS = frozenset({'config', 'shutdown', 'auth', 'ping', 'dbsize',
                              'cluster', 'info', 'flushall'})
# What a user may add (known to Redis 7.0 and later and to Valkey, with the
# older ziplist spellings): memory and eviction, encodings, client and network
# limits, threads, persistence written into the shard's own directory under
# the harness's names, replication and cluster timing, and what is logged.
# Not here, so refused: anything naming a file, directory, module, address,
# port or process title (proc-title-template, set-proc-title, loadmodule,
# appendfilename, appenddirname, *-announce-*, tls-*), anything that changes
# how a shard stops (shutdown-on-sig*, shutdown-timeout) or who may log in
# or run what (rename-command, enable-*-command, acl-pubsub-default), and
# placement the harness owns (*_cpulist, oom-score-adj*).
TUNABLE_DIRECTIVES = frozenset({
    # Memory and eviction.
    'maxmemory', 'maxmemory-policy', 'maxmemory-samples',
    'maxmemory-eviction-tenacity', 'maxmemory-clients', 'active-expire-effort',
    'lazyfree-lazy-eviction', 'lazyfree-lazy-expire',
    'lazyfree-lazy-server-del', 'lazyfree-lazy-user-del',
    'lazyfree-lazy-user-flush', 'replica-lazy-flush', 'lfu-log-factor',
    'lfu-decay-time', 'activedefrag', 'active-defrag-cycle-min',
    'active-defrag-cycle-max', 'active-defrag-ignore-bytes',
    'active-defrag-max-scan-fields', 'active-defrag-threshold-lower',
    'active-defrag-threshold-upper', 'jemalloc-bg-thread', 'activerehashing',
    'disable-thp', 'databases',
    # Encodings.
    'hash-max-listpack-entries', 'hash-max-listpack-value',
    'hash-max-ziplist-entries', 'hash-max-ziplist-value',
    'list-max-listpack-size', 'list-max-ziplist-size', 'list-compress-depth',
    'set-max-intset-entries', 'zset-max-listpack-entries',
    'zset-max-listpack-value', 'zset-max-ziplist-entries',
    'zset-max-ziplist-value', 'hll-sparse-max-bytes', 'stream-node-max-bytes',
    'stream-node-max-entries',
    # Clients, network, threads.
    'maxclients', 'timeout', 'tcp-keepalive', 'tcp-backlog', 'io-threads',
    'io-threads-do-reads', 'hz', 'dynamic-hz', 'client-output-buffer-limit',
    'client-query-buffer-limit', 'proto-max-bulk-len',
    'tracking-table-max-keys', 'busy-reply-threshold', 'lua-time-limit',
    # Persistence (files in the shard's directory, under the harness's names).
    'save', 'appendonly', 'appendfsync', 'no-appendfsync-on-rewrite',
    'auto-aof-rewrite-percentage', 'auto-aof-rewrite-min-size',
    'aof-use-rdb-preamble', 'aof-rewrite-incremental-fsync',
    'aof-timestamp-enabled', 'aof-load-truncated', 'rdbcompression',
    'rdbchecksum', 'rdb-save-incremental-fsync', 'rdb-del-sync-files',
    'stop-writes-on-bgsave-error',
    # Replication and cluster timing.
    'repl-backlog-size', 'repl-backlog-ttl', 'repl-timeout',
    'repl-diskless-sync', 'repl-diskless-sync-delay',
    'repl-diskless-sync-max-replicas', 'repl-diskless-load',
    'repl-disable-tcp-nodelay', 'repl-ping-replica-period',
    'replica-read-only', 'replica-serve-stale-data', 'replica-priority',
    'min-replicas-to-write', 'min-replicas-max-lag', 'cluster-node-timeout',
    'cluster-require-full-coverage', 'cluster-allow-reads-when-down',
    'cluster-replica-validity-factor', 'cluster-migration-barrier',
    'cluster-allow-replica-migration', 'cluster-replica-no-failover',
    'cluster-link-sendbuf-limit', 'cluster-allow-pubsubshard-when-down',
    # What is logged and measured.
    'loglevel', 'latency-tracking', 'latency-tracking-info-percentiles',
    'latency-monitor-threshold', 'slowlog-log-slower-than', 'slowlog-max-len',
    'notify-keyspace-events', 'acllog-max-len',
})


def UserLineProblem(line: str) -> Optional[str]:
  """Why a user's extra config line cannot go into a shard's config, or
  None when it may (read as redis-server reads it; see the module doc)."""
  if any(c in line for c in '\n\r\0'):
    return f'{line!r} holds a line break; give one directive per item.'
  directive = Directive(line)
  if directive is None:
    return (f'{line!r} has unbalanced quotes (redis-server would refuse to '
            'start); fix the quoting.')
  if not directive:
    return None  # A blank or comment line sets nothing.
  if directive in MANAGED_DIRECTIVES:
    return (f'"{directive}" is set by the harness (it finds, stops and tears '
            'down each shard by it); remove it.')
  args = SplitArgs(line.strip()) or []
  if (directive == 'rename-command' and len(args) > 1 and
      args[1].lower() in MANAGED_COMMANDS):
    return (f'"rename-command {args[1].upper()}" would hide a command the '
            'harness sends; remove it.')
  if directive not in TUNABLE_DIRECTIVES:
    shown = directive[:60] if directive.isprintable() else repr(directive[:60])
    return (f'"{shown}" is not one of the tuning directives the harness '
            'passes on (memory, encodings, clients, threads, persistence, '
            'replication and cluster timing, logging: TUNABLE_DIRECTIVES in '
            'linux_packages/redis_config.py); one that could change a '
            'shard\'s name, ports, files or logins would leave a shard '
            'teardown cannot recognise; remove it.')
  return None
