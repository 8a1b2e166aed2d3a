#!/bin/sh
# SPDX-License-Identifier: MIT
# RSS over time of a server-like program under several allocators; see bench/README.md.
# usage: bench/mem.sh [--build-dir DIR] [--reps N] [--quick] [--out DIR] [--interval-ms MS]
exec python3 "$(dirname "$0")/mem.py" "$@"
