#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs a built mimalloc into a temporary prefix and checks it as its users would see it:
#   (a) the installed files: library symlink chain and SONAME, headers, mimalloc.o, mimalloc.pc,
#       mimalloc-v3.pc, the CMake package files
#   (b) test/install/consumer through find_package(mimalloc 2.1), linking mimalloc (must load
#       the installed shared library) and mimalloc-static; the package's variables
#   (c) find_package with unsuitable versions (1.0, 2.99, 3.99, 4.0, a range without 2.x or
#       3.x's) must fail; with 3.0 (and the range 3.0...3.9) the v3 API answers: version
#       v3_version, and the plain target mimalloc builds v3.c (it defines MI_V3_API); the range
#       2.0...<4 takes v2
#   (d) main.c built with `pkg-config --cflags --libs mimalloc`   (skipped without pkg-config)
#   (e) main.c linked after the installed mimalloc.o (static override)
#   (f) a unit in v3 mode (MI_V3_API: mimalloc-v3.h) linked with the installed library
#   (g) consumer/v3.c, written for mimalloc 3.x, through find_package(mimalloc), linking the
#       targets mimalloc-v3 (the installed shared library) and mimalloc-v3-static: MI_V3_API
#       comes from the target, the source does not define it
#   (h) the same v3.c linking plain mimalloc must fail to compile (on a v3-only name): so (g)
#       and (i) prove that the target and the module carry the definition
#   (i) v3.c built with `pkg-config --cflags --libs mimalloc-v3`; the module's flags are
#       mimalloc's plus -DMI_V3_API; with mimalloc's flags v3.c must not compile
#       (skipped without pkg-config)
#
# usage: run-consumers.sh BUILD_DIR SOURCE_DIR C_COMPILER GENERATOR [--cmake=CMAKE]
#          [--make-program=PROG] [--basename=mimalloc] --version=X.Y.Z --v3-version=X.Y.Z
#          --impl-version=X.Y.Z [--libdir=lib]
#          [--includedir=include] [--override=1|0]
# (ctest passes all of them; see CMakeLists.txt here)
set -euo pipefail

if [ $# -lt 4 ]; then
  sed -n '2,23p' "$0" >&2
  exit 2
fi
build_dir=$1 source_dir=$2 cc=$3 generator=$4
shift 4
cmake=cmake make_program="" basename=mimalloc version="" libdir=lib includedir=include override=1
for arg in "$@"; do
  case $arg in
    --cmake=*)        cmake=${arg#*=} ;;
    --make-program=*) make_program=${arg#*=} ;;
    --basename=*)     basename=${arg#*=} ;;
    --version=*)      version=${arg#*=} ;;
    --impl-version=*) impl_version=${arg#*=} ;;
    --v3-version=*)   v3_version=${arg#*=} ;;
    --libdir=*)       libdir=${arg#*=} ;;
    --includedir=*)   includedir=${arg#*=} ;;
    --override=*)     override=${arg#*=} ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done
[ -n "$version" ] || { echo "--version=X.Y.Z is required" >&2; exit 2; }
[ -n "${impl_version:-}" ] || { echo "--impl-version=X.Y.Z is required" >&2; exit 2; }
[ -n "${v3_version:-}" ] || { echo "--v3-version=X.Y.Z is required" >&2; exit 2; }
IFS=. read -r major minor patch <<<"$version"
numeric_version=$((major * 10000 + minor * 100 + patch))   # as MI_MALLOC_VERSION / mi_version()

consumer_src=$source_dir/test/install/consumer
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mimalloc-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
tmp=$(cd "$tmp" && pwd -P)   # /proc/self/maps shows resolved paths
prefix=$tmp/prefix
lib=$prefix/$libdir
inc=$prefix/$includedir
# the programs must find the installed library by their own means, nothing else
unset LD_LIBRARY_PATH LD_PRELOAD

trap 'echo "FAIL: line $LINENO: $BASH_COMMAND" >&2' ERR   # set -e stops without a word
step() { echo; echo "==> $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
ok()   { echo "ok: $*"; }

# runs a built consumer; $2 is the library it must have mapped ("none" when linked statically)
run_consumer() {
  local program=$1 expect_mapped=$2 out
  echo "\$ $program $override"
  local rc=0
  out=$("$program" "$override") || rc=$?
  echo "$out"
  [ "$rc" -eq 0 ] || fail "$program exited with status $rc"
  grep -qx "mimalloc version: $numeric_version" <<<"$out" || fail "$program: version is not $numeric_version"
  grep -qxF "mapped library: $expect_mapped" <<<"$out" || fail "$program: expected mapped library $expect_mapped"
}

cmake_generator_args=(-G "$generator" -DCMAKE_C_COMPILER="$cc")
if [ -n "$make_program" ]; then cmake_generator_args+=(-DCMAKE_MAKE_PROGRAM="$make_program"); fi

# ---- (a) install and the installed files
step "(a) $cmake --install $build_dir --prefix $prefix"
"$cmake" --install "$build_dir" --prefix "$prefix"

so=lib$basename.so
[ -L "$lib/$so" ] && [ "$(readlink "$lib/$so")" = "$so.$major" ] || fail "$lib/$so is not a symlink to $so.$major"
[ -L "$lib/$so.$major" ] && [ "$(readlink "$lib/$so.$major")" = "$so.$version" ] \
  || fail "$lib/$so.$major is not a symlink to $so.$version"
[ -f "$lib/$so.$version" ] && [ ! -L "$lib/$so.$version" ] || fail "$lib/$so.$version is not a regular file"
ok "symlink chain $so -> $so.$major -> $so.$version"

if command -v readelf >/dev/null; then
  dynamic=$(readelf -d "$lib/$so.$version")
  grep -qF "Library soname: [$so.$major]" <<<"$dynamic" || { echo "$dynamic"; fail "SONAME is not $so.$major"; }
  ok "SONAME $so.$major"
  # the build tree's rpath must not survive the install
  if grep -E '\((RPATH|RUNPATH)\)' <<<"$dynamic" | grep -qF "$build_dir"; then
    fail "installed library still has an rpath into the build directory"
  fi
else
  echo "SKIP: readelf not found (package binutils), SONAME not checked"
fi

for file in "$inc/mimalloc.h" "$inc/mimalloc-override.h" "$inc/mimalloc-new-delete.h" \
            "$inc/mimalloc-stats.h" "$inc/mimalloc-v3.h" "$lib/lib$basename.a" "$lib/$basename.o" \
            "$lib/pkgconfig/mimalloc.pc" "$lib/pkgconfig/mimalloc-v3.pc" \
            "$lib/cmake/mimalloc/mimalloc-config.cmake" \
            "$lib/cmake/mimalloc/mimalloc-config-version.cmake" \
            "$lib/cmake/mimalloc/mimalloc-targets.cmake"; do
  [ -f "$file" ] || fail "not installed: $file"
done
ok "headers, lib$basename.a, $basename.o, mimalloc.pc, mimalloc-v3.pc and the package files are installed"
# nothing of the build's internals: no object library, no compiled objects besides mimalloc.o
if find "$prefix" \( -name '*.c.o' -o -name '*.cpp.o' -o -name '*mimalloc-obj*' \) | grep .; then
  fail "build internals were installed"
fi
ok "no object-library files installed"

# ---- (b) find_package consumers
for target in mimalloc mimalloc-static; do
  step "(b) consumer linking $target through find_package(mimalloc 2.1 REQUIRED)"
  dir=$tmp/consumer-$target
  "$cmake" -S "$consumer_src" -B "$dir" "${cmake_generator_args[@]}" \
    -DCMAKE_PREFIX_PATH="$prefix" -DMI_TARGET="$target" | tee "$tmp/configure.log"
  # a system-wide mimalloc package must not have been taken instead
  grep -qxF -- "-- mimalloc_DIR=$lib/cmake/mimalloc" "$tmp/configure.log" \
    || fail "find_package did not find the package in $prefix"
  grep -qxF -- "-- mimalloc_VERSION=$version" "$tmp/configure.log" || fail "package version is not $version"
  grep -qxF -- "-- MIMALLOC_IMPLEMENTATION_VERSION=$impl_version" "$tmp/configure.log" \
    || fail "MIMALLOC_IMPLEMENTATION_VERSION is not $impl_version"
  # upstream's variable: mimalloc-<major>.<minor>, never empty
  grep -qxF -- "-- MIMALLOC_VERSION_DIR=mimalloc-$major.$minor" "$tmp/configure.log" \
    || fail "MIMALLOC_VERSION_DIR is not mimalloc-$major.$minor"
  "$cmake" --build "$dir"
  if [ "$target" = mimalloc ]; then
    run_consumer "$dir/consumer" "$lib/$so.$version"
  else
    run_consumer "$dir/consumer" none
  fi
done

# ---- (c) unsuitable versions: a configure that must fail, for the version and nothing else
IFS=. read -r v3_major v3_minor _ <<<"$v3_version"
for wanted in 1.0 "$major.99" "$v3_major.99" 4.0 "1.0...<2.0"; do
  step "(c) find_package(mimalloc $wanted REQUIRED) must fail"
  dir=$tmp/consumer-version-$wanted
  if "$cmake" -S "$consumer_src" -B "$dir" "${cmake_generator_args[@]}" \
       -DCMAKE_PREFIX_PATH="$prefix" -DMI_REQUIRE_VERSION="$wanted" >"$tmp/configure.log" 2>&1; then
    cat "$tmp/configure.log"
    fail "find_package(mimalloc $wanted) succeeded"
  fi
  grep -qF "$lib/cmake/mimalloc/mimalloc-config.cmake, version: $version" "$tmp/configure.log" \
    || { cat "$tmp/configure.log"; fail "configure failed, but not by rejecting version $version"; }
  ok "version $version of $prefix rejected for $wanted"
done

# a request for 3.x is answered by the v3 API: a project written for mimalloc 3 that links the
# plain target gets MI_V3_API from it (v3.c compiles only so); a range with 2.x in it takes v2
for request in "$v3_major.0 $v3_version v3" "$v3_major.0...$v3_major.9 $v3_version v3" "2.0...<5 $version main"; do
  read -r wanted answer consumer <<<"$request"   # what is asked, the version that answers, the program
  step "(c) find_package(mimalloc $wanted REQUIRED) linking mimalloc: version $answer, $consumer.c"
  dir=$tmp/consumer-request-${wanted//[.<]/_}
  "$cmake" -S "$consumer_src" -B "$dir" "${cmake_generator_args[@]}" -DCMAKE_PREFIX_PATH="$prefix" \
    -DMI_REQUIRE_VERSION="$wanted" -DMI_TARGET=mimalloc -DMI_CONSUMER=$consumer | tee "$tmp/configure.log"
  grep -qxF -- "-- mimalloc_VERSION=$answer" "$tmp/configure.log" || fail "package version is not $answer for $wanted"
  IFS=. read -r a_major a_minor _ <<<"$answer"
  grep -qxF -- "-- MIMALLOC_VERSION_DIR=mimalloc-$a_major.$a_minor" "$tmp/configure.log" \
    || fail "MIMALLOC_VERSION_DIR is not mimalloc-$a_major.$a_minor for $wanted"
  "$cmake" --build "$dir"
  run_consumer "$dir/consumer" "$lib/$so.$version"
  ok "find_package(mimalloc $wanted): version $answer, plain mimalloc builds and runs $consumer.c"
done

# ---- (d) pkg-config
step "(d) pkg-config consumer"
if command -v pkg-config >/dev/null; then
  export PKG_CONFIG_PATH=$lib/pkgconfig
  pc_version=$(pkg-config --modversion mimalloc)
  [ "$pc_version" = "$version" ] || fail "pkg-config --modversion mimalloc: $pc_version, expected $version"
  pc_impl=$(pkg-config --variable=implementation_version mimalloc)
  [ "$pc_impl" = "$impl_version" ] || fail "pkg-config --variable=implementation_version: '$pc_impl', expected $impl_version"
  flags=$(pkg-config --cflags --libs mimalloc)
  echo "pkg-config --cflags --libs mimalloc: $flags"
  # the .pc file locates the prefix relative to itself (${pcfiledir}/../..): compare resolved dirs
  found_inc="" found_lib=""
  for word in $flags; do
    case $word in
      -I*) found_inc=$(cd "${word#-I}" && pwd -P) ;;
      -L*) found_lib=$(cd "${word#-L}" && pwd -P) ;;
    esac
  done
  [ "$found_inc" = "$inc" ] && [ "$found_lib" = "$lib" ] && grep -qw -- "-l$basename" <<<"$flags" \
    || fail "pkg-config flags do not name $inc, $lib and -l$basename"
  grep -qw -- -lpthread <<<"$(pkg-config --static --libs mimalloc)" || fail "pkg-config --static lacks -lpthread"
  # $flags is a list of words on purpose
  # shellcheck disable=SC2086
  # nothing but the flags: they carry an rpath, so the consumer runs this library and not
  # another libmimalloc.so.2 of the loader's path (Debian's mimalloc, in CI)
  (set -x; "$cc" -o "$tmp/pc-consumer" "$consumer_src/main.c" $flags)
  run_consumer "$tmp/pc-consumer" "$lib/$so.$version"
else
  echo "SKIP: pkg-config not found (package pkg-config or pkgconf), pkg-config consumer not tested"
fi

# ---- (e) the single object linked first
step "(e) consumer linked after $basename.o"
(set -x; "$cc" -o "$tmp/object-consumer" "$lib/$basename.o" "$consumer_src/main.c" -I"$inc" -lpthread)
run_consumer "$tmp/object-consumer" none

# ---- (f) v3 mode: mimalloc.h includes mimalloc-v3.h from the installed directory
step "(f) v3-mode consumer"
cat >"$tmp/v3.c" <<'V3'
#define MI_V3_API
#include <mimalloc.h>
#include <mimalloc-stats.h>
int main(void) {
  mi_heap_t* heap = mi_heap_new();                 /* v3: a heap any thread may use */
  mi_theap_t* theap = mi_heap_theap(heap);         /* declared in v3 mode only */
  int* p = mi_heap_malloc_tp(int, heap);           /* v3's argument order */
  int ok = (heap != NULL && theap != NULL && p != NULL && mi_heap_contains(heap, p)
            && mi_option_get(mi_option_arena_is_numa_local) >= 0);
  mi_free(p);
  mi_heap_delete(heap);
  return ok ? 0 : 1;
}
V3
(set -x; "$cc" -std=c11 -Wall -Werror -o "$tmp/v3-consumer" "$tmp/v3.c" -I"$inc" -L"$lib" -l"$basename" -Wl,-rpath,"$lib")
"$tmp/v3-consumer" || fail "the v3-mode consumer failed"

# ---- (g) mimalloc 3's API through the package's v3 targets
# find_package without a version (which answers with the v2 API's version): the v3 targets carry
# MI_V3_API whatever was asked (find_package(mimalloc 3.x) and the plain target: step c)
for target in mimalloc-v3 mimalloc-v3-static; do
  step "(g) v3 consumer (v3.c) linking $target through find_package(mimalloc REQUIRED)"
  dir=$tmp/consumer-$target
  "$cmake" -S "$consumer_src" -B "$dir" "${cmake_generator_args[@]}" \
    -DCMAKE_PREFIX_PATH="$prefix" -DMI_REQUIRE_VERSION= -DMI_TARGET="$target" -DMI_CONSUMER=v3 \
    | tee "$tmp/configure.log"
  grep -qxF -- "-- mimalloc_DIR=$lib/cmake/mimalloc" "$tmp/configure.log" \
    || fail "find_package did not find the package in $prefix"
  "$cmake" --build "$dir"
  if [ "$target" = mimalloc-v3 ]; then
    run_consumer "$dir/consumer" "$lib/$so.$version"
  else
    run_consumer "$dir/consumer" none
  fi
done

# a v3 program compiled without MI_V3_API fails on this v3-only name (v2 mode has no such
# option); the failures below must be that one, not some other error
v3_only_name=mi_option_page_reclaim_on_free

# ---- (h) the same source with the plain target: no MI_V3_API, so it must not compile
step "(h) v3 consumer (v3.c) linking plain mimalloc must not compile"
dir=$tmp/consumer-v3-plain
"$cmake" -S "$consumer_src" -B "$dir" "${cmake_generator_args[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" -DMI_REQUIRE_VERSION= -DMI_TARGET=mimalloc -DMI_CONSUMER=v3 >"$tmp/configure.log" \
  || { cat "$tmp/configure.log"; fail "configure of the plain-mimalloc v3 consumer failed"; }
if "$cmake" --build "$dir" >"$tmp/build.log" 2>&1; then
  cat "$tmp/build.log"
  fail "v3.c compiled against plain mimalloc: it does not show where MI_V3_API comes from"
fi
grep -qF "$v3_only_name" "$tmp/build.log" || { cat "$tmp/build.log"; fail "the build failed, but not on $v3_only_name"; }
ok "v3.c does not compile against plain mimalloc ($v3_only_name undeclared)"

# ---- (i) pkg-config module mimalloc-v3
step "(i) pkg-config consumer of mimalloc-v3"
if command -v pkg-config >/dev/null; then
  export PKG_CONFIG_PATH=$lib/pkgconfig
  pc_version=$(pkg-config --modversion mimalloc-v3)
  [ "$pc_version" = "$v3_version" ] || fail "pkg-config --modversion mimalloc-v3: $pc_version, expected $v3_version"
  pkg-config --atleast-version="$v3_major.0" mimalloc-v3 || fail "pkg-config --atleast-version=$v3_major.0 mimalloc-v3 refused"
  pc_impl=$(pkg-config --variable=implementation_version mimalloc-v3)
  [ "$pc_impl" = "$impl_version" ] || fail "mimalloc-v3 implementation_version: '$pc_impl', expected $impl_version"
  # the same library and directories as mimalloc.pc (checked in d), and the definition besides
  # (pc_words: pkg-config's output as words, single spaces, no trailing blank)
  # shellcheck disable=SC2046,SC2048,SC2086
  pc_words() { echo $(pkg-config $*); }
  for how in --libs "--static --libs"; do
    [ "$(pc_words $how mimalloc-v3)" = "$(pc_words $how mimalloc)" ] \
      || fail "pkg-config $how: mimalloc-v3 '$(pc_words $how mimalloc-v3)', mimalloc '$(pc_words $how mimalloc)'"
  done
  [ "$(pc_words --cflags mimalloc-v3)" = "$(pc_words --cflags mimalloc) -DMI_V3_API" ] \
    || fail "pkg-config --cflags mimalloc-v3 is '$(pc_words --cflags mimalloc-v3)', not mimalloc's and -DMI_V3_API"
  ok "mimalloc-v3.pc: mimalloc.pc's flags (-l$basename) and -DMI_V3_API"
  flags=$(pkg-config --cflags --libs mimalloc-v3)
  echo "pkg-config --cflags --libs mimalloc-v3: $flags"
  # besides the module's flags only -pthread, for v3.c's own threads
  # shellcheck disable=SC2086
  (set -x; "$cc" -std=c11 -Wall -Wextra -Werror -o "$tmp/pc-v3-consumer" "$consumer_src/v3.c" $flags -pthread)
  run_consumer "$tmp/pc-v3-consumer" "$lib/$so.$version"
  # shellcheck disable=SC2046
  if "$cc" -std=c11 -c -o "$tmp/pc-v3-plain.o" "$consumer_src/v3.c" $(pkg-config --cflags mimalloc) >"$tmp/build.log" 2>&1; then
    fail "v3.c compiled with \`pkg-config --cflags mimalloc\`: it does not show where MI_V3_API comes from"
  fi
  grep -qF "$v3_only_name" "$tmp/build.log" || { cat "$tmp/build.log"; fail "the compile failed, but not on $v3_only_name"; }
  ok "v3.c does not compile with mimalloc's flags ($v3_only_name undeclared)"
else
  echo "SKIP: pkg-config not found (package pkg-config or pkgconf), mimalloc-v3 pkg-config consumer not tested"
fi

echo
echo "all install checks passed"
