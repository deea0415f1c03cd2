"""The run's network objects: VPC network, subnetworks, firewall, placement.

Why a network per run: a new VPC network starts with no ingress allowed, so
the run's two firewall rules are the whole truth about who can reach its VMs.
The project's 'default' network instead ships rules such as
default-allow-ssh (0.0.0.0/0) and default-allow-internal, which would open SSH
to everyone and Redis to every VM in the project. --gcp_network uses an
existing network anyway (it is then neither created nor deleted).

The rules:
  pkb-<run_uri>-ssh    tcp:22 from --gcp_ssh_source_range only;
  pkb-<run_uri>-redis  the Redis shard and cluster-bus ports (every port
                       from --redis_start_port up), only from instances
                       with the run's network tag;
  pkb-<run_uri>-peers  only when the benchmark declares PEER_TCP_PORTS
                       (spec.peer_tcp_ports, e.g. Redis Enterprise's node
                       ports): those, from the run's network tag only.
All target only the run's network tag. A compact placement policy
(COLLOCATED) keeps the VMs close when --placement_group_style=cluster.

Each class is a GceResource registered for teardown from the record; teardown
walks the record newest first: instances, firewall rules, placement policy,
subnetworks, network.
"""

from typing import Any, Dict, List, Sequence, Tuple

from perfkitbenchmarker import redis_shard
from perfkitbenchmarker import resource
from perfkitbenchmarker.providers.gcp import compute_api


def NetworkUrl(project: str, network: str) -> str:
  return f'projects/{project}/global/networks/{network}'


def SubnetworkUrl(project: str, region: str, subnetwork: str) -> str:
  return f'projects/{project}/regions/{region}/subnetworks/{subnetwork}'


def PlacementPolicyUrl(project: str, region: str, policy: str) -> str:
  return f'projects/{project}/regions/{region}/resourcePolicies/{policy}'


class GceNetwork(compute_api.GceResource):
  """A custom-mode VPC network (subnetworks are made per region)."""

  KIND = 'gcp_network'
  CLIENT, PARAM = 'networks', 'network'

  def _Body(self):
    compute_v1 = compute_api.ComputeV1()
    return compute_v1.Network(name=self.name, auto_create_subnetworks=False,
                              description='PerfKit Benchmarker run network')


class GceSubnetwork(compute_api.RegionalResource):
  """The run's subnetwork in one region."""

  KIND = 'gcp_subnetwork'
  CLIENT, PARAM = 'subnetworks', 'subnetwork'

  def __init__(self, name: str, clients, project: str, region: str,
               network_url: str = '', ip_range: str = '', **kwargs):
    super().__init__(name, clients, project, region, **kwargs)
    self.network_url = network_url
    self.ip_range = ip_range

  def _Body(self):
    compute_v1 = compute_api.ComputeV1()
    return compute_v1.Subnetwork(name=self.name, network=self.network_url,
                                 ip_cidr_range=self.ip_range)

  def RecordData(self) -> Dict[str, Any]:
    return dict(super().RecordData(), ip_range=self.ip_range)


class GceFirewallRule(compute_api.GceResource):
  """An ingress rule to the run's tagged instances.

  Exactly one of `source_ranges` and `source_tags` is given, so a rule is
  either "from the operator" or "from the run's own VMs", never both.
  """

  KIND = 'gcp_firewall'
  CLIENT, PARAM = 'firewalls', 'firewall'

  def __init__(self, name: str, clients, project: str, network_url: str = '',
               ports: Sequence[str] = (), target_tags: Sequence[str] = (),
               source_ranges: Sequence[str] = (),
               source_tags: Sequence[str] = (), description: str = '',
               **kwargs):
    super().__init__(name, clients, project, **kwargs)
    if bool(source_ranges) == bool(source_tags) and ports:
      raise ValueError('give exactly one of source_ranges and source_tags')
    if any(r in ('0.0.0.0/0', '::/0') for r in source_ranges):
      raise ValueError('a run never opens a port to the whole internet')
    self.network_url = network_url
    self.ports = list(ports)
    self.target_tags = list(target_tags)
    self.source_ranges = list(source_ranges)
    self.source_tags = list(source_tags)
    self.description = description

  def _Body(self):
    compute_v1 = compute_api.ComputeV1()
    firewall = compute_v1.Firewall(
        name=self.name, network=self.network_url, direction='INGRESS',
        description=self.description,
        allowed=[compute_v1.Allowed(I_p_protocol='tcp', ports=self.ports)],
        target_tags=self.target_tags)
    if self.source_ranges:
      firewall.source_ranges = self.source_ranges
    else:
      firewall.source_tags = self.source_tags
    return firewall

  def RecordData(self) -> Dict[str, Any]:
    # What the rule opened, so the record shows it; not needed to delete it.
    return dict(super().RecordData(), ports=self.ports,
                source_ranges=self.source_ranges,
                source_tags=self.source_tags)


class GcePlacementPolicy(compute_api.RegionalResource):
  """A compact (COLLOCATED) group placement policy in one region."""

  KIND = 'gcp_placement_policy'
  CLIENT, PARAM = 'resource_policies', 'resource_policy'

  def _Body(self):
    compute_v1 = compute_api.ComputeV1()
    return compute_v1.ResourcePolicy(
        name=self.name, region=self.region,
        description='PerfKit Benchmarker compact placement',
        group_placement_policy=compute_v1.ResourcePolicyGroupPlacementPolicy(
            collocation='COLLOCATED'))


def SubnetRanges(regions: Sequence[str]) -> Dict[str, str]:
  """One private /20 per region of the run, in a network only it uses."""
  return {region: f'10.{i}.0.0/20'
          for i, region in enumerate(sorted(set(regions)))}


def RedisPorts(start_port: int) -> List[str]:
  """Every port from start_port up: the shards' and their cluster bus's.

  Shards take consecutive free ports from --redis_start_port, skipping
  taken ones, and a shard search starts each count's shards on fresh ports
  after the last count's, so how far they go is not known before the run;
  their cluster-bus ports (+10000) lie above them. The rule admits only the
  run's own VMs.
  """
  return PortList([(start_port, redis_shard.MAX_PORT)])


def PortList(ranges: Sequence[Tuple[int, int]]) -> List[str]:
  """(low, high) ranges as a firewall rule's ports: '8001', '8070-8071'."""
  return [str(low) if low == high else f'{low}-{high}'
          for low, high in ranges]


for _kind in (GceNetwork, GceSubnetwork, GceFirewallRule, GcePlacementPolicy):
  resource.RegisterKind(_kind.KIND, _kind.FromRecord)
