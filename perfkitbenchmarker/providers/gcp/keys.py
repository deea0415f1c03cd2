"""The run's SSH key pair, as a resource of the run.

The run's own key (ssh_vm.GenerateKeyPair), given to its instances through
the `ssh-keys` metadata, so no personal key is put on a VM. Recorded first,
it is deleted last, after every instance (and every process teardown had to
stop over SSH on them). Only its path is recorded, never its contents.
"""

from typing import Any, Dict, Optional

from perfkitbenchmarker import record_checks
from perfkitbenchmarker import resource
from perfkitbenchmarker import ssh_vm


class SshKeyPair(resource.BaseResource):
  """The private key and its .pub in the run's key directory."""

  KIND = 'gcp_ssh_key'
  NAME = 'run-ssh-key'

  def __init__(self, directory: str, comment: str = 'pkb', **kwargs):
    super().__init__(self.NAME, **kwargs)
    self.directory = directory
    self.comment = comment
    self.private_key_path: Optional[str] = None
    self.public_key: Optional[str] = None

  def _Create(self) -> None:
    # Reuses an existing key: a re-provisioned run's instances trust it.
    key_pair = ssh_vm.GenerateKeyPair(self.directory, comment=self.comment)
    self.private_key_path = key_pair.private_key_path
    self.public_key = key_pair.public_key

  def _Delete(self) -> None:
    if self.private_key_path:
      ssh_vm.RemoveKeyPair(self.private_key_path)

  def RecordData(self) -> Dict[str, Any]:
    return {'directory': self.directory,
            'private_key_path': self.private_key_path}

  class Fields(record_checks.Fields):
    # Teardown deletes this file: only ever one inside the run's roots.
    directory: Optional[record_checks.LocalDir] = None
    private_key_path: Optional[record_checks.LocalPath] = None

  @classmethod
  def FromRecord(cls, entry, record) -> 'SshKeyPair':
    fields = record_checks.Parse(cls.Fields, entry, record)
    key = cls(fields.directory or record.run_dir)
    key.private_key_path, key.created = fields.private_key_path, True
    return key


resource.RegisterKind(SshKeyPair.KIND, SshKeyPair.FromRecord)
