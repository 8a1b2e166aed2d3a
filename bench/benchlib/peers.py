# SPDX-License-Identifier: MIT
"""The peer allocators of the benchmark suite (python3 standard library only).

    peers(args) -> list of dicts {key, name, version, lib, env, note, source}

key      short id, used by `bench.py suite --allocators` (glibc, mimalloc-deb, mimalloc2, mimalloc3,
         jemalloc, tcmalloc, tbbmalloc, snmalloc, rpmalloc)
name     the label in tables and charts, with the version ("jemalloc 5.3.0")
version  the exact version (Debian package version, or the upstream version and crate)
lib      the shared object to put in LD_PRELOAD (None for glibc)
env      extra environment variables for the runs ({} for all of them now)
note     how it was obtained
source   where it comes from (package or crate)

Debian packages (installed with apt-get, `apt-get update` once first, when running as root and
they are missing; otherwise skipped with a message):
    libmimalloc2.0 (mimalloc 2.0.9), libjemalloc2, libtcmalloc-minimal4, libtbbmalloc2
    (preloaded through libtbbmalloc_proxy.so.2).
Built from the C/C++ source bundled in crates.io crates (downloaded as .crate archives, never
into the repository; extracted and built under ~/.cache/alloc-bench/, keyed by crate version):
    libmimalloc-sys: its c_src/mimalloc/v2 and v3 trees -> newest mimalloc v2 and v3
                     (cc -O3 -DNDEBUG -fPIC -shared -I include src/static.c, malloc overridden)
    snmalloc-sys:    upstream/ built with cmake (target snmallocshim -> libsnmallocshim.so)
    rpmalloc-sys:    rpmalloc/rpmalloc/rpmalloc.c with ENABLE_OVERRIDE and ENABLE_PRELOAD
A peer whose download or build fails (or takes longer than a few minutes) is skipped with a
message. `args.no_install` (bench.py suite --no-install) uses only what is installed or cached.
"""
import glob
import os
import re
import shutil
import subprocess

from benchlib import crates, debian, ours
from benchlib.common import clean_env, note, run

# key, label, Debian package, file name pattern of the object to preload
DEBIAN = [
    ("mimalloc-deb", "mimalloc", "libmimalloc2.0", r"libmimalloc\.so\.2(\.\d+)*"),
    ("jemalloc", "jemalloc", "libjemalloc2", r"libjemalloc\.so\.2"),
    ("tcmalloc", "tcmalloc", "libtcmalloc-minimal4", r"libtcmalloc_minimal\.so\.4(\.\d+)*"),
    ("tbbmalloc", "tbbmalloc", "libtbbmalloc2", r"libtbbmalloc_proxy\.so\.2(\.\d+)*"),
]
CRATE_KEYS = ("mimalloc2", "mimalloc3", "snmalloc", "rpmalloc")
ALL_KEYS = ("glibc",) + tuple(k for k, _, _, _ in DEBIAN) + CRATE_KEYS


def wanted(args, key):
    sel = getattr(args, "allocators", None)
    return not sel or key in sel


# ---------------------------------------------------------------------------------------------
# Debian packages

def glibc_peer():
    full = debian.full_version("libc6")
    if full is None:
        r = run(["ldd", "--version"]) if shutil.which("ldd") else None
        m = re.search(r"(\d+\.\d+)\s*$", r.stdout.splitlines()[0]) if r and r.stdout else None
        full = m.group(1) if m else "?"
    short = re.match(r"(\d+(?:\.\d+)*)", full)
    return dict(key="glibc", name="glibc %s" % (short.group(1) if short else full), version=full,
                lib=None, env={}, source="Debian libc6 %s" % full,
                note="the system allocator, nothing preloaded")


def debian_peers(args):
    chosen = [d for d in DEBIAN if wanted(args, d[0])]
    missing = [pkg for _, _, pkg, pat in chosen if debian.find_lib(pkg, pat) is None]
    if missing:
        note("peers: Debian packages missing: %s" % " ".join(missing))
        debian.ensure(missing, getattr(args, "no_install", False))
    out = []
    for key, label, pkg, pat in chosen:
        lib = debian.find_lib(pkg, pat)
        if lib is None:
            note("SKIP %s: package %s is not installed" % (label, pkg))
            continue
        full = debian.full_version(pkg) or "?"
        short = debian.version(pkg) or full
        name = "%s %s" % (label, short) + (" (Debian)" if key == "mimalloc-deb" else "")
        out.append(dict(key=key, name=name, version=full, lib=lib, env={},
                        source="Debian %s %s" % (pkg, full),
                        note="Debian package %s %s: %s" % (pkg, full, lib)))
    return out


def mimalloc_trees(src):
    """{major: tree} of the mimalloc source trees bundled in libmimalloc-sys."""
    trees = {}
    for inc in glob.glob(os.path.join(src, "c_src", "mimalloc", "**", "include", "mimalloc.h"),
                         recursive=True):
        tree = os.path.dirname(os.path.dirname(inc))
        if not os.path.exists(os.path.join(tree, "src", "static.c")):
            continue
        with open(inc, errors="replace") as f:
            m = re.search(r"#define\s+MI_MALLOC_VERSION\s+(\d+)", f.read())
        if m:
            v = int(m.group(1))
            trees[v // 10000] = (tree, "%d.%d.%d" % (v // 10000, v // 100 % 100, v % 100))
    return trees


MIMALLOC_FLAGS = ["-std=gnu11", "-O3", "-DNDEBUG", "-DMI_MALLOC_OVERRIDE", "-DMI_SHARED_LIB",
                  "-DMI_SHARED_LIB_EXPORT", "-fPIC", "-shared", "-fvisibility=hidden",
                  "-ftls-model=initial-exec", "-fno-builtin-malloc", "-Wno-unknown-pragmas"]


def mimalloc_crate_peers(args):
    keys = [k for k in ("mimalloc2", "mimalloc3") if wanted(args, k)]
    if not keys:
        return []
    crate = "libmimalloc-sys"
    try:
        version, src = crates.crate_source(crate, args)
    except Exception as e:  # noqa: BLE001
        note("SKIP mimalloc v2/v3 from crate %s: %s" % (crate, e))
        return []
    trees = mimalloc_trees(src)
    cc = os.environ.get("CC", "cc")
    out = []
    for key in keys:
        major = int(key[-1])
        if major not in trees:
            note("SKIP %s: crate %s %s carries no mimalloc v%d source" % (key, crate, version, major))
            continue
        tree, mv = trees[major]

        def build(outdir, tree=tree):
            lib = os.path.join(outdir, "libmimalloc.so")
            cmd = [cc] + MIMALLOC_FLAGS + ["-I", os.path.join(tree, "include"),
                                           os.path.join(tree, "src", "static.c"), "-o", lib,
                                           "-lpthread"]
            crates.run_build(cmd)
            return lib, dict(command=" ".join(cmd))
        try:
            lib, meta = crates.build_cached(key, crate, version, cc + " ".join(MIMALLOC_FLAGS),
                                            build)
        except Exception as e:  # noqa: BLE001
            note("SKIP mimalloc v%d: %s" % (major, e))
            continue
        out.append(dict(key=key, name="mimalloc %s" % mv, version="%s (crate %s %s)"
                        % (mv, crate, version), lib=lib, env={},
                        source="crate %s %s, %s" % (crate, version, os.path.relpath(tree, src)),
                        note="built with: %s" % meta.get("command", "?")))
    return out


def snmalloc_peer(args):
    crate = "snmalloc-sys"
    if shutil.which("cmake") is None or shutil.which("c++") is None:
        note("SKIP snmalloc: needs cmake and a C++ compiler")
        return None
    try:
        version, src = crates.crate_source(crate, args)
        upstream = os.path.join(src, "upstream")
        if not os.path.exists(os.path.join(upstream, "CMakeLists.txt")):
            raise RuntimeError("crate %s %s has no upstream/CMakeLists.txt" % (crate, version))

        def build(outdir):
            bdir = os.path.join(outdir, "cmake")
            gen = ["-G", "Ninja"] if shutil.which("ninja") else []
            cfg = ["cmake", "-S", upstream, "-B", bdir] + gen + [
                "-DCMAKE_BUILD_TYPE=Release", "-DSNMALLOC_BUILD_TESTING=OFF"]
            crates.run_build(cfg)
            crates.run_build(["cmake", "--build", bdir, "--target", "snmallocshim"])
            lib = os.path.join(outdir, "libsnmallocshim.so")
            shutil.copy2(os.path.join(bdir, "libsnmallocshim.so"), lib)
            shutil.rmtree(bdir, ignore_errors=True)
            return lib, dict(command=" ".join(cfg) + " && cmake --build ... --target snmallocshim")
        lib, meta = crates.build_cached("snmalloc", crate, version, "cmake-release-shim", build)
    except Exception as e:  # noqa: BLE001
        note("SKIP snmalloc: %s" % e)
        return None
    return dict(key="snmalloc", name="snmalloc (crate %s)" % version,
                version="crate %s %s (bundled upstream source)" % (crate, version), lib=lib,
                env={}, source="crate %s %s, upstream/" % (crate, version),
                note="built with: %s" % meta.get("command", "?"))


def rpmalloc_peer(args):
    crate = "rpmalloc-sys"
    cc = os.environ.get("CC", "cc")
    flags = ["-O2", "-DNDEBUG", "-D_GNU_SOURCE", "-DENABLE_OVERRIDE=1", "-DENABLE_PRELOAD=1",
             "-fPIC", "-shared", "-w"]
    try:
        version, src = crates.crate_source(crate, args)
        c = os.path.join(src, "rpmalloc", "rpmalloc", "rpmalloc.c")
        if not os.path.exists(c):
            raise RuntimeError("crate %s %s has no rpmalloc/rpmalloc/rpmalloc.c" % (crate, version))

        def build(outdir):
            lib = os.path.join(outdir, "librpmalloc.so")
            cmd = [cc] + flags + [c, "-o", lib, "-lpthread"]
            crates.run_build(cmd)
            return lib, dict(command=" ".join(cmd))
        lib, meta = crates.build_cached("rpmalloc", crate, version, cc + " ".join(flags), build)
    except Exception as e:  # noqa: BLE001
        note("SKIP rpmalloc: %s" % e)
        return None
    upstream = version.split("+", 1)[1] if "+" in version else version
    return dict(key="rpmalloc", name="rpmalloc %s" % upstream,
                version="%s (crate %s %s)" % (upstream, crate, version), lib=lib, env={},
                source="crate %s %s, rpmalloc/rpmalloc/rpmalloc.c" % (crate, version),
                note="built with: %s" % meta.get("command", "?"))


# ---------------------------------------------------------------------------------------------

def smoke_test(p):
    """The library must export malloc and a trivial program must run with it preloaded."""
    if not ours.exports_malloc(p["lib"]):
        return "%s does not export malloc" % p["lib"]
    env = clean_env()
    env["LD_PRELOAD"] = p["lib"]
    env.update(p["env"])
    try:
        r = subprocess.run(["/bin/sh", "-c", "true"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=30)
    except subprocess.TimeoutExpired:
        return "a trivial program hung with it preloaded"
    if r.returncode != 0 or "ERROR" in r.stderr:
        return "a trivial program failed with it preloaded (exit %d): %s" % (
            r.returncode, r.stderr.strip()[:300])
    return None


def peers(args):
    """All peer allocators that are available (installing/building what is missing)."""
    out = []
    if wanted(args, "glibc"):
        out.append(glibc_peer())
    out += debian_peers(args)
    out += mimalloc_crate_peers(args)
    if wanted(args, "snmalloc"):
        p = snmalloc_peer(args)
        if p:
            out.append(p)
    if wanted(args, "rpmalloc"):
        p = rpmalloc_peer(args)
        if p:
            out.append(p)
    good = []
    for p in out:
        why = smoke_test(p) if p["lib"] else None
        if why:
            note("SKIP %s: %s" % (p["name"], why))
        else:
            good.append(p)
    return good


def main(argv):
    """bench.py peers: list (installing/building) the peer allocators."""
    import argparse
    ap = argparse.ArgumentParser(prog="bench.py peers",
                                 description="list (installing/building) the peer allocators")
    ap.add_argument("--allocators", default="")
    ap.add_argument("--no-install", action="store_true")
    a = ap.parse_args(argv)
    a.allocators = set(x for x in a.allocators.split(",") if x)
    for p in peers(a):
        print("%-13s %-28s %-60s %s" % (p["key"], p["name"], p["version"], p["lib"]))
    return 0
