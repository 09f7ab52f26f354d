#!/usr/bin/env bash
# Installs what locklab needs on a fresh Debian 12 machine. Idempotent and
# non-interactive: safe to run twice.
#
#   bash ci/setup.sh                      everything the full test command needs
#   bash ci/setup.sh --only redis,sql     a `run` build and the servers of those families
#
# Everything: the real servers the backend tests start themselves (never as services),
# libfaketime for clock faults, protoc for etcd-client's build script, iproute2 and
# nftables for network namespaces and partitions between servers, headless Chromium
# to render and test the diagram pages, Spin (the speed anchor), and Python with
# redis-py and kazoo for the example lock clients. Families: redis (Redis, Sentinel,
# Redlock; libfaketime; redis-py), sql (MariaDB, PostgreSQL), etcd, zookeeper (with a
# JRE; kazoo). `--only` always adds protoc, which any `--features run` build needs.
set -euo pipefail

usage() {
  echo "usage: bash ci/setup.sh [--only FAMILY,...]   (families: redis, sql, etcd, zookeeper)" >&2
  exit 2
}

declare -A family_packages=(
  [redis]="redis-server redis-tools faketime libfaketime libtcmalloc-minimal4 python3 python3-redis"
  [sql]="mariadb-server mariadb-client postgresql"
  [etcd]="etcd-server etcd-client"
  [zookeeper]="zookeeper default-jre-headless python3 python3-kazoo"
)
declare -A family_binaries=(
  [redis]="redis-server redis-cli"
  [sql]="mariadbd mariadb-install-db mariadb psql pg_isready"
  [etcd]="etcd"
  [zookeeper]="java"
)

families=(redis sql etcd zookeeper)
everything=1
if [ "$#" -gt 0 ]; then
  [ "$1" = "--only" ] && [ "$#" -eq 2 ] || usage
  IFS=',' read -r -a families <<< "$2"
  everything=0
  for f in "${families[@]}"; do
    [ -n "${family_packages[$f]+x}" ] || { echo "locklab setup: unknown family '$f'" >&2; usage; }
  done
fi

# iproute2 and nftables: the hosts of their own (network namespaces, partitions
# between servers) that runs and the servers' tests make.
packages=(protobuf-compiler iproute2 nftables)
for f in "${families[@]}"; do
  read -r -a more <<< "${family_packages[$f]}"
  packages+=("${more[@]}")
done
if [ "$everything" -eq 1 ]; then
  packages+=(spin chromium)
fi

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

needs() {
  local f
  for f in "${families[@]}"; do [ "$f" = "$1" ] && return 0; done
  return 1
}

binaries=(protoc)
for f in "${families[@]}"; do
  read -r -a more <<< "${family_binaries[$f]}"
  binaries+=("${more[@]}")
done
if [ "$everything" -eq 1 ]; then
  binaries+=(chromium)
fi
for bin in "${binaries[@]}"; do
  command -v "$bin" >/dev/null || { echo "locklab setup: $bin missing after install" >&2; exit 1; }
done
if needs sql; then
  # Debian keeps the PostgreSQL server off PATH; locklab looks there when it is not on PATH.
  for bin in postgres initdb; do
    command -v "$bin" >/dev/null || [ -x "/usr/lib/postgresql/15/bin/$bin" ] \
      || { echo "locklab setup: $bin missing after install" >&2; exit 1; }
  done
fi
if needs zookeeper; then
  # ZooKeeper has no binary of its own on PATH: locklab runs its jars with java.
  for jar in zookeeper slf4j-log4j12 log4j-1.2; do
    [ -f "/usr/share/java/$jar.jar" ] || { echo "locklab setup: /usr/share/java/$jar.jar missing after install" >&2; exit 1; }
  done
  /usr/bin/python3 -c 'import kazoo' \
    || { echo "locklab setup: python3-kazoo missing after install" >&2; exit 1; }
fi
if needs redis; then
  # The example lock clients (redis-py's Lock) run on Debian's Python, where apt puts
  # their libraries.
  /usr/bin/python3 -c 'import redis' \
    || { echo "locklab setup: python3-redis missing after install" >&2; exit 1; }
fi
echo "locklab setup: done"
