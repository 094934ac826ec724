#!/bin/bash
# Runs one cargo-fuzz target for SECONDS at the lowest CPU priority and prints one summary line
# (runs, coverage edges, corpus size, crashes). Build first, as fuzz/README.md says (stable
# toolchain: `cargo build --release --target x86_64-unknown-linux-gnu` with the sancov RUSTFLAGS;
# or `cargo +nightly fuzz build`).
#
#   fuzz/run.sh TARGET SECONDS [SEED_DIR]
#
# The corpus is fuzz/corpus/TARGET (kept between runs), seeded on first use from the
# repository's own files (configs, profiles, traces) and from SEED_DIR/TARGET if given; the
# libFuzzer log goes to fuzz/logs/TARGET.log, crashes to fuzz/artifacts/TARGET/.
set -euo pipefail
cd "$(dirname "$0")"
target=${1:?usage: run.sh TARGET SECONDS [SEED_DIR]}
secs=${2:?usage: run.sh TARGET SECONDS [SEED_DIR]}
seeds=${3:-}
bin=target/x86_64-unknown-linux-gnu/release/$target
[ -x "$bin" ] || { echo "$bin missing: build the targets first (fuzz/README.md)" >&2; exit 2; }

case $target in
    config_parse) max_len=4096 ;;
    owd_chunk_parse) max_len=40000 ;;
    pcap_owd) max_len=8192 ;;
    tunnel_decapsulate | tunnel_session) max_len=2048 ;;
    link_trace_parse | link_profile_parse) max_len=4096 ;;
    ebpf_window_rewrite) max_len=256 ;;
    metrics_request) max_len=4096 ;;
    *) max_len=4096 ;;
esac

corpus=corpus/$target
mkdir -p "$corpus" logs "artifacts/$target"
if [ -z "$(ls -A "$corpus")" ]; then
    case $target in
        config_parse) cp ../configs/*.conf "$corpus/" ;;
        link_profile_parse) cp ../configs/profiles/*.toml "$corpus/" ;;
        link_trace_parse)
            head -c 3000 ../traces/leocc-example/bw.mahimahi >"$corpus/bw"
            head -c 3000 ../traces/leocc-example/delay_10ms.txt >"$corpus/delay"
            ;;
    esac
    if [ -n "$seeds" ] && [ -d "$seeds/$target" ]; then
        cp "$seeds/$target"/* "$corpus/"
    fi
fi

log=logs/$target.log
start=$(date +%s)
status=0
chrt --idle 0 nice -n 19 "$bin" "$corpus" -max_total_time="$secs" -max_len="$max_len" \
    -print_final_stats=1 -artifact_prefix="artifacts/$target/" >"$log" 2>&1 || status=$?
took=$(($(date +%s) - start))
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
edges=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
units=$(grep -o 'corp: [0-9]*/[0-9a-zA-Z]*' "$log" | tail -n 1 | cut -d' ' -f2)
crashes=$(find "artifacts/$target" -type f | wc -l)
echo "$target: ${took}s, ${runs:-?} runs, ${edges:-?} edges, corpus ${units:-?} units (libFuzzer's count/bytes; $(ls "$corpus" | wc -l) files), $crashes crash artifacts, exit $status"
