"""The benchmark module contract: PKB's names and the optional hooks.

One table, `CONTRACT`, says what a benchmark module (linux_benchmarks/
*_benchmark.py) must define and which optional hooks the harness calls when
a module has them, each with the arguments it is called with and what it
returns. linux_benchmarks checks every module against it when the module
loads (`Check`: a missing name, or a hook that is not a function taking its
arguments, is one line naming the module and the hook), and the harness
calls an optional hook through `Call(module, name, ...)`, which runs the
hook's default when the module has none, so a module with PKB's functions
alone dry-runs and runs. docs/architecture.md ("The benchmark contract") is
this table in prose.

Kept below the driver and the spec (it imports only errors), so every layer
that calls a hook can use it.
"""

import dataclasses
import inspect
import re
from typing import Callable, Optional, Tuple

from perfkitbenchmarker import errors


@dataclasses.dataclass(frozen=True)
class Hook:
  """One name of the contract: a function's arguments or a constant's type.

  `args` are the positional arguments the harness passes (None for a
  constant); `default` is what the harness does when an optional function
  is absent, taking the module (None for a required name).
  """
  name: str
  args: Optional[Tuple[str, ...]]
  returns: str
  doc: str
  required: bool = False
  default: Optional[Callable[[object], Callable]] = None


def _Nothing(module):
  del module
  return lambda *args: None


def _NoLines(module):
  del module
  return lambda spec: []


CONTRACT: Tuple[Hook, ...] = (
    # PKB's own names: every module has them.
    Hook('BENCHMARK_NAME', None, 'str',
         'the --benchmarks name, lowercase letters, digits and _',
         required=True),
    Hook('BENCHMARK_CONFIG', None, 'str',
         'the default config, YAML: a section named BENCHMARK_NAME with '
         'vm_groups (each with a vm_spec per cloud)', required=True),
    Hook('GetConfig', ('user_config',), 'dict',
         'the merged config from {"file": text or None, "overrides": list}',
         required=True),
    Hook('Prepare', ('spec',), 'None',
         'the prepare stage: install and start on spec.vms', required=True),
    Hook('Run', ('spec',), 'list[sample.Sample]',
         'the run stage: the samples measured', required=True),
    Hook('Cleanup', ('spec',), 'None',
         'the cleanup stage: stop what Prepare started', required=True),
    # Optional: called when present, else the default.
    Hook('CheckPrerequisites', ('config',), 'None',
         'refuses a config or flags before anything starts (raise '
         'errors.UsageError)', default=_Nothing),
    Hook('DescribePlan', ('spec',), 'list[str]',
         "--dry_run's lines about what the run would do", default=_NoLines),
    Hook('PlanWarnings', ('spec',), 'list[str]',
         'warnings printed before the run (and the dry run)',
         default=_NoLines),
    Hook('EstimatedMinutes', ('spec',), 'float',
         "the run stage's probe minutes, for the cost estimate (the "
         "provider's fixed part of the stage is cost_estimate's; absent: "
         'not estimated, counted to --timeout_minutes)'),
    Hook('EstimatedPreloadKeys', ('spec',), 'int',
         'keys loaded before the run, for the estimate (absent: none)'),
    Hook('EstimatedPreloadClientVms', ('spec',), 'int',
         'client VMs that preload, for the estimate (absent: every client)'),
    Hook('ClientLoadGenerator', ('spec',), 'str or None',
         "the clients' load generator ('memtier' is checked against the "
         "clients' OS before a cloud run)"),
    Hook('DatasetEstimate', ('spec',), 'prepare_checks.DatasetEstimate',
         "the data set, checked against the servers' memory before a cloud "
         'run'),
    Hook('RealRunNeeds', ('spec',), 'list[str]',
         'what a real cloud run still needs (flags, credentials), listed '
         'at once', default=_NoLines),
    Hook('PublishedTestName', ('cloud',), 'str',
         "the samples' test name on that cloud (absent: BENCHMARK_NAME)",
         default=lambda module: lambda cloud: module.BENCHMARK_NAME),
    Hook('UsedOsType', ('requested', 'cloud'), 'str or None',
         'the os_type booted for a requested one (a retired image\'s '
         'successor); None on Local'),
    Hook('PEER_TCP_PORTS', None, 'tuple[tuple[int, int], ...]',
         'TCP port ranges the VMs open to each other besides Redis\'s'),
    Hook('STARTS_REDIS_SHARDS', None, 'bool',
         'whether the run listens on ports from --redis_start_port (its '
         'shards or databases), which a cloud provider then checks it '
         'opens between the VMs (absent: no such check)'),
)
_BY_NAME = {h.name: h for h in CONTRACT}
_NAME = re.compile(r'[a-z][a-z0-9_]{0,62}')


def Check(module, where: str) -> None:
  """Raises errors.Error, one line, if `module` breaks the contract."""
  missing = [h.name for h in CONTRACT
             if h.required and not hasattr(module, h.name)]
  if missing:
    raise errors.Error(f'{where} lacks {", ".join(missing)} (the benchmark '
                       'contract: perfkitbenchmarker/linux_benchmarks/'
                       '__init__.py).')
  name = module.BENCHMARK_NAME
  if not isinstance(name, str) or not _NAME.fullmatch(name):
    raise errors.Error(f'{where}: BENCHMARK_NAME must be lowercase letters, '
                       f'digits and _, not {name!r}.')
  if not isinstance(module.BENCHMARK_CONFIG, str):
    raise errors.Error(f'{where}: BENCHMARK_CONFIG must be YAML text.')
  for hook in CONTRACT:
    value = getattr(module, hook.name, None)
    if hook.args is None or value is None:
      continue
    signature = f'{hook.name}({", ".join(hook.args)})'
    if not callable(value):
      raise errors.Error(f'{where}: {hook.name} must be a function '
                         f'{signature}.')
    try:
      inspect.signature(value).bind(*hook.args)
    except TypeError:
      raise errors.Error(
          f'{where}: {hook.name}{inspect.signature(value)} cannot be called '
          f'as {signature}, as the harness calls it.') from None
    except ValueError:
      pass  # A builtin without a signature: taken as it is.


def Call(module, name: str, *args):
  """Calls the module's hook `name`, or the contract's default for it.

  For an optional hook without a default the caller decides what absence
  means: use `Has`.
  """
  function = getattr(module, name, None)
  if function is None:
    function = _BY_NAME[name].default(module)
  return function(*args)


def Has(module, name: str) -> bool:
  return getattr(module, name, None) is not None
