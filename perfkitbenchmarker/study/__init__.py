"""The Redis price-performance study: the steps its benchmark module wires.

  options.py        RedisStudyOptions.FromFlags: the only flag reads, and
                    validation (one-line errors)
  flags.py          search and shard-study flag definitions
  deployment.py     Deployment (what prepare built), Deploy / Restore /
                    Restart / StopAll, the one StartShards and bind rule
  search_runner.py  one latency-capped search over a probe driver, samples
                    emitted as each probe ends
  shard_study.py    --redis_optimize_shards: a search per shard count
  results.py        result samples, sample metadata, the summary table
  plan.py           the dry-run plan and probe-time estimate

Everything here takes frozen options; the server is reached only through
the engine interface (engines/), the load through load_generators/.
"""
