#!/usr/bin/env bash
# Builds PKB's YCSB Redis binding (perfkitbenchmarker/linux_packages/
# ycsb_redis_binding) with Maven into build/ycsb/ (git-ignored):
#   build/ycsb/pkb-ycsb-redis.jar   the binding (pkb.ycsb.RedisDataTypesClient)
#   build/ycsb/classpath.txt        YCSB core, Jedis and their dependencies,
#                                   from the local Maven cache (~/.m2)
#   build/ycsb/source.sha256        what was built; an unchanged source tree
#                                   skips the build (a second run takes < 1 s)
# YCSB core and Jedis come from Maven Central at the versions pinned in
# the pom. Usage: scripts/build_ycsb.sh [--force]
set -euo pipefail
cd "$(dirname "$0")/.."

SRC=perfkitbenchmarker/linux_packages/ycsb_redis_binding
OUT="$PWD/build/ycsb"
JAR="$OUT/pkb-ycsb-redis.jar"
CP="$OUT/classpath.txt"
STAMP="$OUT/source.sha256"

digest() {
  (cd "$SRC" && find pom.xml src -type f -print0 | sort -z |
     xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}

up_to_date() {
  [ -f "$JAR" ] && [ -f "$CP" ] && [ -f "$STAMP" ] || return 1
  [ "$(cat "$STAMP")" = "$(digest)" ] || return 1
  # Every jar on the classpath must still be in the Maven cache.
  local entry
  IFS=: read -r -a entries < "$CP"
  for entry in "${entries[@]}"; do [ -f "$entry" ] || return 1; done
}

if [ "${1:-}" != "--force" ] && up_to_date; then
  echo "YCSB binding up to date: $JAR"
  exit 0
fi

for tool in mvn java; do
  command -v "$tool" >/dev/null || {
    echo "$tool not found: install a JDK (17) and Maven to build the YCSB binding." >&2
    exit 1; }
done

echo "Building the YCSB Redis binding with Maven..."
mkdir -p "$OUT"
# Maven 3.8 prints colour resets even in batch mode with colour off; its
# output (only errors, with -q) goes through a filter that drops them.
mvn -q -B -Dstyle.color=never -f "$SRC/pom.xml" -Dpkb.build.dir="$OUT/target" package \
  dependency:build-classpath -Dmdep.outputFile="$CP" -Dmdep.includeScope=runtime \
  2>&1 | sed 's/\x1b\[[0-9;]*m//g'
cp "$OUT/target/pkb-ycsb-redis-1.0.0.jar" "$JAR"
digest > "$STAMP"
echo "YCSB binding built: $JAR"
