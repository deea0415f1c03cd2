"""JSON a run wrote, read back as input: no object may name a key twice.

json (and pydantic's JSON parser) reads an object that names a key twice
as its last value, silently: a "value" added at a results line's end
replaced the measured one, a second "load" in a probe manifest recomputed
another load's figures, a second "resources" in a run record hid what
teardown must delete. A run never writes one so (it writes dicts, and
memtier its JSON the same way), so every reader of such a file (results
files, run records, probe manifests, memtier's JSON) parses it with
`UniqueKeys` and refuses one, in one line naming the file and the key
(`KeyTwice`'s words after the file's name). Standard library only: the
layers from machines up to the commands read through it.
"""

import json
from typing import Any, Dict, List, Optional, Tuple, Union


class KeyTwice(ValueError):
  """A JSON object of a file a run wrote names one key twice; its str is
  the one way every reader says so (after the file's name). A ValueError,
  as json's own errors are: a reader that takes any bad JSON as damage
  takes this too. `part`: which of several texts read together named it
  (their index), where the reader that knows their files needs to say
  which."""

  def __init__(self, key: str, part: Optional[int] = None):
    super().__init__(key)
    self.key = key
    self.part = part

  def __str__(self) -> str:
    return (f'the key "{self.key[:40]}" is given twice in one object, which '
            'a run never writes; refused rather than reading either (the '
            'file was edited or damaged)')


def UniqueKeys(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
  """A JSON object (json's object_pairs_hook): KeyTwice when it names a key
  twice (module doc)."""
  obj = dict(pairs)
  if len(obj) != len(pairs):
    seen = set()
    for key, _ in pairs:
      if key in seen:
        raise KeyTwice(key)
      seen.add(key)
  return obj


def Loads(text: Union[str, bytes]) -> Any:
  """json.loads of `text` (bytes: UTF-8, as json reads them), refusing an object that names a key twice.

  Raises:
    KeyTwice: an object names a key twice.
    ValueError: it is not JSON (json.JSONDecodeError).
    RecursionError: it is nested too deeply for json.
  """
  return json.loads(text, object_pairs_hook=UniqueKeys)
