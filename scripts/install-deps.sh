#!/usr/bin/env bash
# Installs the system packages the daemons, the test bed and the tests use (Debian, as root).
# --no-install-recommends: wireguard-tools would otherwise pull a kernel image.
set -euo pipefail
pkgs=(iproute2 nftables ethtool tcpdump iperf3 iputils-ping procps psmisc
      wireguard-tools wireguard-go openvpn openssl clang llvm libbpf-dev
      nginx chromium curl    # the suite's web application: server, browser, --check loader
      fonts-dejavu-core      # the text of the bench report's plots
      dpkg-dev binutils      # scripts/package.sh: cargo-deb's $auto (dpkg-shlibdeps) and --strip
      systemd man-db         # the package test: systemd-analyze verify (and its man: checks)
      adduser util-linux)    # the packages' postinst (user starpep); setpriv and unshare (privilege tests)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# Kernel modules the data path and the tests use (built in on some kernels: ignore failures).
for m in tun veth nf_tables nft_tproxy nft_socket nf_tproxy_ipv4 nf_tproxy_ipv6 nf_conntrack tcp_bbr; do
  modprobe -q "$m" 2>/dev/null || true
done
