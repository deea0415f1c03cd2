#!/bin/bash
# Pushed by upstream_install_data_benchmark.py (vm.PushDataFile): the lines,
# bytes and SHA-256 of one file, and how long curl takes to read it back
# through a file:// URL, as key=value lines.
set -euo pipefail
file="$1"
start=$(date +%s.%N)
curl --silent --show-error --output /dev/null "file://$(realpath "$file")"
end=$(date +%s.%N)
echo "lines=$(wc -l < "$file")"
echo "bytes=$(wc -c < "$file")"
awk -v s="$start" -v e="$end" 'BEGIN {printf "curl_seconds=%.6f\n", e - s}'
echo "sha256 $(sha256sum "$file" | cut -d' ' -f1)"
