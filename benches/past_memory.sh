#!/usr/bin/env bash
# Past memory, side by side with Spin 6.5.2: each way of storing states on the same
# graphs (benches/spin/, as in spin_side_by_side.sh) — locklab's full store, hash
# compaction and bitstate sweep against Spin's full BFS, hash-compacted DFS (-DHC4) and
# bitstate DFS (-DBITSTATE), with the same 2^33-bit array for both bitstate sweeps.
# For each: distinct states found, generated states per second, time, peak RSS, bytes
# per state, and for locklab what it answers and whether its stories are the full
# store's (the shortest) — hash compaction's must be.
#   benches/past_memory.sh                 # the 105-million-state failover row, and a small one
#   ROWS=small benches/past_memory.sh      # the 4-million-state row alone
# One run per cell (the large row takes some 15 minutes). Needs what
# spin_side_by_side.sh needs, and 20 GB of RAM for the large row's full searches.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
build=(cargo build --release --quiet --bin locklab --manifest-path "$root/Cargo.toml")
if [ -n "${CARGO_LOCK:-}" ]; then build=(flock "$CARGO_LOCK" "${build[@]}"); fi
CARGO_TARGET_DIR=$target "${build[@]}"
locklab=$target/release/locklab

small="failover 3c ttl4 2r fo=2|redis-failover --clients 3 --ttl 4 --replicas 2 --faults failover=2|-DCLIENTS=3 -DTTL=4 -DREPLICAS=2 -DFAILOVERS=2"
large="failover 4c ttl4 2r fo=2|redis-failover --clients 4 --ttl 4 --replicas 2 --faults failover=2|-DCLIENTS=4 -DTTL=4 -DREPLICAS=2 -DFAILOVERS=2"
case ${ROWS:-all} in
  small) rows=("$small") ;;
  large) rows=("$large") ;;
  *) rows=("$small" "$large") ;;
esac
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# One locklab run: "unique generated seconds rss_kb verdict stories" ($2: the store flags).
run_locklab() {
  /usr/bin/time -f "%M" -o "$tmp/rss" "$locklab" check $1 $2 --max-states 1000000000 \
    --memory 20000 --format json >"$tmp/out.json" 2>/dev/null || true
  python3 - "$tmp/out.json" "$(tail -1 "$tmp/rss")" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["stats"]
told = ",".join(f'{t["property"]}:{len(t["steps"])}' for t in r["stories"])
open(sys.argv[1] + ".stories", "w").write(json.dumps(r["stories"]))
print(s["unique_states"], s["states"], s["seconds"], sys.argv[2], r["verdict"], told or "-")
EOF
}

# One Spin run: "stored transitions seconds rss_kb" ($2: bfs or dfs, $3: the store).
run_spin() {
  PAN_STORE=$3 "$here/spin/run.sh" "$2" $1 >"$tmp/spin.txt" 2>&1
  awk '/states, stored/ {s=$1} /transitions/ {t=$1} /elapsed time/ {e=$4} /MAXRSS_KB/ {m=$2}
       END {print s+0, t+0, e, m}' "$tmp/spin.txt"
}

line() { # label checker unique generated secs rss_kb [answer]
  awk -v l="$1" -v n="$2" -v u="$3" -v g="$4" -v s="$5" -v m="$6" -v a="${7:-}" \
    'BEGIN {printf "%-26s %-20s %11d %12.0f %8.1f %8.0f %6.1f  %s\n", l, n, u, g/s, s, m/1024, m*1024/u, a}'
}

printf "%-26s %-20s %11s %12s %8s %8s %6s  %s\n" scenario "checker, store" unique "generated/s" secs "peak MB" "B/st" "answer (stories: property:steps)"
for row in "${rows[@]}"; do
  IFS='|' read -r label args flags <<<"$row"
  for store in "full|--store full" "hash-compact|--store hash-compact" "bitstate 2^33|--store bitstate --bitstate-bits 33"; do
    IFS='|' read -r name sflags <<<"$store"
    read -r unique gen secs rss verdict told < <(run_locklab "$args" "$sflags")
    same=""
    if [ "$name" = full ]; then cp "$tmp/out.json.stories" "$tmp/full.stories"; fi
    if [ "$name" != full ]; then
      if cmp -s "$tmp/out.json.stories" "$tmp/full.stories"; then same=" = full's"; else same=" (not full's)"; fi
    fi
    line "$label" "locklab $name" "$unique" "$gen" "$secs" "$rss" "$verdict $told$same"
  done
  for spin in "bfs full" "dfs hc4" "dfs bitstate"; do
    read -r mode store <<<"$spin"
    read -r unique gen secs rss < <(run_spin "$flags" "$mode" "$store")
    line "$label" "spin $mode $store" "$unique" "$gen" "$secs" "$rss"
  done
done
