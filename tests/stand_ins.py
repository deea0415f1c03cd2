"""Stand-in artifacts for the SSH tests of things no machine here can get.

The Dragonfly/KeyDB, YCSB and Redis Enterprise SSH tests build the release
tarballs and installers they need from small scripts: `Fill` puts values
into a script template's @KEY@ placeholders, `WriteTar` packs (name, text,
mode) members into a tarball.
"""

import io
import os
import tarfile
import time


def Fill(template: str, **values: str) -> str:
  for key, value in values.items():
    template = template.replace(f'@{key}@', value)
  return template


def WriteTar(path: str, members, gzip: bool = False) -> None:
  """A tarball of (name, text, mode) members, directories implied."""
  os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
  with tarfile.open(path, 'w:gz' if gzip else 'w') as tar:
    for name, text, mode in members:
      data = text.encode()
      info = tarfile.TarInfo(name)
      # A minute old, so no extractor warns of timestamps in the future.
      info.size, info.mode, info.mtime = len(data), mode, time.time() - 60
      tar.addfile(info, io.BytesIO(data))
