"""The run's SSH key: an ed25519 pair made locally, imported into EC2.

Each run gets its own key (ssh-keygen, private half mode 0600 in the run's
private 0700 key directory outside results: run_keys), so no personal key is
ever put on a VM and the key dies with the run. Only the public half goes to AWS (ImportKeyPair, named pkb-<run_uri>);
only the private key's path goes into the run record. Teardown deletes the
EC2 key pair and the local files after the instances that trust them.
"""

import os
import subprocess
from typing import Any, Callable, Dict, Optional

from perfkitbenchmarker import errors
from perfkitbenchmarker import record_checks
from perfkitbenchmarker import run_keys
from perfkitbenchmarker.providers.aws import api

KEY_FILE = 'aws_ssh_key'


def KeyPath(run_uri: str) -> str:
  """The run's private key: in its key directory, never under results."""
  return os.path.join(run_keys.RunKeyDir(run_uri), KEY_FILE)


def GenerateKey(path: str, comment: str,
                run: Callable[..., subprocess.CompletedProcess]) -> None:
  """Writes an ed25519 key pair to path (0600) and path.pub, if missing."""
  if os.path.exists(path) and os.path.exists(path + '.pub'):
    os.chmod(path, 0o600)  # A resumed run keeps the key its VMs trust.
    return
  for stale in (path, path + '.pub'):
    if os.path.exists(stale):
      os.remove(stale)
  if os.path.dirname(path):
    run_keys.MakePrivateDir(os.path.dirname(path))
  argv = ['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', comment,
          '-f', path]
  try:
    result = run(argv, capture_output=True, text=True, check=False,
                 timeout=60)
  except FileNotFoundError:
    raise errors.PrerequisiteError(
        'ssh-keygen not found; install openssh-client.') from None
  if result.returncode != 0 or not os.path.exists(path):
    raise errors.ResourceError(
        f'ssh-keygen failed for {path}: {(result.stderr or "").strip()}')
  os.chmod(path, 0o600)


class KeyPair(api.AwsResource):
  """<key dir>/aws_ssh_key(.pub), imported as EC2 key pair pkb-<run_uri>."""

  KIND = 'aws_key_pair'

  def __init__(self, clients, run_uri, key_path: Optional[str] = None,
               run: Callable[..., subprocess.CompletedProcess] = subprocess.run,
               **kwargs):
    super().__init__(clients, run_uri, **kwargs)
    self.key_path = key_path
    self._run = run

  def PublicKey(self) -> bytes:
    with open(self.key_path + '.pub', 'rb') as f:
      return f.read().strip()

  def _Import(self) -> Dict[str, Any]:
    return self.ec2.import_key_pair(
        KeyName=self.name, PublicKeyMaterial=self.PublicKey(),
        TagSpecifications=self.TagSpecifications('key-pair'))

  def _Create(self) -> None:
    GenerateKey(self.key_path, self.name, self._run)
    what = f'importing key pair {self.name}'
    reply = None
    with api.Translated(what, retry=api.TRANSIENT_CODES,
                        gone={'InvalidKeyPair.Duplicate'}):
      reply = self._Import()
    if reply is None:
      # The run-scoped name exists only if an earlier attempt of this run
      # imported it, perhaps with a key since regenerated: replace it.
      self._DeleteRemote()
      with api.Translated(what, retry=api.TRANSIENT_CODES):
        reply = self._Import()
    self.Remember(id=reply.get('KeyPairId'))

  def _DeleteRemote(self) -> None:
    # DeleteKeyPair succeeds for a missing key; NotFound is tolerated anyway.
    with api.Translated(f'deleting key pair {self.name}',
                        retry=api.DEPENDENCY_CODES,
                        gone={'InvalidKeyPair.NotFound'}):
      self.ec2.delete_key_pair(KeyName=self.name)

  def _Delete(self) -> None:
    self._DeleteRemote()
    if self.key_path and os.path.basename(self.key_path) == KEY_FILE:
      for path in (self.key_path, self.key_path + '.pub'):
        if os.path.exists(path):
          os.remove(path)
      run_keys.RemoveKeyDirIfEmpty(self.key_path)

  def RecordData(self) -> Dict[str, Any]:
    return dict(super().RecordData(), key_path=self.key_path)

  class Fields(api.AwsResource.Fields):
    # Teardown deletes this file: only ever one inside the run's roots.
    key_path: Optional[record_checks.LocalPath] = None

  def Restore(self, fields: Fields) -> None:
    super().Restore(fields)
    self.key_path = fields.key_path


api.Register(KeyPair)
