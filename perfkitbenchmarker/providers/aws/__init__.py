"""AWS provider: EC2 VMs, their network and access, through boto3.

Modules, one concern each:
  flags.py      the --aws_* flags (absl only; imported by pkb at start-up);
  naming.py     run-scoped names, the tags every object carries, zone->region;
  api.py        boto3 clients, error translation and AwsResource, the
                BaseResource shape every EC2 object here shares;
  network.py    VPC, subnet, internet gateway, route table, security group
                (or the region's default VPC);
  keys.py       the run's ed25519 key, made locally and imported as a key pair;
  placement.py  the cluster placement group;
  images.py     --os_type and architecture -> AMI via SSM public parameters,
                and the machine type's vCPUs, memory and architecture;
  vm.py         AwsVirtualMachine, an SshVirtualMachine on an EC2 instance;
  provider.py   the provider contract: ConstructVms, Provision,
                CheckPrerequisites.
Every kind registers with resource.RegisterKind when its module is imported,
so `--run_stage=teardown --run_uri=X` rebuilds and deletes what a run made
from the run record alone.
"""
