#!/usr/bin/env bash
# Writes variants of the shipped Starlink trace (traces/leocc-example) to DIR, to check that a
# figure holds beyond the one recording (docs/starpep.md, "Beyond the shipped trace"):
#   bw_x2.mahimahi     twice the capacity (every delivery opportunity twice)
#   bw_half.mahimahi   half the capacity (every other opportunity)
#   bw_shift7.mahimahi, delay_shift7.txt   both traces rotated by 7 s (other instants, other epochs)
#   delay_plus20.txt   20 ms more one-way delay (a satellite segment of 62-80 ms RTT)
# Usage: bash scripts/trace-variants.sh DIR
# Then e.g.: starpep-bench demo --seconds 30 --setups wireguard,split,starpep --trace-bw DIR/bw_x2.mahimahi
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/trace-variants.sh DIR}
mkdir -p "$out"
t=traces/leocc-example
len=$(tail -n 1 "$t/bw.mahimahi")
awk '{print; print}' "$t/bw.mahimahi" >"$out/bw_x2.mahimahi"
awk 'NR % 2 == 1' "$t/bw.mahimahi" >"$out/bw_half.mahimahi"
awk -v s=7000 -v l="$len" '{t = $1 - s; if (t < 0) t += l; print t}' "$t/bw.mahimahi" |
  sort -n >"$out/bw_shift7.mahimahi"
awk 'NR > 700 {print} NR <= 700 {a[NR] = $1} END {for (i = 1; i <= 700; i++) print a[i]}' \
  "$t/delay_10ms.txt" >"$out/delay_shift7.txt"
awk '{print $1 + 20}' "$t/delay_10ms.txt" >"$out/delay_plus20.txt"
echo "trace variants written to $out"
