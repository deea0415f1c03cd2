"""Redis Enterprise: the redis_enterprise benchmark's own layer.

  flags.py       the enterprise_redis_* flags (upstream PKB's names and
                 meanings, plus a few of this harness's own)
  options.py     EnterpriseOptions.FromFlags: the only flag reads, validated,
                 frozen; the OS decision (retired --os_type -> successor) and
                 the Local scaling
  rest_client.py the cluster's REST API (bootstrap to create and join the
                 cluster, /v1/bdbs...) over an injected HTTP session
  rladmin.py     command builders: install, proxy tuning, worker pinning,
                 offlined cores (pure text, no secrets)
  optimizer.py   the throughput optimizer over shard count and proxy threads
                 (pure, over an injected evaluate)
  plan.py        dry-run plan lines and the time estimate

Extension seam: a new enterprise setting is a flag in flags.py, a field in
options.py read in FromFlags and checked in Check; the benchmark module only
wires these.
"""
