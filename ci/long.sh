#!/usr/bin/env bash
# The long proofs, kept at their full size out of the README's test command (which
# runs a smaller, still meaningful, size of each). Run it before resolving any change
# to what it covers: the checkers and importers (the property runs), the Redis failover
# and Redlock restarts on real servers (the "every time" runs). Needs what
# `bash ci/setup.sh` installs.
#
#   bash ci/long.sh            everything below
#   bash ci/long.sh props      only the property runs (no server)
#   bash ci/long.sh seeds      only the "every time" runs on real servers
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-all}"
case "$what" in all | props | seeds) ;; *)
  echo "usage: bash ci/long.sh [all|props|seeds]" >&2
  exit 2
  ;;
esac
if [ "$what" != seeds ]; then
  # Every spec against the brute-force oracle, simulated lock clients, the importers'
  # fuzzers, the EDN export: 50,000 cases per property (300 in the test command).
  PROPTEST_CASES=50000 cargo test -p locklab-traces --release --test it -- \
    spec_props:: client_props:: linearizability_props:: import_fuzz:: edn_export::
fi
if [ "$what" != props ]; then
  # Two holders after a Sentinel failover and after a Redlock node restarts empty, one
  # holder with an append-only file or a delayed restart: 10 seeds each (3 in the test
  # command).
  # The README's features and workspace, so that its build is reused.
  LOCKLAB_SEEDS=10 cargo test --workspace --features model-check,backends --test it -- \
    every_time redlock_split_majorities redlock_delayed_restart
fi
echo "ci/long.sh: every long proof passed"
