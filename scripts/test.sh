#!/usr/bin/env bash
# Runs every test: unit tests of the pure cores and the netns integration tests (root).
# Usage: sudo bash scripts/test.sh [extra cargo test args, e.g. a test name filter]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "scripts/test.sh: the netns tests need root (run with sudo)" >&2
  exit 1
fi
# The apt packages the tests use (a fresh machine may run this command first).
bash scripts/install-deps.sh
# The integration tests run the release binaries of the daemons and the test bed.
cargo build --release --workspace --bins --locked
cargo test --release --workspace --locked -- "$@"
# The split tests of the PEP again with plain splitting (the shipped configs run StarPEP).
if [ $# -eq 0 ]; then
  STARPEP_TEST_MODE=split cargo test --release --locked -p starpep-tests \
    --test netns_pep_transfer --test netns_pep_edges --test netns_pep_scale \
    --test netns_pep_own_port
fi
left=$(ip netns list | awk '$1 ~ /^sp[0-9]+x[0-9]+-/ {print $1}')
if [ -n "$left" ]; then
  echo "scripts/test.sh: tests left namespaces behind: $left" >&2
  exit 1
fi
echo "all tests passed"
