#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Windows suite (test/windows.sh: mingw-w64 and Wine) on the secure build (-DMI_SECURE=ON):
# its guard pages, encoded free lists and checked frees take Windows' own OS calls
# (VirtualProtect, RtlGenRandom), which no Linux suite runs.
# Usage: test/windows-secure.sh [build-dir]   (default: build-windows-secure in the source tree)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
MI_WINDOWS_CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Release -DMI_SECURE=ON" \
  exec bash "$root/test/windows.sh" "${1:-$root/build-windows-secure}"
