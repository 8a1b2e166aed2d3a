#!/bin/sh
# SPDX-License-Identifier: MIT
# macOS compile and link check, without a Mac: Zig's C compiler (PyPI package ziglang) bundles
# the macOS libc headers and a libSystem link stub. For aarch64-macos and x86_64-macos (in
# parallel, one log each):
#   1. every src/*.c on its own (but the Windows override files), -Wall -Wextra -Werror (the library is built as src/static.c),
#      and src/static.c as the debug and the secure build;
#   2. src/static.c and src/new-handler.cpp with the library's flags, -Werror; the dylib, the
#      archive, test-api and test-stress against each, and a one-source program
#      (cc examples/demo.c src/static.c): every symbol must resolve;
#   3. the CMake build with a Darwin toolchain file: libraries, mimalloc.o, demo, the C test
#      programs, and test-api-cpp compiled (not linked: it needs a whole C++ library).
# Nothing runs: the outputs are Mach-O files (checked with `file`). `-lc++` links a stub of the
# system libc++'s interface (test/macos/libc++.tbd) instead of Zig's own copy of libc++.
# usage: test/macos-check.sh [aarch64|x86_64]...      (both by default; installs nothing)
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
out=${MI_MACOS_CHECK_DIR:-$root/build-macos-check}   # in the tree (ignored), as build-windows: one per clone
targets=${*:-"aarch64 x86_64"}

if ! python3 -m ziglang version >/dev/null 2>&1; then
  echo "macos-check: Zig's C compiler is needed: pip install ziglang" >&2
  exit 2
fi
for tool in file cmake ninja; do
  if ! command -v $tool >/dev/null 2>&1; then
    echo "macos-check: '$tool' is needed (Debian: apt-get install $tool)" >&2
    exit 2
  fi
done
for arch in $targets; do
  case $arch in aarch64|x86_64) ;; *) echo "macos-check: unknown target $arch (aarch64 or x86_64)" >&2; exit 2 ;; esac
done

now() { date +%s; }
fail() { echo "FAILED: $*"; exit 1; }
# expect FILE ARCH-WORD KIND: `file` says Mach-O, the architecture and the kind
expect() {
  desc=$(file -b "$1")
  case "$desc" in
    *Mach-O*"$2"*"$3"*) echo "    $(basename "$1"): $(echo "$desc" | cut -d, -f1)" ;;
    *) fail "$1 is not a Mach-O $2 $3: $desc" ;;
  esac
}

check_target() {   # arch: runs in a subshell, output to its log
  arch=$1
  case $arch in aarch64) word=arm64 ;; x86_64) word=x86_64 ;; esac
  t=$arch-macos
  o=$out/$t
  mkdir -p "$o/files"
  start=$(now)
  echo "== $t"

  # compiler wrappers (CMake wants one program per tool): -lc++ becomes the stub, and the C++
  # driver links without Zig's libc++ (building that takes minutes; CMake's compiler probe
  # links a C++ program)
  for lang in cc c++; do
    nolib=; [ $lang = c++ ] && nolib=-nostdlib++
    cat > "$o/zig-$lang" <<EOF
#!/bin/sh
link=$nolib
for a in "\$@"; do
  shift
  case "\$a" in -c) link= ;; esac
  if [ "\$a" = -lc++ ]; then set -- "\$@" "$root/test/macos/libc++.tbd"; else set -- "\$@" "\$a"; fi
done
exec python3 -m ziglang $lang -target $t \$link "\$@"
EOF
  done
  for tool in ar ranlib; do
    printf '#!/bin/sh\nexec python3 -m ziglang %s "$@"\n' $tool > "$o/zig-$tool"
  done
  chmod +x "$o"/zig-*
  cc="$o/zig-cc"; cxx="$o/zig-c++"
  cflags="-std=gnu11 -O2 -Wall -Wextra -Werror -Wno-unknown-pragmas -I$root/include"

  # 1. each file on its own
  n=0
  for f in "$root"/src/*.c "$root"/src/prim/unix.c; do
    case $f in */static.c|*/override.c|*/override-windows.c|*/redirect-windows.c) continue ;; esac   # the unit itself; overrides: not on macOS (the Windows ones: Windows only)
    "$cc" $cflags -c "$f" -o "$o/files/$(basename "$f" .c).o" || fail "$t: $f"
    n=$((n + 1))
  done
  echo "  $n source files compile on their own (-Werror): $(($(now) - start)) s"
  # the debug and secure builds' code paths (as CMake defines them)
  step=$(now)
  "$cc" $cflags -DMI_DEBUG=2 -DMI_DEBUG_TRACE_CALLER=1 -fno-omit-frame-pointer -c "$root/src/static.c" -o "$o/static-debug.o" \
    || fail "$t: src/static.c, debug build"
  "$cc" $cflags -DMI_SECURE=1 -c "$root/src/static.c" -o "$o/static-secure.o" || fail "$t: src/static.c, secure build"
  echo "  debug and secure builds compile (-Werror): $(($(now) - step)) s"

  # 2. the library by hand, and programs linked against it
  step=$(now)
  "$cc" $cflags -fvisibility=hidden -ftls-model=initial-exec -fno-builtin-malloc -fexceptions \
        -c "$root/src/static.c" -o "$o/static.o" || fail "$t: src/static.c"
  "$cxx" -std=c++17 -O2 -Wall -Wextra -Werror -fvisibility=hidden \
        -c "$root/src/new-handler.cpp" -o "$o/new-handler.o" || fail "$t: src/new-handler.cpp"
  "$cc" -dynamiclib -install_name @rpath/libmimalloc.2.dylib -o "$o/libmimalloc.dylib" \
        "$o/static.o" "$o/new-handler.o" -lc++ || fail "$t: libmimalloc.dylib"
  python3 -m ziglang ar rcs "$o/libmimalloc.a" "$o/static.o" "$o/new-handler.o"
  for p in test-api test-stress; do
    "$cc" -O2 -I"$root/include" -o "$o/$p-dynamic" "$root/test/$p.c" -L"$o" -lmimalloc || fail "$t: $p (dylib)"
    "$cc" -O2 -I"$root/include" -o "$o/$p-static" "$root/test/$p.c" "$o/libmimalloc.a" -lc++ || fail "$t: $p (archive)"
  done
  "$cc" -O2 -I"$root/include" -o "$o/demo-one-source" "$root/examples/demo.c" "$root/src/static.c" -lc++ \
    || fail "$t: examples/demo.c src/static.c"
  echo "  library (-Werror) and programs linked: $(($(now) - step)) s"
  expect "$o/static.o" "$word" object
  expect "$o/libmimalloc.dylib" "$word" "dynamically linked shared library"
  for p in test-api-dynamic test-api-static test-stress-dynamic test-stress-static demo-one-source; do
    expect "$o/$p" "$word" executable
  done

  # 3. the CMake build
  step=$(now)
  cat > "$o/toolchain.cmake" <<EOF
set(CMAKE_SYSTEM_NAME Darwin)
set(CMAKE_SYSTEM_PROCESSOR $word)
set(CMAKE_C_COMPILER "$cc")
set(CMAKE_CXX_COMPILER "$cxx")
set(CMAKE_AR "$o/zig-ar")
set(CMAKE_RANLIB "$o/zig-ranlib")
EOF
  cmake -S "$root" -B "$o/cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_TOOLCHAIN_FILE="$o/toolchain.cmake" > "$o/cmake.log" 2>&1 \
    || { cat "$o/cmake.log"; fail "$t: cmake configure"; }
  ninja -C "$o/cmake" mimalloc mimalloc-static mimalloc-single-object mimalloc-demo \
        test-api test-api-static test-stress test-model \
        test/CMakeFiles/test-api-cpp.dir/test-api-cpp.cpp.o \
        test/CMakeFiles/test-api-cpp.dir/test-api-cpp-include.cpp.o > "$o/ninja.log" 2>&1 \
    || { tail -40 "$o/ninja.log"; fail "$t: cmake build"; }
  echo "  CMake build: $(($(now) - step)) s"
  expect "$(ls "$o"/cmake/libmimalloc.*.*.*.dylib)" "$word" "dynamically linked shared library"
  expect "$o/cmake/mimalloc.o" "$word" object
  expect "$o/cmake/test/CMakeFiles/test-api-cpp.dir/test-api-cpp.cpp.o" "$word" object
  for p in mimalloc-demo test/test-api test/test-api-static test/test-stress test/test-model; do
    expect "$o/cmake/$p" "$word" executable
  done
  echo "  $t: $(($(now) - start)) s"
}

echo "macos-check: zig $(python3 -m ziglang version), output in $out"
rm -rf "$out"
mkdir -p "$out"
all_start=$(now)
pids=""
for arch in $targets; do
  mkdir -p "$out/$arch-macos"
  ( check_target "$arch" ) > "$out/$arch-macos.log" 2>&1 &
  pids="$pids $!"
done
status=0
for pid in $pids; do wait "$pid" || status=1; done
for arch in $targets; do cat "$out/$arch-macos.log"; done
if [ $status -ne 0 ]; then
  echo "macos-check: FAILED (logs above)" >&2
  exit 1
fi
echo "macos-check: all targets compiled and linked in $(($(now) - all_start)) s (not run: no macOS here)"
