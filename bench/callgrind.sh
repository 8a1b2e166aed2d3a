#!/bin/sh
# SPDX-License-Identifier: MIT
# Instructions per malloc+free pair (16, 64, 256, 1024 bytes) under callgrind; see bench/README.md.
# usage: bench/callgrind.sh [--build-dir DIR] [--quick] [--keep] [--out DIR]
exec python3 "$(dirname "$0")/bench.py" micro --callgrind "$@"
