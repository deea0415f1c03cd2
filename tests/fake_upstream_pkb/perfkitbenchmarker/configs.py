"""Fake upstream (tests only): configs.LoadConfig's call shape."""

import yaml


def LoadConfig(benchmark_config, user_config, benchmark_name):
  config = yaml.safe_load(benchmark_config)[benchmark_name]
  config.update(user_config or {})
  return config
