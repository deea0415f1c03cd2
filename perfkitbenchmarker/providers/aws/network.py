"""The run's network: VPC, subnet, internet gateway, route table, firewall.

By default a run gets a VPC of its own (one subnet in its zone, an internet
gateway and a route table sending 0.0.0.0/0 to it, so the VMs can reach
package mirrors and the operator can reach them); --aws_use_default_vpc puts
the VMs in the region's default VPC instead. Either way the run has its own
security group, which admits SSH from the operator's CIDRs only, and the
Redis and the benchmark's peer ports from the group's own members only.
Deletes wait out DependencyViolation while EC2 lets go of the terminated
instances' interfaces and addresses.
"""

import time
import uuid
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from perfkitbenchmarker import errors
from perfkitbenchmarker.providers.aws import api
from perfkitbenchmarker.providers import operator_access

VPC_CIDR = '10.0.0.0/16'
SUBNET_CIDR = '10.0.0.0/24'

PortRange = Tuple[int, int]


def SshSourceCidrs(values: Sequence[str]) -> Tuple[str, ...]:
  """Validates --aws_ssh_source_cidr; returns normalised IPv4 CIDRs."""
  return operator_access.OperatorCidrs(values, '--aws_ssh_source_cidr', 'AWS')


def PortRanges(values: Sequence[str]) -> Tuple[PortRange, ...]:
  """Parses --aws_redis_ports ("6379" or "7000-7999" items)."""
  ranges = []
  for value in values:
    low, _, high = value.strip().partition('-')
    try:
      port_range = (int(low), int(high or low))
    except ValueError:
      raise errors.UsageError(
          f'--aws_redis_ports: "{value}" is not a port or LOW-HIGH range.'
      ) from None
    if not 1 <= port_range[0] <= port_range[1] <= 65535 or port_range[0] == 22:
      raise errors.UsageError(
          f'--aws_redis_ports: "{value}" is not a range within 1-65535 '
          '(SSH, 22, is opened separately).')
    ranges.append(port_range)
  if not ranges:
    raise errors.UsageError('--aws_redis_ports must name at least one port.')
  return tuple(ranges)


def FirstUnadmitted(wanted: Sequence[PortRange],
                    admitted: Sequence[PortRange]) -> Optional[int]:
  """The lowest port of `wanted` no range of `admitted` holds, or None."""
  for low, high in wanted:
    port = low
    while port <= high:
      tops = [top for bottom, top in admitted if bottom <= port <= top]
      if not tops:
        return port
      port = max(tops) + 1
  return None


def _Text(port_range: PortRange) -> str:
  low, high = port_range
  return str(low) if low == high else f'{low}-{high}'


def CheckShardPorts(shard_ports: Sequence[PortRange],
                    redis_ports: Sequence[PortRange],
                    peer_ports: Sequence[PortRange] = ()) -> None:
  """Refuses shard ports the security group would not admit between the
  run's VMs (the clients could not reach those shards)."""
  port = FirstUnadmitted(shard_ports, tuple(redis_ports) + tuple(peer_ports))
  if port is None:
    return
  wanted = ' and '.join(_Text(r) for r in shard_ports)
  opened = ','.join(_Text(r) for r in redis_ports)
  raise errors.UsageError(
      f'--redis_start_port and the shard count put the shards on ports '
      f'{wanted}, but --aws_redis_ports={opened} leaves {port} closed '
      'between the VMs; widen --aws_redis_ports or move --redis_start_port.')


def IngressPermissions(group_id: str, ssh_cidrs: Sequence[str],
                       redis_ports: Sequence[PortRange],
                       peer_ports: Sequence[PortRange] = ()) -> List[Dict]:
  """SSH from the operator only; Redis and the benchmark's peer ports from
  the group's own members only."""
  permissions = [{
      'IpProtocol': 'tcp', 'FromPort': 22, 'ToPort': 22,
      'IpRanges': [{'CidrIp': c, 'Description': 'operator SSH'}
                   for c in ssh_cidrs],
  }]
  within = [(r, 'Redis within the run') for r in redis_ports]
  # Overlapping ranges are fine; the same range twice in one request is
  # refused as a duplicate, so a peer range equal to a Redis one is dropped.
  within += [(r, 'benchmark ports within the run') for r in peer_ports
             if tuple(r) not in {tuple(p) for p in redis_ports}]
  for (low, high), description in within:
    permissions.append({
        'IpProtocol': 'tcp', 'FromPort': low, 'ToPort': high,
        'UserIdGroupPairs': [{'GroupId': group_id,
                              'Description': description}],
    })
  return permissions


def DefaultNetwork(clients: api.AwsClients, zone: str,
                   sleep: Callable[[float], None] = time.sleep
                   ) -> Tuple[str, str]:
  """(vpc id, subnet id) of the region's default VPC in `zone` (`sleep`:
  the pauses of api.Read)."""
  ec2 = clients.ec2
  vpcs = api.Read('looking up the default VPC', lambda: ec2.describe_vpcs(
      Filters=[{'Name': 'is-default', 'Values': ['true']}])['Vpcs'],
                  sleep=sleep)
  if not vpcs:
    raise errors.UsageError(
        f'--aws_use_default_vpc: {clients.region} has no default VPC; drop '
        'the flag to let the run create its own.')
  vpc_id = vpcs[0]['VpcId']
  subnets = api.Read(
      f'looking up the default subnet of {vpc_id} in {zone}',
      lambda: ec2.describe_subnets(Filters=[
          {'Name': 'vpc-id', 'Values': [vpc_id]},
          {'Name': 'availability-zone', 'Values': [zone]},
          {'Name': 'default-for-az', 'Values': ['true']}])['Subnets'],
      sleep=sleep)
  if not subnets:
    raise errors.UsageError(
        f'--aws_use_default_vpc: the default VPC {vpc_id} has no default '
        f'subnet in {zone}; drop the flag or choose another --zone.')
  return vpc_id, subnets[0]['SubnetId']


class Vpc(api.AwsResource):
  """A VPC of the run's own."""

  KIND = 'aws_vpc'
  NOUN, LIST_KEY, ID_KEY, NOT_FOUND = (
      'vpc', 'Vpcs', 'VpcId', 'InvalidVpcID.NotFound')

  def _Create(self) -> None:
    self._FindOrCreate(lambda: self.ec2.create_vpc(
        CidrBlock=VPC_CIDR,
        TagSpecifications=self.TagSpecifications('vpc'))['Vpc']['VpcId'])

  def _IsReady(self) -> bool:
    # A VPC made a moment ago may not be visible yet: not ready, not gone.
    vpc = self._Read(self.id)
    return bool(vpc) and vpc['State'] == 'available'


class Subnet(api.AwsResource):
  """The run's one subnet, in its zone."""

  KIND = 'aws_subnet'
  NOUN, LIST_KEY, ID_KEY, NOT_FOUND = (
      'subnet', 'Subnets', 'SubnetId', 'InvalidSubnetID.NotFound')

  def __init__(self, clients, run_uri, vpc_id: Optional[str] = None,
               zone: Optional[str] = None, **kwargs):
    super().__init__(clients, run_uri, **kwargs)
    self.vpc_id = vpc_id
    self.zone = zone

  def _Create(self) -> None:
    self._FindOrCreate(lambda: self.ec2.create_subnet(
        VpcId=self.vpc_id, CidrBlock=SUBNET_CIDR, AvailabilityZone=self.zone,
        TagSpecifications=self.TagSpecifications('subnet'))['Subnet'][
            'SubnetId'])

  def RecordData(self) -> Dict[str, Any]:
    return dict(super().RecordData(), vpc_id=self.vpc_id, zone=self.zone)


class InternetGateway(api.AwsResource):
  """The run VPC's way out, attached to it."""

  KIND = 'aws_internet_gateway'
  NOUN, LIST_KEY, ID_KEY, NOT_FOUND = (
      'internet_gateway', 'InternetGateways', 'InternetGatewayId',
      'InvalidInternetGatewayID.NotFound')

  def __init__(self, clients, run_uri, vpc_id: Optional[str] = None,
               **kwargs):
    super().__init__(clients, run_uri, **kwargs)
    self.vpc_id = vpc_id

  def _Create(self) -> None:
    self._FindOrCreate(lambda: self.ec2.create_internet_gateway(
        TagSpecifications=self.TagSpecifications('internet-gateway'))[
            'InternetGateway']['InternetGatewayId'])
    attached = [a['VpcId'] for a in
                (self._Describe(self.id) or {}).get('Attachments', [])]
    if self.vpc_id not in attached:
      with api.Translated(f'attaching {self.id} to {self.vpc_id}',
                          retry=api.TRANSIENT_CODES):
        self.ec2.attach_internet_gateway(InternetGatewayId=self.id,
                                         VpcId=self.vpc_id)

  def _DeleteOne(self, gateway_id: str) -> None:
    for attachment in (self._Describe(gateway_id) or {}).get(
        'Attachments', []):
      # Fails with DependencyViolation while public addresses of the
      # terminated instances are still mapped in the VPC.
      with api.Translated(f'detaching {gateway_id}',
                          retry=api.DEPENDENCY_CODES,
                          gone={'Gateway.NotAttached', self.NOT_FOUND}):
        self.ec2.detach_internet_gateway(InternetGatewayId=gateway_id,
                                         VpcId=attachment['VpcId'])
    super()._DeleteOne(gateway_id)

  def RecordData(self) -> Dict[str, Any]:
    return dict(super().RecordData(), vpc_id=self.vpc_id)


class RouteTable(api.AwsResource):
  """Sends the subnet's internet traffic to the gateway."""

  KIND = 'aws_route_table'
  NOUN, LIST_KEY, ID_KEY, NOT_FOUND = (
      'route_table', 'RouteTables', 'RouteTableId',
      'InvalidRouteTableID.NotFound')

  def __init__(self, clients, run_uri, vpc_id: Optional[str] = None,
               gateway_id: Optional[str] = None,
               subnet_id: Optional[str] = None, **kwargs):
    super().__init__(clients, run_uri, **kwargs)
    self.vpc_id = vpc_id
    self.gateway_id = gateway_id
    self.subnet_id = subnet_id
    # Kept over this object's sends of CreateRouteTable, so EC2 makes one
    # table however many reach it (botocore would put a new one in each
    # send); of the other create calls here only RunInstances takes one.
    self._client_token = str(uuid.uuid4())

  def _Create(self) -> None:
    self._FindOrCreate(lambda: self.ec2.create_route_table(
        VpcId=self.vpc_id, ClientToken=self._client_token,
        TagSpecifications=self.TagSpecifications('route-table'))[
            'RouteTable']['RouteTableId'])
    # A retried create finds the table and adds only what is missing.
    table = self._Describe(self.id) or {}
    if not any(r.get('DestinationCidrBlock') == '0.0.0.0/0'
               for r in table.get('Routes', [])):
      with api.Translated(f'adding the default route to {self.id}',
                          retry=api.TRANSIENT_CODES):
        self.ec2.create_route(RouteTableId=self.id,
                              DestinationCidrBlock='0.0.0.0/0',
                              GatewayId=self.gateway_id)
    if not any(a.get('SubnetId') == self.subnet_id
               for a in table.get('Associations', [])):
      with api.Translated(f'associating {self.id} with {self.subnet_id}',
                          retry=api.TRANSIENT_CODES):
        self.ec2.associate_route_table(RouteTableId=self.id,
                                       SubnetId=self.subnet_id)

  def _DeleteOne(self, table_id: str) -> None:
    for association in (self._Describe(table_id) or {}).get(
        'Associations', []):
      if not association.get('Main'):
        with api.Translated(f'disassociating route table {table_id}',
                            retry=api.TRANSIENT_CODES,
                            gone={'InvalidAssociationID.NotFound'}):
          self.ec2.disassociate_route_table(
              AssociationId=association['RouteTableAssociationId'])
    super()._DeleteOne(table_id)

  def RecordData(self) -> Dict[str, Any]:
    return dict(super().RecordData(), vpc_id=self.vpc_id,
                subnet_id=self.subnet_id)


class SecurityGroup(api.AwsResource):
  """The run's firewall: operator SSH; Redis and the benchmark's peer ports
  among its own members."""

  KIND = 'aws_security_group'
  NOUN, LIST_KEY, ID_KEY, NOT_FOUND = (
      'security_group', 'SecurityGroups', 'GroupId', 'InvalidGroup.NotFound')

  def __init__(self, clients, run_uri, vpc_id: Optional[str] = None,
               ssh_cidrs: Sequence[str] = (),
               redis_ports: Sequence[PortRange] = (),
               peer_ports: Sequence[PortRange] = (), **kwargs):
    super().__init__(clients, run_uri, **kwargs)
    self.vpc_id = vpc_id
    self.ssh_cidrs = tuple(ssh_cidrs)
    self.redis_ports = tuple(redis_ports)
    self.peer_ports = tuple(peer_ports)

  def _Create(self) -> None:
    # Checked here too, so no caller can open SSH to the world.
    SshSourceCidrs(self.ssh_cidrs)
    self._FindOrCreate(lambda: self.ec2.create_security_group(
        GroupName=self.name, VpcId=self.vpc_id,
        Description=f'PKB run {self.run_uri}: SSH from the operator, '
        'Redis within the group',
        TagSpecifications=self.TagSpecifications('security-group'))[
            'GroupId'])
    # Duplicate: an earlier attempt added the rules (they go in at once).
    with api.Translated(f'adding rules to {self.id}',
                        retry=api.TRANSIENT_CODES,
                        gone={'InvalidPermission.Duplicate'}):
      self.ec2.authorize_security_group_ingress(
          GroupId=self.id,
          IpPermissions=IngressPermissions(self.id, self.ssh_cidrs,
                                           self.redis_ports, self.peer_ports),
          TagSpecifications=self.TagSpecifications('security-group-rule'))

  def RecordData(self) -> Dict[str, Any]:
    # The ports opened, so the record shows them; the rules go with the group.
    return dict(super().RecordData(), vpc_id=self.vpc_id,
                redis_ports=[list(r) for r in self.redis_ports],
                peer_ports=[list(r) for r in self.peer_ports])


for _kind in (Vpc, Subnet, InternetGateway, RouteTable, SecurityGroup):
  api.Register(_kind)
