#!/bin/sh
# SPDX-License-Identifier: MIT
# Kept for old command lines: the same as `python3 bench/bench.py micro` (see bench/README.md).
exec python3 "$(dirname "$0")/bench.py" micro "$@"
