"""The run's cluster placement group (--placement_group_style=cluster).

A cluster placement group packs the run's instances into one low-latency
network segment of the zone, which is what a sub-millisecond latency cap
needs between memtier clients and Redis servers. It is named pkb-<run_uri>,
created before the instances and deleted after them: EC2 refuses to delete
a group that still holds instances (InvalidPlacementGroup.InUse), which the
delete waits out like a DependencyViolation.
"""

from typing import Any, Dict

from perfkitbenchmarker.providers.aws import api

_UNKNOWN = 'InvalidPlacementGroup.Unknown'


class PlacementGroup(api.AwsResource):
  """EC2 placement group pkb-<run_uri>."""

  KIND = 'aws_placement_group'
  STRATEGY = 'cluster'

  def _Describe(self):
    groups = []
    with api.Translated(f'looking up placement group {self.name}',
                        retry=api.TRANSIENT_CODES - {_UNKNOWN},
                        gone={_UNKNOWN}):
      groups = self.ec2.describe_placement_groups(
          GroupNames=[self.name])['PlacementGroups']
    return groups[0] if groups else None

  def _Create(self) -> None:
    group = self._Describe()
    if group is None:
      with api.Translated(f'creating placement group {self.name}',
                          retry=api.TRANSIENT_CODES):
        group = self.ec2.create_placement_group(
            GroupName=self.name, Strategy=self.STRATEGY,
            TagSpecifications=self.TagSpecifications('placement-group'),
        ).get('PlacementGroup', {})
    self.Remember(id=group.get('GroupId'))

  def _Delete(self) -> None:
    with api.Translated(f'deleting placement group {self.name}',
                        retry=api.DEPENDENCY_CODES, gone={_UNKNOWN}):
      self.ec2.delete_placement_group(GroupName=self.name)

  def RecordData(self) -> Dict[str, Any]:
    return dict(super().RecordData(), strategy=self.STRATEGY)


api.Register(PlacementGroup)
