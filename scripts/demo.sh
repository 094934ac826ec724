#!/usr/bin/env bash
# The main job: the client box and the POP in network namespaces, across satlink replaying the
# real Starlink trace; one download per setup (WireGuard only, WireGuard + split, WireGuard +
# StarPEP), side by side.
# Usage: sudo bash scripts/demo.sh [starpep-bench demo options, e.g. --profile geo --seconds 30]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "scripts/demo.sh: needs root (network namespaces): run with sudo" >&2
  exit 1
fi
bash scripts/install-deps.sh
cargo build --release --workspace --bins --locked
exec ./target/release/starpep-bench demo "$@"
