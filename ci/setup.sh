#!/usr/bin/env bash
# Installs everything locklab needs on a fresh Debian 12 machine: the real servers the
# backend tests start themselves (never as services), libfaketime for clock faults, and
# protoc for etcd-client's build script, headless Chromium to render and test the
# diagram pages, and Python with redis-py and kazoo for the example lock clients. Idempotent and non-interactive: safe to run twice.
set -euo pipefail

packages=(
  redis-server redis-tools
  mariadb-server mariadb-client
  postgresql
  etcd-server etcd-client
  zookeeper default-jre-headless
  faketime libfaketime libtcmalloc-minimal4
  protobuf-compiler
  spin
  chromium
  python3 python3-redis python3-kazoo
)

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  sudo_cmd=(sudo)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -gt 0 ]; then
  echo "locklab setup: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  # policy-rc.d keeps the packaged services from starting; locklab starts its own.
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "locklab setup: all Debian packages already installed"
fi

# The packaged services must not hold the default ports or data dirs; stop any that started.
for svc in redis-server mariadb postgresql etcd zookeeper; do
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
    "${sudo_cmd[@]}" systemctl stop "$svc" || true
  fi
done

for bin in redis-server redis-cli protoc chromium mariadbd mariadb-install-db mariadb psql pg_isready java; do
  command -v "$bin" >/dev/null || { echo "locklab setup: $bin missing after install" >&2; exit 1; }
done
# Debian keeps the PostgreSQL server off PATH; locklab looks there when it is not on PATH.
for bin in postgres initdb; do
  command -v "$bin" >/dev/null || [ -x "/usr/lib/postgresql/15/bin/$bin" ] \
    || { echo "locklab setup: $bin missing after install" >&2; exit 1; }
done
# ZooKeeper has no binary of its own on PATH: locklab runs its jars with java.
for jar in zookeeper slf4j-log4j12 log4j-1.2; do
  [ -f "/usr/share/java/$jar.jar" ] || { echo "locklab setup: /usr/share/java/$jar.jar missing after install" >&2; exit 1; }
done
# The example lock clients (redis-py's Lock, kazoo's Lock) run on Debian's Python, where
# apt puts their libraries.
/usr/bin/python3 -c 'import redis, kazoo' \
  || { echo "locklab setup: python3-redis or python3-kazoo missing after install" >&2; exit 1; }
echo "locklab setup: done"
