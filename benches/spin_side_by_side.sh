#!/usr/bin/env bash
# Side by side with Spin 6.5.2 on the same state graphs: locklab's BFS against Spin's
# BFS and DFS on a Promela transcription of the Redis lock model (benches/spin/, the
# same unique states, transitions and shortest trails; see its README). For each row it
# takes the median of RUNS runs of each checker's search time and its peak RSS (locklab
# on every core, and on one thread as locklab/1), and
# prints unique states, generated states per second, time, memory and the ratios.
# Then progress: locklab's `check --progress --once` (one graph, both promises judged with
# clients that lock once, as the Promela model's do) against
# Spin's `pan -a` (starvation-freedom by acceptance cycles) on the same progress graph,
# whose states Spin counts without the never claim.
#   benches/spin_side_by_side.sh            # the two safety rows, the two progress rows
#   RUNS=1 benches/spin_side_by_side.sh
#   ONLY=progress benches/spin_side_by_side.sh   # the progress rows alone (or ONLY=safety)
# Needs: spin and gcc (ci/setup.sh installs spin), GNU time at /usr/bin/time. Builds
# locklab in release with the target dir and lock given by CARGO_TARGET_DIR and
# CARGO_LOCK (a flock file serialising builds, if set).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
runs=${RUNS:-3}
target=${CARGO_TARGET_DIR:-$root/target}

build=(cargo build --release --quiet --bin locklab --manifest-path "$root/Cargo.toml")
if [ -n "${CARGO_LOCK:-}" ]; then build=(flock "$CARGO_LOCK" "${build[@]}"); fi
CARGO_TARGET_DIR=$target "${build[@]}"
locklab=$target/release/locklab

# Rows: "label|locklab check arguments|spin -D flags".
rows=(
  "failover 3c ttl4 2r fo=2|redis-failover --clients 3 --ttl 4 --replicas 2 --faults failover=2|-DCLIENTS=3 -DTTL=4 -DREPLICAS=2 -DFAILOVERS=2"
  "lua-pause 4c ttl8 pause=3|redis-lua-pause --clients 4 --ttl 8 --faults pause=3|-DCLIENTS=4 -DTTL=8 -DPAUSES=3"
)

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# One locklab run: prints "unique generated seconds rss_kb". $2: extra flags.
run_locklab() {
  # Exit 1 (a violation) is an answer here, not a failure.
  /usr/bin/time -f "%M" -o "$tmp/rss" "$locklab" check $1 ${2:-} --max-states 100000000 --format json \
    >"$tmp/out.json" 2>/dev/null || true
  local stats
  stats=$(tr -d ' \n' <"$tmp/out.json" | grep -o '"stats":{[^}]*}')
  local field
  field() { echo "$stats" | grep -o "\"$1\":[0-9.e+-]*" | cut -d: -f2; }
  echo "$(field unique_states) $(field states) $(field seconds) $(tail -1 "$tmp/rss")"
}

# One Spin run: prints "stored transitions seconds rss_kb".
run_spin() {
  "$here/spin/run.sh" "$1" $2 >"$tmp/spin.txt" 2>&1
  awk '/states, stored/ {s=$1} /transitions/ {t=$1} /elapsed time/ {e=$4} /MAXRSS_KB/ {m=$2}
       END {print s, t, e, m}' "$tmp/spin.txt"
}

# Median over runs of each column of "a b c d" lines (a, b are counts, equal each run).
medians() {
  local f=$1
  echo "$(head -1 "$f" | cut -d' ' -f1) $(head -1 "$f" | cut -d' ' -f2) \
$(cut -d' ' -f3 "$f" | median) $(cut -d' ' -f4 "$f" | median)"
}

only=${ONLY:-all}
if [ "$only" = progress ]; then rows=(); fi
printf "%-26s %-9s %11s %12s %9s %9s\n" scenario checker unique "generated/s" secs "peak MB"
summary=()
for row in "${rows[@]}"; do
  IFS='|' read -r label args flags <<<"$row"
  : >"$tmp/l"; : >"$tmp/o"; : >"$tmp/b"; : >"$tmp/d"
  for _ in $(seq "$runs"); do
    run_locklab "$args" >>"$tmp/l"
    run_locklab "$args" "--threads 1" >>"$tmp/o"
    run_spin bfs "$flags" >>"$tmp/b"
    run_spin dfs "$flags" >>"$tmp/d"
  done
  for who in l o b d; do
    read -r unique gen secs rss < <(medians "$tmp/$who")
    case $who in l) name="locklab";; o) name="locklab/1";; b) name="spin bfs";; d) name="spin dfs";; esac
    awk -v l="$label" -v n="$name" -v u="$unique" -v g="$gen" -v s="$secs" -v m="$rss" \
      'BEGIN {printf "%-26s %-9s %11d %12.0f %9.2f %9.0f\n", l, n, u, g/s, s, m/1024}'
    eval "${who}_gen=$gen ${who}_secs=$secs ${who}_rss=$rss ${who}_unique=$unique"
  done
  summary+=("$(awk -v l="$label" -v lg="$l_gen" -v ls="$l_secs" -v lm="$l_rss" \
    -v bg="$b_gen" -v bs="$b_secs" -v bm="$b_rss" -v lu="$l_unique" -v bu="$b_unique" \
    'BEGIN {printf "%-26s states/s %.2fx  time %.2fx  memory %.2fx  (same graph: %s)",
      l, (lg/ls)/(bg/bs), ls/bs, lm/bm, (lu == bu ? "yes" : "NO, unique states differ")}')")
done
echo
echo "locklab / Spin BFS (states/s above 1 is faster; time and memory below 1 is less):"
printf '%s\n' "${summary[@]}"
if [ "$only" = safety ]; then exit 0; fi

# Progress rows: "label|locklab check arguments|spin -D flags".
progress_rows=(
  "lua-pause 3c ttl6 pause=2|redis-lua-pause --clients 3 --ttl 6 --faults pause=2|-DCLIENTS=3 -DTTL=6 -DPAUSES=2"
  "lua-pause 4c ttl4 pause=2|redis-lua-pause --clients 4 --ttl 4 --faults pause=2|-DCLIENTS=4 -DTTL=4 -DPAUSES=2"
)

# One locklab progress run: "graph_states seconds rss_kb", the seconds of the progress
# search (building the graph and judging every promise), as Spin's are its search's;
# the peak memory is the whole process's (its safety search too).
run_locklab_progress() {
  /usr/bin/time -f "%M" -o "$tmp/rss" "$locklab" check $1 --progress --once --format json \
    >"$tmp/out.json" 2>/dev/null || true
  local graph
  graph=$(tr -d ' \n' <"$tmp/out.json" | grep -o '"graph":{[^}]*}' | head -1)
  echo "$(echo "$graph" | grep -o '"states":[0-9]*' | cut -d: -f2) \
$(echo "$graph" | grep -o '"seconds":[0-9.e+-]*' | cut -d: -f2) $(tail -1 "$tmp/rss")"
}

# One Spin progress run: "graph_states seconds rss_kb" (the graph's states from a run
# without the never claim; pan -a stores them paired with the claim's states).
run_spin_progress() {
  "$here/spin/run.sh" graph $1 >"$tmp/graph.txt" 2>&1
  "$here/spin/run.sh" progress $1 >"$tmp/spin.txt" 2>&1
  awk '/states, stored/ {s=$1} END {printf "%s ", s}' "$tmp/graph.txt"
  awk '/elapsed time/ {e=$4} /MAXRSS_KB/ {m=$2} END {print e, m}' "$tmp/spin.txt"
}

echo
printf "%-26s %-9s %11s %9s %9s\n" progress checker "graph" secs "peak MB"
summary=()
for row in "${progress_rows[@]}"; do
  IFS='|' read -r label args flags <<<"$row"
  : >"$tmp/l"; : >"$tmp/b"
  for _ in $(seq "$runs"); do
    run_locklab_progress "$args" >>"$tmp/l"
    run_spin_progress "$flags" >>"$tmp/b"
  done
  for who in l b; do
    states=$(head -1 "$tmp/$who" | cut -d' ' -f1)
    secs=$(cut -d' ' -f2 "$tmp/$who" | median)
    rss=$(cut -d' ' -f3 "$tmp/$who" | median)
    case $who in l) name="locklab";; b) name="spin -a";; esac
    awk -v l="$label" -v n="$name" -v u="$states" -v s="$secs" -v m="$rss" \
      'BEGIN {printf "%-26s %-9s %11d %9.2f %9.0f\n", l, n, u, s, m/1024}'
    eval "${who}_secs=$secs ${who}_rss=$rss ${who}_states=$states"
  done
  summary+=("$(awk -v l="$label" -v ls="$l_secs" -v lm="$l_rss" -v bs="$b_secs" -v bm="$b_rss" \
    -v lu="$l_states" -v bu="$b_states" \
    'BEGIN {printf "%-26s time %.2fx  memory %.2fx  (same graph: %s)", l, ls/bs, lm/bm,
      (lu == bu ? "yes" : "NO, states differ")}')")
done
echo
echo "progress, locklab check --progress / Spin pan -a (search time; peak memory of each process):"
printf '%s\n' "${summary[@]}"
