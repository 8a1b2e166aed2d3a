#!/bin/sh
# SPDX-License-Identifier: MIT
# Throughput comparison of allocators; see bench/README.md.
# usage: bench/run.sh [--build-dir DIR] [--reps N] [--quick] [--keep] [--out DIR]
exec python3 "$(dirname "$0")/run.py" "$@"
