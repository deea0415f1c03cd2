"""Fake upstream (tests only): the package the plugin is installed into."""
