#!/usr/bin/env bash
# Builds the Debian packages starpep-client and starpep-pop into target/debian/*.deb: the release
# binaries, the systemd template units (packaging/systemd), the example configs, and the man pages
# and bash/zsh/fish completions generated from the daemons' clap definitions (starpep-gendocs).
# Usage: bash scripts/package.sh   (installs cargo-deb from crates.io when it is missing; the
# $auto dependencies need dpkg-shlibdeps from dpkg-dev, see scripts/install-deps.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO_DEB_VERSION=3.8.0
if ! cargo deb --version >/dev/null 2>&1; then
  echo "== installing cargo-deb $CARGO_DEB_VERSION"
  cargo install cargo-deb --version "$CARGO_DEB_VERSION" --locked
fi
if ! command -v dpkg-shlibdeps >/dev/null; then
  echo "scripts/package.sh: dpkg-shlibdeps missing: apt-get install dpkg-dev (scripts/install-deps.sh)" >&2
  exit 1
fi
echo "== build"
# The same build as scripts/test.sh's (a -p subset would resolve features differently and rebuild).
cargo build --release --workspace --bins --locked
echo "== man pages and completions"
rm -rf target/release/gendocs
./target/release/starpep-gendocs --out target/release/gendocs >/dev/null
gzip -9n target/release/gendocs/man/man1/*.1
echo "== packages"
mkdir -p target/debian
rm -f target/debian/starpep-client_*.deb target/debian/starpep-pop_*.deb
for crate in endpoint-client endpoint-pop; do
  cargo deb --no-build --locked --strip -p "$crate" --output target/debian/
done
for deb in target/debian/starpep-client_*.deb target/debian/starpep-pop_*.deb; do
  echo "== $deb"
  dpkg-deb --field "$deb" Package Version Architecture Depends
done
