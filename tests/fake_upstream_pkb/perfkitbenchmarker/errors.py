"""Fake upstream (tests only): the error classes the plugin raises."""


class Error(Exception):
  pass


class Setup:

  class InvalidConfigurationError(Error):
    pass


class Benchmarks:

  class RunError(Error):
    pass
