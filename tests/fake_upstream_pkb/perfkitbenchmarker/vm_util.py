"""Fake upstream (tests only): the run's temporary directory."""

import os


def GetTempDir():
  return os.environ['FAKE_UPSTREAM_TEMP_DIR']
