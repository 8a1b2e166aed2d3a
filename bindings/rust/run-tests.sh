#!/usr/bin/env bash
# Everything CI should run for the Rust packages: the tests (unit, integration, doc tests,
# the sys crate's header and layout checks) for each build feature, and clippy with
# -D warnings. Works from any directory; honours CARGO_TARGET_DIR; needs only crates.io
# (or a filled cargo cache). Fails on the first failure.
set -euo pipefail
ws="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
manifest="$ws/Cargo.toml"
start=$SECONDS

run() {
  echo "+ $*"
  "$@"
}

# default build, with the optional allocator-api2 support (covers the sys crate's checks
# and all doc tests)
run cargo test --manifest-path "$manifest" --workspace --exclude mimalloc-compat-bench --features mimalloc-compat/allocator-api2
# the v3 API (the `v3` feature): its modules' tests and doc tests
run cargo test --manifest-path "$manifest" -p mimalloc-compat-sys -p mimalloc-compat --features mimalloc-compat/v3,mimalloc-compat/allocator-api2
# each build variant of the C library: the feature checks and the global-allocator tests
for features in override secure debug; do
  run cargo test --manifest-path "$manifest" -p mimalloc-compat --features "$features" \
    --test build_features --test global_alloc --test profile --lib
  # the v3 API on the same build (a heap shared by threads in the debug and secure builds too)
  run cargo test --manifest-path "$manifest" -p mimalloc-compat-sys -p mimalloc-compat \
    --features "mimalloc-compat/$features mimalloc-compat/v3" --test v3
done
# lints, default and all features (the benchmark crate too, in its default build)
run cargo clippy --manifest-path "$manifest" --workspace --all-targets -- -D warnings
run cargo clippy --manifest-path "$manifest" --workspace --exclude mimalloc-compat-bench --all-targets --all-features -- -D warnings
echo "run-tests.sh: all passed in $((SECONDS - start)) s"
