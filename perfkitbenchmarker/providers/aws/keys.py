"""The run's SSH key: an ed25519 pair made locally, imported into EC2.

The run's own key (ssh_vm.GenerateKeyPair), so no personal key is ever put on
a VM; only its public half goes to AWS, only its path into the run record.
"""

import os
from typing import Any, Dict, Optional

from perfkitbenchmarker import record_checks
from perfkitbenchmarker import run_scope
from perfkitbenchmarker import ssh_vm
from perfkitbenchmarker.providers.aws import api

KEY_FILE = 'aws_ssh_key'


def KeyPath(run_uri: str) -> str:
  """The run's private key: in its key directory, never under results."""
  return os.path.join(run_scope.RunKeyDir(run_uri), KEY_FILE)


class KeyPair(api.AwsResource):
  """<key dir>/aws_ssh_key(.pub), imported as EC2 key pair pkb-<run_uri>."""

  KIND = 'aws_key_pair'
  NOUN, LIST_KEY, ID_KEY, NOT_FOUND = (
      'key_pair', 'KeyPairs', 'KeyPairId', 'InvalidKeyPair.NotFound')

  def __init__(self, clients, run_uri, key_path: Optional[str] = None,
               **kwargs):
    super().__init__(clients, run_uri, **kwargs)
    self.key_path = key_path

  def _Create(self) -> None:
    directory, file_name = os.path.split(self.key_path)
    public_key = ssh_vm.GenerateKeyPair(directory, self.name,
                                        file_name=file_name).public_key

    def Import() -> Dict[str, Any]:
      return api.SendCreate(self, lambda: self.ec2.import_key_pair(
          KeyName=self.name, PublicKeyMaterial=public_key.encode(),
          TagSpecifications=self.TagSpecifications('key-pair')))

    what = f'importing key pair {self.name}'
    reply = None
    with api.Translated(what, retry=api.TRANSIENT_CODES,
                        gone={'InvalidKeyPair.Duplicate'}):
      reply = Import()
    if reply is None:
      # The run-scoped name exists only if an earlier attempt of this run
      # imported it, perhaps with a key since regenerated: replace it.
      self._DeleteRemote()
      with api.Translated(what, retry=api.TRANSIENT_CODES):
        reply = Import()
    self.Remember(id=reply.get('KeyPairId'))

  def _DeleteRemote(self) -> None:
    # DeleteKeyPair succeeds for a missing key; NotFound is tolerated anyway.
    with api.Translated(f'deleting key pair {self.name}',
                        retry=api.DEPENDENCY_CODES,
                        gone={'InvalidKeyPair.NotFound'}):
      self.ec2.delete_key_pair(KeyName=self.name)

  def _Delete(self) -> None:
    # By name, which succeeds for a key EC2 does not list yet.
    if self._Unanswered():
      self._LookAgain()
    self._DeleteRemote()
    if self.key_path and os.path.basename(self.key_path) == KEY_FILE:
      ssh_vm.RemoveKeyPair(self.key_path)

  def RecordData(self) -> Dict[str, Any]:
    return dict(super().RecordData(), key_path=self.key_path)

  class Fields(api.AwsResource.Fields):
    # Teardown deletes this file: only ever one inside the run's roots.
    key_path: Optional[record_checks.LocalPath] = None

  def Restore(self, fields: Fields) -> None:
    super().Restore(fields)
    self.key_path = fields.key_path


api.Register(KeyPair)
