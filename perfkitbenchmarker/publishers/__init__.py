"""Sample publishers (PKB formats).

Extension seam: a publisher has `Publish(sample)` (called as each sample is
produced, so a crash loses nothing already measured) and `Close()`. Add a new
one (e.g. BigQuery) beside json_publisher.py and csv_publisher.py and list it
in `publisher.SampleCollector`.
"""
