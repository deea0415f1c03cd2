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


class PlacementGroup(api.AwsResource):
  """EC2 placement group pkb-<run_uri>, known to EC2 by its name."""

  KIND = 'aws_placement_group'
  NOUN, LIST_KEY, ID_KEY, NOT_FOUND = (
      'placement_group', 'PlacementGroups', 'GroupName',
      'InvalidPlacementGroup.Unknown')
  STRATEGY = 'cluster'

  def _Create(self) -> None:
    group = self._Describe(self.name)
    if group is None:
      with api.Translated(f'creating placement group {self.name}',
                          retry=self.CreateRetryCodes()):
        group = api.SendCreate(self, lambda: self.ec2.create_placement_group(
            GroupName=self.name, Strategy=self.STRATEGY,
            TagSpecifications=self.TagSpecifications('placement-group'),
        )).get('PlacementGroup', {})
    self.Remember(id=group.get('GroupId'))

  def _Delete(self) -> None:
    # By name: the id recorded is its GroupId, which the delete does not
    # take, and which answers Unknown for a group EC2 does not list yet.
    if self._Unanswered():
      self._LookAgain()
    self._DeleteOne(self.name)

  def RecordData(self) -> Dict[str, Any]:
    return dict(super().RecordData(), strategy=self.STRATEGY)


api.Register(PlacementGroup)
