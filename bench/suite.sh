#!/bin/sh
# SPDX-License-Identifier: MIT
# The allocator benchmark suite: see bench/suite.py (python3 standard library only).
exec python3 "$(dirname "$0")/suite.py" "$@"
