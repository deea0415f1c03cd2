"""Flags of the AWS provider (absl only, so pkb can import it at start-up).

The core flags --zone, --os_type, --owner, --machine_type, --timeout_minutes
and --placement_group_style live in perfkitbenchmarker/flags.py; these are
the ones only the AWS provider reads.
"""

from absl import flags

flags.DEFINE_list(
    'aws_ssh_source_cidr', [],
    'IPv4 CIDR(s) SSH is opened to, normally your own public address as a '
    '/32 (e.g. 203.0.113.7/32; a bare address means /32). Required with '
    '--cloud=AWS: it is never guessed, never 0.0.0.0/0, and no wider than a '
    '/16.')
flags.DEFINE_boolean(
    'aws_use_default_vpc', False,
    'Put the VMs in the region\'s default VPC and its default subnet for the '
    'zone instead of a VPC created (and deleted) for the run. The run still '
    'gets its own security group.')
flags.DEFINE_list(
    'aws_redis_ports', ['6379-8999', '16379-18999'],
    'TCP ports (N or LOW-HIGH) the run\'s VMs open to each other: Redis '
    'shards and their cluster-bus ports (shard port + 10000). Only members '
    'of the run\'s security group are admitted. A run whose shards, from '
    '--redis_start_port on, would fall outside is refused before anything '
    'is made.')
flags.DEFINE_string(
    'aws_profile', None,
    'Profile from ~/.aws/config to use; default: the boto3 default chain '
    '(AWS_PROFILE, environment variables, instance role).')
