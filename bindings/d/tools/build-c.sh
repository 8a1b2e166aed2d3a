#!/bin/sh
# Builds the C library of this repository for one variant of the D package:
#   build/c/<variant>/mimalloc.o              src/static.c (the whole library, one object)
#   build/c/<variant>/mimalloc-probe.o        c/probe.c (layout/enum values for the tests)
#   build/c/<variant>/mimalloc-probe-v3.o     c/probe_v3.c (the same for the header's v3 mode)
#   build/c/<variant>/libmimalloc-compat.a    the three objects
# Run by dub (preGenerateCommands in dub.sdl) before every build; it does nothing when the
# archive is newer than every C source and header and was built with the same flags.
# Variants: release, override, secure, debug. CC and AR may be set (default cc, ar).
set -eu

variant=${1:?usage: build-c.sh release|override|secure|debug}
pkg=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$pkg/../.." && pwd)
out="$pkg/build/c/$variant"
cc=${CC:-cc}
ar=${AR:-ar}

# the flags of the CMake build (CMakeLists.txt): release-type builds use -O3 -DNDEBUG
common="-std=gnu11 -fvisibility=hidden -ftls-model=initial-exec -fno-builtin-malloc -fno-semantic-interposition -fexceptions -fPIC -Wall -Wextra -Wno-unknown-pragmas"
case "$variant" in
  release)  flags="-O3 -DNDEBUG" ;;
  override) flags="-O3 -DNDEBUG -DMI_MALLOC_OVERRIDE=1" ;;
  secure)   flags="-O3 -DNDEBUG -DMI_SECURE=1" ;;
  debug)    flags="-O1 -g -DMI_DEBUG=2" ;;
  *) echo "build-c.sh: unknown variant '$variant'" >&2; exit 2 ;;
esac
cmd="$cc $common $flags -I$root/include"

if [ ! -f "$root/src/static.c" ]; then
  echo "build-c.sh: $root/src/static.c not found: this package must stay at bindings/d of the repository" >&2
  exit 1
fi

lib="$out/libmimalloc-compat.a"
stamp="$out/flags"
if [ -f "$lib" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$cmd" ] &&
   [ -z "$(find "$root/src" "$root/include" "$pkg/c" "$0" -type f -newer "$lib" 2>/dev/null | head -n 1)" ]; then
  exit 0
fi

mkdir -p "$out"
echo "mimalloc-compat: building the C library ($variant): $cmd -c src/static.c" >&2
$cmd -c "$root/src/static.c" -o "$out/mimalloc.o.tmp"
$cmd -c "$pkg/c/probe.c" -o "$out/mimalloc-probe.o.tmp"
$cmd -c "$pkg/c/probe_v3.c" -o "$out/mimalloc-probe-v3.o.tmp"
mv "$out/mimalloc.o.tmp" "$out/mimalloc.o"
mv "$out/mimalloc-probe.o.tmp" "$out/mimalloc-probe.o"
mv "$out/mimalloc-probe-v3.o.tmp" "$out/mimalloc-probe-v3.o"
rm -f "$lib.tmp"
$ar rcs "$lib.tmp" "$out/mimalloc.o" "$out/mimalloc-probe.o" "$out/mimalloc-probe-v3.o"
mv "$lib.tmp" "$lib"
printf '%s\n' "$cmd" > "$stamp"
