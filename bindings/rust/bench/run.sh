#!/usr/bin/env bash
# Builds the benchmark once per allocator (system, ours, the crates.io mimalloc crate) and
# runs them interleaved: REPS rounds, each running every binary once (default 5). Prints the
# median time of each workload per allocator and the ratio to ours.
# Usage: bash bindings/rust/bench/run.sh [REPS]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ws="$(dirname "$here")"
reps="${1:-5}"
target="${CARGO_TARGET_DIR:-$ws/target}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
declare -A feats=([system]="" [ours]="--features ours" [mimalloc-crate]="--features registry" [mimalloc-crate-v2]="--features registry-v2")
order=(system ours mimalloc-crate mimalloc-crate-v2)
for a in "${order[@]}"; do
  echo "+ cargo build --release --manifest-path $ws/Cargo.toml -p mimalloc-compat-bench ${feats[$a]}" >&2
  # shellcheck disable=SC2086
  cargo build -q --release --manifest-path "$ws/Cargo.toml" -p mimalloc-compat-bench ${feats[$a]}
  cp "$target/release/alloc-bench" "$out/alloc-bench-$a"
done
for ((r = 1; r <= reps; r++)); do
  for a in "${order[@]}"; do "$out/alloc-bench-$a" 1 >> "$out/results"; done
done
python3 - "$out/results" <<'PY'
import sys, statistics, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    a, w, ms = line.split()
    rows[(w, a)].append(float(ms))
workloads = sorted({w for w, _ in rows})
allocs = ["system", "ours", "mimalloc-crate", "mimalloc-crate-v2"]
print(f"| workload | " + " | ".join(f"{a} (ms)" for a in allocs) + " | " + " | ".join(f"{a}/ours" for a in allocs if a != "ours") + " |")
print("|---" * (1 + 2 * len(allocs) - 1) + "|")
for w in workloads:
    med = {a: statistics.median(rows[(w, a)]) for a in allocs}
    print(f"| {w} | " + " | ".join(f"{med[a]:.1f}" for a in allocs) + " | " + " | ".join(f"{med[a] / med['ours']:.2f}" for a in allocs if a != "ours") + " |")
print(f"(medians of {len(rows[(workloads[0], 'ours')])} interleaved runs)")
PY
