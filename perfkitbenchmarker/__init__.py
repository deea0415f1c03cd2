"""A small PerfKit Benchmarker compatible core for Redis price-performance studies."""

VERSION = '0.1.0'
