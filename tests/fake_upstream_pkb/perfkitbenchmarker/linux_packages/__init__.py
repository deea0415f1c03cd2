"""Fake upstream (tests only): the packages whose flags the plugin reads."""
