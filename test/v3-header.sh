#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The programs this repository writes against mimalloc 3.x's API must use nothing but that API:
# compile them against mimalloc 3.x's own headers (the v3 tree bundled in the crates.io crate
# libmimalloc-sys, fetched into ~/.cache/alloc-bench/ by bench/benchlib/crates.py, never into the
# repository). Our header compiles them in every build (ctest api-v3-mode, api-v3-mode-cpp,
# stats-v3, failinject-numa); this checks the other side. A control program that uses a name of
# ours alone must fail to compile there, so the check is known to read v3's headers.
# Without network access (and no cached crate) it is skipped; with MI_TEST_REQUIRE_ALL=1 it fails.
# usage: test/v3-header.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cc=${CC:-cc} cxx=${CXX:-c++}

inc=$(cd "$root/bench" && python3 - <<'EOF'
import sys, types
from benchlib import crates, peers
try:
    version, src = crates.crate_source("libmimalloc-sys", types.SimpleNamespace(no_install=False))
except Exception as e:  # noqa: BLE001 (network or cache: reported, then skipped or failed below)
    print("cannot fetch libmimalloc-sys: %s" % e, file=sys.stderr)
    sys.exit(0)
trees = peers.mimalloc_trees(src)
if 3 in trees:
    tree, mv = trees[3]
    print(tree + "/include")
    print("libmimalloc-sys %s carries mimalloc %s" % (version, mv), file=sys.stderr)
EOF
)
if [ -z "$inc" ] || [ ! -f "$inc/mimalloc.h" ]; then
  if [ "${MI_TEST_REQUIRE_ALL:-0}" = 1 ]; then echo "FAIL: no mimalloc 3.x header to compile against"; exit 1; fi
  echo "SKIP: no mimalloc 3.x header (crates.io not reachable and nothing cached)"
  exit 0
fi
grep -q '#define MI_MALLOC_VERSION *3' "$inc/mimalloc.h" || { echo "FAIL: $inc/mimalloc.h is not mimalloc 3.x's"; exit 1; }

fail=0
check() {   # compiler, standard, file, flags...: must compile against v3's headers alone, without
            # warnings of its own (theirs are system headers: 3.3.2's STL allocator trips -Wextra)
  local comp=$1 std=$2 file=$3
  shift 3
  if "$comp" "-std=$std" -fsyntax-only -Wall -Wextra -Werror "$@" -isystem "$inc" -I"$root/test" "$root/$file"; then
    echo "ok    $file"
  else
    echo "FAIL  $file does not compile against mimalloc 3.x's headers"; fail=1
  fi
}
# (each defines MI_V3_API itself or through CMake; v3's header ignores it)
check "$cc"  gnu11 test/test-api-v3-mode.c -DMI_V3_API
check "$cc"  gnu11 test/test-stats-v3.c -DMI_V3_API
check "$cc"  gnu11 test/failinject/fi-numa.c
check "$cxx" c++17 test/test-api-v3-mode-cpp.cpp -DMI_V3_API

# the control: a name of ours alone
control=$(mktemp -d)
trap 'rm -rf "$control"' EXIT
printf '#include <mimalloc.h>\nint main(void) { return mi_heap_new_shared() != 0; }\n' >"$control/ours.c"
if "$cc" -std=gnu11 -fsyntax-only -Werror=implicit-function-declaration -I"$inc" "$control/ours.c" 2>/dev/null; then
  echo "FAIL  the control program (mi_heap_new_shared, ours alone) compiled: not v3's header"; fail=1
else
  echo "ok    control: a name of ours alone does not compile against v3's header"
fi
[ $fail = 0 ] && echo "v3-header: all passed"
exit $fail
