#!/usr/bin/env bash
# Renders every scenario's diagram page to PNG with headless Chromium, for review:
# `locklab report OUT` writes the pages, then each becomes OUT/png/<id>.png.
#   ci/render-pages.sh [OUT] [ID...]    (default OUT: target/pages; default: every id)
# Needs chromium (ci/setup.sh installs it) and a built locklab (cargo build).
set -euo pipefail

out=${1:-target/pages}
shift || true
locklab=${LOCKLAB:-${CARGO_TARGET_DIR:-target}/debug/locklab}
chromium_bin=${CHROMIUM:-chromium}
command -v "$chromium_bin" >/dev/null || { echo "render-pages: $chromium_bin not found (run ci/setup.sh)" >&2; exit 2; }
[ -x "$locklab" ] || { echo "render-pages: $locklab not found (cargo build, or set LOCKLAB)" >&2; exit 2; }

only=()
if [ "$#" -gt 0 ]; then
  only=(--only "$(IFS=,; echo "$*")")
fi
mkdir -p "$out/png"
# Exit 1 only says some verdict differs from the catalog; the pages are written anyway.
"$locklab" report "$out" "${only[@]}" >/dev/null || [ "$?" -eq 1 ]

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
abs=$(cd "$out" && pwd)
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --hide-scrollbars --user-data-dir="$profile")
width=${WIDTH:-1400}
for page in "$abs"/*.html; do
  name=$(basename "$page" .html)
  # The page's script records its full height (data-height) once every step shows;
  # the screenshot's window is that tall, so the whole page is one picture.
  height=$("$chromium_bin" "${flags[@]}" --window-size="$width,1000" --dump-dom "file://$page" 2>/dev/null \
    | grep -o 'data-height="[0-9]*"' | head -1 | tr -dc '0-9')
  height=${height:-1000}
  "$chromium_bin" "${flags[@]}" --window-size="$width,$height" \
    --screenshot="$abs/png/$name.png" "file://$page" >/dev/null 2>&1 \
    || { echo "render-pages: chromium failed on $page" >&2; exit 1; }
  echo "$abs/png/$name.png"
done
