"""Redis Enterprise: the redis_enterprise benchmark's own layer.

  flags.py       the enterprise_redis_* flags (upstream PKB's names and
                 meanings, plus a few of this harness's own)
  options.py     EnterpriseOptions.FromFlags: the only flag reads, validated,
                 frozen; the OS decision (retired --os_type -> successor) and
                 the Local scaling
  optimizer.py   the throughput optimizer over shard count and proxy threads
                 (pure, over an injected evaluate)
  plan.py        dry-run plan lines and the time estimate
  local_run.py,  its runs on Local (Redis OSS stands in) and on clouds;
  cloud_run.py,  study_steps.py: the steps both share
  study_steps.py

The cluster itself (install, bootstrap, proxies, databases, the REST API
and rladmin) is a server engine's business: engines/redis_enterprise.py.

Extension seam: a new enterprise setting is a flag in flags.py
(--enterprise_redis_<name>) and a field <name> in options.py, which
FromFlags fills by that name and Check checks; the benchmark module only
wires these.
"""
