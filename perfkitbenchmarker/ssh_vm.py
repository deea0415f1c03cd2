"""VMs reached over SSH: shared by GCP, AWS and existing (static) machines.

INTERFACE STUB: being implemented. Cloud providers subclass
`SshVirtualMachine`, implement the resource hooks (_Create/_Delete/_IsReady)
for their instance API, and set `ip_address` (and `internal_ip`) once the
instance is up; everything else (commands, files, installs) comes from here.
"""

from typing import Optional

from perfkitbenchmarker import virtual_machine


class SshVirtualMachine(virtual_machine.BaseVirtualMachine):
  """A Linux machine driven with the system ssh/scp."""

  KIND = 'ssh_vm'

  def __init__(self, spec: virtual_machine.VmSpec, name: str,
               group_name: str, *, user: str = 'pkb',
               ip_address: Optional[str] = None,
               keyfile: Optional[str] = None, port: int = 22,
               internal_ip: Optional[str] = None, **kwargs):
    super().__init__(spec, name, group_name, **kwargs)
    self.user = user
    self.ip_address = ip_address
    self.internal_ip = internal_ip or ip_address
    self.keyfile = keyfile
    self.port = port
