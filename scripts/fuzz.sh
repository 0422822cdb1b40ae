#!/usr/bin/env bash
# The long fuzz runs of both HTTP/1 parsers (docs/FUZZING.md): release build, stable Rust.
#   scripts/fuzz.sh [INPUTS [SEED [FROM]]]   default 10,000,000 inputs per parser from index 0, seed 1
# Prints, per parser, the inputs run, the reference's verdicts, parser calls and the time.
# A failure names the input's seed and index and prints it as a byte string; replay it alone
# with `scripts/fuzz.sh 1 SEED INDEX`. A named run that does not exist (a test moved) fails the
# script rather than passing with nothing run.
set -euo pipefail
cd "$(dirname "$0")/.."
export STRAIN_FUZZ_INPUTS="${1:-10000000}"
export STRAIN_FUZZ_SEED="${2:-1}"
export STRAIN_FUZZ_FROM="${3:-0}"
runs=(
    http::fuzz::response::response_parser_long_run
    origin::requests::fuzz::request_parser_long_run
)
for run in "${runs[@]}"; do
    out=$(cargo test --release --quiet --lib "$run" -- --ignored --exact --nocapture 2>&1) || {
        printf '%s\n' "$out"
        exit 1
    }
    printf '%s\n' "$out" | grep -v '^$\|^\.$\|^running \|^test result\|^test .* ok$' || true
    if ! printf '%s\n' "$out" | grep -q '^test result: ok\. 1 passed'; then
        echo "fuzz.sh: $run did not run (no such test?)" >&2
        exit 1
    fi
done
