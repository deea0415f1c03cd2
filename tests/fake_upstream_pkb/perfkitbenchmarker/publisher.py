"""Fake upstream (tests only): how upstream's SampleCollector turns a
benchmark's samples into published rows.

Behaviour kept from upstream (publisher.py at the commit recorded in
pkb_plugin/README.md), written here for tests:
  * every sample of a run gets `official` = upstream's --official, whatever
    the benchmark said; also test = the benchmark's name, product_name,
    owner, run_uri (the spec's uuid) and a fresh sample_uri;
  * the default metadata provider adds perfkitbenchmarker_version and each
    VM group's metadata under '<group>_', and raises on a key the sample
    already has with another value (--throw_on_metadata_conflict, on by
    default); the sample's own keys win otherwise;
  * the JSON publisher writes one line per row, metadata collapsed into
    `labels` (|key:value|,... sorted by key) unless --nocollapse_labels.
"""

import getpass
import json
import uuid

from absl import flags

flags.DEFINE_string('product_name', 'PerfKitBenchmarker', 'fake upstream flag')
flags.DEFINE_boolean('official', False, 'fake upstream flag')
flags.DEFINE_string('owner', getpass.getuser(), 'fake upstream flag')
flags.DEFINE_boolean('collapse_labels', True, 'fake upstream flag')
flags.DEFINE_boolean('throw_on_metadata_conflict', True, 'fake upstream flag')

FLAGS = flags.FLAGS
VERSION = 'v1.12.0-fake'


def GetLabelsFromDict(metadata):
  return ','.join(f'|{k}:{v}|' for k, v in sorted(metadata.items()))


def DefaultMetadata(metadata, spec):
  new = {'perfkitbenchmarker_version': VERSION}
  for group, vms in spec.vm_groups.items():
    if not vms:
      continue
    vm = vms[-1]
    for key in ('cloud', 'machine_type', 'zone', 'image'):
      new[f'{group}_{key}'] = getattr(vm, key, None) or getattr(
          vm, key.upper(), None)
    new[f'{group}_vm_count'] = len(vms)
  clash = [k for k in set(new) & set(metadata) if new[k] != metadata[k]]
  if clash and FLAGS.throw_on_metadata_conflict:
    raise ValueError(f'Conflicting keys are already set in metadata: {clash}')
  return new | metadata


class SampleCollector:
  """Collects rows as upstream's SampleCollector.AddSamples makes them."""

  def __init__(self):
    self.samples = []

  def AddSamples(self, samples, benchmark, spec):
    for s in samples:
      row = s._asdict()
      row['test'] = benchmark
      row['metadata'] = DefaultMetadata(row['metadata'], spec)
      row['product_name'] = FLAGS.product_name
      row['official'] = FLAGS.official
      row['owner'] = FLAGS.owner
      row['run_uri'] = spec.uuid
      row['sample_uri'] = str(uuid.uuid4())
      self.samples.append(row)

  def PublishSamples(self, path):
    if not self.samples:
      return  # upstream warns 'No samples to publish.' and writes nothing
    with open(path, 'a') as f:
      for row in self.samples:
        row = dict(row)
        if FLAGS.collapse_labels:
          row['labels'] = GetLabelsFromDict(row.pop('metadata'))
        f.write(json.dumps(row) + '\n')
