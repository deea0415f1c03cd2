"""A small PerfKit Benchmarker compatible core for Redis price-performance studies."""
