"""The comparison cell of each sample: machine type x engine x topology x workload.

Derived from sample metadata only, so every source gives the same cells:
  machine_type  `servers_machine_type`; a Local run as "local as <type>" (the
                catalog type that priced it, never mistaken for the cloud
                machine; a --static_vm_file run whose machines have no
                machine_type "static as <type>"), with ", server <n> CPU"
                when its server was held to a CPU quota (a 2-core
                machine's split: never ranked
                beside a whole core's figure); " (spot)" etc. when not
                priced on demand
  engine        the recorded engine, else "redis"; its version is
                provenance, so an upgrade is a change point, not a new
                series; a stand-in (`stands_in_for`) is named so
  topology      cluster mode, shards per server VM, server VM count
  workload      SET:GET ratio, key pattern, value size, key range, cap
                and the latency statistic it caps when not the average
                ("cap 1ms p99": a p99 answer is never ranked beside an
                average one; runs from before the statistic existed capped
                the average), and the load generator when it is not
                memtier_benchmark ("via redis-benchmark": a fallback run's
                figure is another tool's, never averaged into memtier's;
                runs from before it was recorded ran memtier)
Run-level fields a sample lacks (cost samples carry no cap) come from the
run's other samples.
"""

from typing import Any, Dict

import pandas as pd

CELL_COLUMNS = ('machine_type', 'engine', 'topology', 'workload')
# A sample's own `engine` metadata is kept as RECORDED_ENGINE: `engine` is
# also the cell column AddCellColumns writes.
RECORDED_ENGINE = 'engine_recorded'
ENGINE_KEYS = (RECORDED_ENGINE, 'engine', 'redis_server_engine',
               'server_engine')
# Run-level metadata the cell labels are made of, beside the sample's own
# servers_machine_type (MachineType, Engine, Topology, Workload).
LABEL_KEYS = ('cloud', 'local_priced_as', 'servers_cpu_quota', 'pricing_model',
              'redis_server_cluster_mode', 'redis_total_num_processes',
              'servers_vm_count', 'memtier_ratio', 'memtier_key_pattern',
              'memtier_data_size', 'memtier_key_maximum', 'latency_cap_ms',
              'latency_cap_statistic', 'stands_in_for',
              'load_generator', 'engine_settings',
              'redis_replicas_per_primary') + ENGINE_KEYS
# Metadata a run's samples share but not every sample carries.
RUN_LEVEL_KEYS = LABEL_KEYS + (
    'redis_server_version', 'load_generator_version',
    'price_basis', 'servers_price_source', 'servers_price_date',
    'servers_price_region', 'servers_price_cloud')
# Every metadata key the cell labels read (the loader keeps only what the
# views read: see report.HistoryKeys).
METADATA_KEYS = RUN_LEVEL_KEYS + ('servers_machine_type',)


def _Present(value: Any) -> bool:
  return value is not None and not (isinstance(value, float) and value != value
                                   ) and value is not pd.NA


def _Number(value: Any) -> str:
  if not _Present(value):
    return '?'
  if isinstance(value, float) and value.is_integer():
    return str(int(value))
  return str(value)


def PricingModel(row: pd.Series) -> str:
  """--price_basis of the run; rows from before it existed were on-demand."""
  model = row.get('pricing_model')
  return str(model) if _Present(model) else 'on_demand'


def MachineType(row: pd.Series) -> str:
  """The machine, with its price basis unless on-demand (a spot series is
  another cell than the on-demand one: same speed, other price)."""
  model = PricingModel(row)
  suffix = '' if model == 'on_demand' else f' ({model})'
  priced_as = row.get('local_priced_as')
  machine = row.get('servers_machine_type')
  # A stored row, not a VM: its 'cloud' column is all a row has to say that
  # it ran on the runner's own machine, or on lent machines the file gave
  # no machine_type (UntypedStatic), which have no machine type to name.
  cloud = row.get('cloud')
  if _Present(priced_as) and (cloud == 'Local' or (
      cloud == 'Static' and machine == UNTYPED_STATIC)):
    quota = row.get('servers_cpu_quota')
    held = f', server {_Number(quota)} CPU' if _Present(quota) else ''
    return f'{cloud.lower()} as {priced_as}{held}{suffix}'
  return (str(machine) if _Present(machine) else 'unknown') + suffix


def Engine(row: pd.Series) -> str:
  engine = next((str(row.get(key)) for key in ENGINE_KEYS
                 if _Present(row.get(key))), 'redis')
  # A server set up otherwise (--redis_server_io_threads=2) is another
  # cell: its figures are not the default server's.
  settings = row.get('engine_settings')
  if _Present(settings) and str(settings) != 'default':
    engine = f'{engine} ({settings})'
  stands_in_for = row.get('stands_in_for')
  if _Present(stands_in_for):
    return f'{engine} standing in for {stands_in_for}'
  return engine


def Topology(row: pd.Series) -> str:
  mode = row.get('redis_server_cluster_mode')
  mode_text = 'cluster' if (_Present(mode) and bool(mode)) else 'standalone'
  shards = _Number(row.get('redis_total_num_processes'))
  text = f'{mode_text}, {shards} shard{"" if shards == "1" else "s"}/VM'
  replicas = row.get('redis_replicas_per_primary')
  if _Present(replicas) and int(replicas) > 0:
    text += f' ({int(replicas)} replica{"" if int(replicas) == 1 else "s"} each)'
  vms = row.get('servers_vm_count')
  if _Present(vms) and int(vms) > 1:
    text += f' x {int(vms)} VMs'
  return text


def Workload(row: pd.Series) -> str:
  size = _Number(row.get('memtier_data_size'))
  return (f'{row.get("memtier_ratio", "?")} {row.get("memtier_key_pattern", "?")}'
          f' {size}B keys {_Number(row.get("memtier_key_maximum"))}'
          f' cap {_Number(row.get("latency_cap_ms"))}ms'
          f'{_Unless(row, "latency_cap_statistic", "avg", " ")}'
          f'{_Unless(row, "load_generator", DEFAULT_GENERATOR, " via ")}')


# The study's own load generator, named in no workload label.
DEFAULT_GENERATOR = 'memtier_benchmark'


def _Unless(row: pd.Series, key: str, default: str, prefix: str) -> str:
  """`prefix` and the row's `key`, or '' when it is not recorded or is
  `default` (the cap's statistic when the average, the generator when
  memtier's)."""
  value = row.get(key)
  if not _Present(value) or str(value) == default:
    return ''
  return f'{prefix}{value}'


def FillRunLevel(frame: pd.DataFrame) -> pd.DataFrame:
  """Fills run-level metadata a sample lacks from its run's other samples."""
  frame = frame.copy(deep=False)  # Columns are replaced, never written in.
  for key in RUN_LEVEL_KEYS:
    if key in frame.columns and frame[key].isna().any():
      first = frame.groupby('run_uri')[key].transform('first')
      frame[key] = frame[key].where(frame[key].notna(), first)
  return frame


def AddCellColumns(frame: pd.DataFrame) -> pd.DataFrame:
  """The frame with `machine_type, engine, topology, workload, cell` added."""
  if 'engine' in frame.columns and 'cell' not in frame.columns:
    # Samples' metadata, not a cell column of an earlier call: keep it.
    frame = frame.rename(columns={'engine': RECORDED_ENGINE})
  frame = FillRunLevel(frame.drop(columns=[
      c for c in CELL_COLUMNS + ('cell',) if c in frame.columns]))
  if frame.empty:
    for name in CELL_COLUMNS + ('cell',):
      frame[name] = pd.Series(dtype='string')
    return frame
  # Labels depend on a few columns only: compute them once per combination.
  keys = [k for k in LABEL_KEYS + ('servers_machine_type',)
          if k in frame.columns]
  if not keys:
    # No sample names any (samples of another benchmark, or labels left
    # out): one cell of defaults; a merge on no columns is an IndexError.
    return frame.assign(**_Labels(pd.Series(dtype=object)))
  keyed = UntypedStatic(frame)[keys]
  combos = keyed.drop_duplicates().reset_index(drop=True)
  combos = pd.concat([combos, pd.DataFrame(
      [_Labels(row) for _, row in combos.iterrows()])], axis=1)
  # Merge the key columns only: a merge of the whole frame would copy it.
  labelled = keyed.merge(combos, on=keys, how='left')
  frame = frame.copy(deep=False)
  for name in CELL_COLUMNS + ('cell',):
    frame[name] = labelled[name].to_numpy()
  return frame


# What a --static_vm_file run records as the machine type of machines its
# file gave none (providers/static).
UNTYPED_STATIC = 'static'


def UntypedStatic(frame: pd.DataFrame) -> pd.DataFrame:
  """`frame` with every sample of a Static run whose machines had no type
  naming them UNTYPED_STATIC: its price samples name the type that priced
  them instead, and would be another cell than its answer's (whose row
  then read unpriced)."""
  if not {'cloud', 'servers_machine_type', 'run_uri'} <= set(frame.columns):
    return frame
  machine = frame['servers_machine_type']
  untyped = (frame['cloud'].eq('Static') & machine.eq(UNTYPED_STATIC).groupby(
      frame['run_uri'], dropna=False).transform('any')).fillna(False)
  if not untyped.any():
    return frame
  return frame.assign(servers_machine_type=machine.where(~untyped,
                                                         UNTYPED_STATIC))


def _Labels(row: pd.Series) -> Dict[str, str]:
  """The cell columns of one combination of label keys."""
  labels = {'machine_type': MachineType(row), 'engine': Engine(row),
            'topology': Topology(row), 'workload': Workload(row)}
  labels['cell'] = ' | '.join(labels[name] for name in CELL_COLUMNS)
  return labels
