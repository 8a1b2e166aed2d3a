#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The peer allocators of the benchmark suite (python3 standard library only).

    peers(args) -> list of dicts {key, name, version, lib, env, note, source}

key      short id, used by `suite.sh --allocators` (glibc, mimalloc-deb, mimalloc2, mimalloc3,
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
message. `args.no_install` (suite.sh --no-install) uses only what is installed or cached.
"""
import glob
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.request

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH_DIR)
import run as common  # noqa: E402  (bench/run.py: note, run, exports_malloc)
import mem  # noqa: E402  (bench/mem.py: dpkg_files, dpkg_version, find_peer)

note = common.note
CACHE_DIR = os.path.join(os.path.expanduser("~"), ".cache", "alloc-bench")
USER_AGENT = "alloc-bench-suite (allocator benchmark runner; python urllib)"
BUILD_TIMEOUT = 300  # seconds for one peer's build: "within a few minutes"

# key, label, Debian package, file name pattern of the object to preload
DEBIAN = [
    ("mimalloc-deb", "mimalloc", "libmimalloc2.0", r"libmimalloc\.so\.2(\.\d+)*"),
    ("jemalloc", "jemalloc", "libjemalloc2", r"libjemalloc\.so\.2"),
    ("tcmalloc", "tcmalloc", "libtcmalloc-minimal4", r"libtcmalloc_minimal\.so\.4(\.\d+)*"),
    ("tbbmalloc", "tbbmalloc", "libtbbmalloc2", r"libtbbmalloc_proxy\.so\.2(\.\d+)*"),
]
CRATE_KEYS = ("mimalloc2", "mimalloc3", "snmalloc", "rpmalloc")
ALL_KEYS = ("glibc",) + tuple(k for k, _, _, _ in DEBIAN) + CRATE_KEYS

_apt_updated = False


def wanted(args, key):
    sel = getattr(args, "allocators", None)
    return not sel or key in sel


# ---------------------------------------------------------------------------------------------
# Debian packages

def dpkg_full_version(package):
    if shutil.which("dpkg-query") is None:
        return None
    r = common.run(["dpkg-query", "-W", "-f", "${db:Status-Abbrev} ${Version}", package])
    f = r.stdout.split()
    return f[1] if r.returncode == 0 and len(f) == 2 and f[0] == "ii" else None


def apt_ensure(packages, args):
    """Install the Debian packages that are missing (apt-get update once first). Returns the list
    of packages still missing; prints why when it cannot install."""
    global _apt_updated
    missing = [p for p in packages if dpkg_full_version(p) is None]
    if not missing:
        return []
    if getattr(args, "no_install", False):
        note("  --no-install: not installing %s" % " ".join(missing))
        return missing
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        note("  not root or no apt-get: cannot install %s" % " ".join(missing))
        return missing
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    lock = ["-o", "DPkg::Lock::Timeout=600"]
    if not _apt_updated:
        note("  $ apt-get update")
        common.run(["apt-get", "update"] + lock, env=env, timeout=900)
        _apt_updated = True
    cmd = ["apt-get", "install", "-y", "--no-install-recommends"] + lock + missing
    note("  $ " + " ".join(cmd))
    r = common.run(cmd, env=env, timeout=1800)
    if r.returncode != 0:
        note("  apt-get install failed:\n" + r.stderr[-1500:])
    return [p for p in missing if dpkg_full_version(p) is None]


def glibc_peer():
    full = dpkg_full_version("libc6")
    if full is None:
        r = common.run(["ldd", "--version"]) if shutil.which("ldd") else None
        m = re.search(r"(\d+\.\d+)\s*$", r.stdout.splitlines()[0]) if r and r.stdout else None
        full = m.group(1) if m else "?"
    short = re.match(r"(\d+(?:\.\d+)*)", full)
    return dict(key="glibc", name="glibc %s" % (short.group(1) if short else full), version=full,
                lib=None, env={}, source="Debian libc6 %s" % full,
                note="the system allocator, nothing preloaded")


def debian_peers(args):
    chosen = [d for d in DEBIAN if wanted(args, d[0])]
    missing = [pkg for _, _, pkg, pat in chosen if mem.find_peer(pkg, pat) is None]
    if missing:
        note("peers: Debian packages missing: %s" % " ".join(missing))
        apt_ensure(missing, args)
    out = []
    for key, label, pkg, pat in chosen:
        lib = mem.find_peer(pkg, pat)
        if lib is None:
            note("SKIP %s: package %s is not installed" % (label, pkg))
            continue
        full = dpkg_full_version(pkg) or "?"
        short = mem.dpkg_version(pkg) or full
        name = "%s %s" % (label, short) + (" (Debian)" if key == "mimalloc-deb" else "")
        out.append(dict(key=key, name=name, version=full, lib=lib, env={},
                        source="Debian %s %s" % (pkg, full),
                        note="Debian package %s %s: %s" % (pkg, full, lib)))
    return out


# ---------------------------------------------------------------------------------------------
# crates.io source

def http_get(url, timeout=60):
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.read()


def sparse_index_path(name):
    n = name.lower()
    if len(n) <= 2:
        return "%d/%s" % (len(n), n)
    if len(n) == 3:
        return "3/%s/%s" % (n[0], n)
    return "%s/%s/%s" % (n[:2], n[2:4], n)


def vkey(v):
    core = v.split("+")[0]
    pre = "-" in core
    nums = [int(x) if x.isdigit() else 0 for x in re.split(r"[.-]", core.split("-")[0])]
    return nums, not pre


def newest_crate_version(name):
    """Newest non-yanked, non-prerelease version: the crates.io API, else the sparse index."""
    errors = []
    try:
        d = json.loads(http_get("https://crates.io/api/v1/crates/%s" % name))
        v = d["crate"].get("max_stable_version") or d["crate"]["max_version"]
        if v:
            return v
    except Exception as e:  # noqa: BLE001 (network: any failure means "try the next way")
        errors.append("crates.io API: %s" % e)
    try:
        lines = http_get("https://index.crates.io/%s" % sparse_index_path(name)).decode()
        vers = [json.loads(l) for l in lines.splitlines() if l.strip()]
        vers = [v["vers"] for v in vers if not v.get("yanked") and "-" not in v["vers"].split("+")[0]]
        if vers:
            return max(vers, key=vkey)
    except Exception as e:  # noqa: BLE001
        errors.append("index.crates.io: %s" % e)
    raise RuntimeError("cannot find the newest version of crate %s (%s)" % (name, "; ".join(errors)))


def cached_crate_versions(name):
    root = os.path.join(CACHE_DIR, "src")
    vs = [d[len(name) + 1:] for d in os.listdir(root) if d.startswith(name + "-")] \
        if os.path.isdir(root) else []
    return sorted(vs, key=vkey)


def crate_source(name, args):
    """(version, extracted directory) of the newest version of a crate, from the cache if there."""
    offline = getattr(args, "no_install", False)
    version = None
    if not offline:
        try:
            version = newest_crate_version(name)
        except RuntimeError as e:
            note("  %s" % e)
    if version is None:
        cached = cached_crate_versions(name)
        if not cached:
            raise RuntimeError("crate %s: no version known and none cached" % name)
        version = cached[-1]
        note("  using cached %s %s" % (name, version))
    dest = os.path.join(CACHE_DIR, "src", "%s-%s" % (name, version))
    if os.path.exists(os.path.join(dest, ".complete")):
        return version, dest
    if offline:
        raise RuntimeError("crate %s %s not cached (--no-install)" % (name, version))
    url = "https://static.crates.io/crates/%s/%s-%s.crate" % (
        name, name, urllib.request.quote(version, safe=""))
    note("  downloading %s" % url)
    data = http_get(url, timeout=300)
    os.makedirs(os.path.join(CACHE_DIR, "crates"), exist_ok=True)
    with open(os.path.join(CACHE_DIR, "crates", "%s-%s.crate" % (name, version)), "wb") as f:
        f.write(data)
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    prefix = "%s-%s/" % (name, version)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for m in tar.getmembers():
            # the .crate's members all lie under <name>-<version>/; refuse anything else
            if not m.name.startswith(prefix) or ".." in m.name.split("/") or m.issym() \
                    or m.islnk() or not (m.isfile() or m.isdir()):
                continue
            m.name = m.name[len(prefix):]
            if m.name:
                if hasattr(tarfile, "data_filter"):
                    tar.extract(m, dest, filter="data")
                else:
                    tar.extract(m, dest)
    open(os.path.join(dest, ".complete"), "w").close()
    return version, dest


def build_cached(key, crate, version, flags_id, build_fn):
    """Run build_fn(outdir) -> (lib path, meta dict) unless a build of this key/version/flags is
    cached. Returns (lib, meta)."""
    tag = hashlib.sha1(flags_id.encode()).hexdigest()[:8]
    outdir = os.path.join(CACHE_DIR, "build", "%s-%s-%s" % (key, version, tag))
    meta_file = os.path.join(outdir, "meta.json")
    if os.path.exists(meta_file):
        with open(meta_file) as f:
            meta = json.load(f)
        if os.path.exists(meta["lib"]):
            return meta["lib"], meta
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    t0 = time.monotonic()
    lib, meta = build_fn(outdir)
    meta.update(lib=lib, crate="%s %s" % (crate, version), build_s=round(time.monotonic() - t0, 1))
    with open(meta_file, "w") as f:
        json.dump(meta, f, indent=1)
    note("  built %s in %.0f s: %s" % (key, meta["build_s"], lib))
    return lib, meta


def run_build(cmd, cwd=None, timeout=BUILD_TIMEOUT):
    note("  $ " + " ".join(cmd))
    try:
        r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError("build took longer than %d s: %s" % (timeout, " ".join(cmd)))
    if r.returncode != 0:
        raise RuntimeError("build failed: %s\n%s" % (" ".join(cmd), r.stdout[-2000:]))
    return r.stdout


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
        version, src = crate_source(crate, args)
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
            run_build(cmd)
            return lib, dict(command=" ".join(cmd))
        try:
            lib, meta = build_cached(key, crate, version, cc + " ".join(MIMALLOC_FLAGS), build)
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
        version, src = crate_source(crate, args)
        upstream = os.path.join(src, "upstream")
        if not os.path.exists(os.path.join(upstream, "CMakeLists.txt")):
            raise RuntimeError("crate %s %s has no upstream/CMakeLists.txt" % (crate, version))

        def build(outdir):
            bdir = os.path.join(outdir, "cmake")
            gen = ["-G", "Ninja"] if shutil.which("ninja") else []
            cfg = ["cmake", "-S", upstream, "-B", bdir] + gen + [
                "-DCMAKE_BUILD_TYPE=Release", "-DSNMALLOC_BUILD_TESTING=OFF"]
            run_build(cfg)
            run_build(["cmake", "--build", bdir, "--target", "snmallocshim"])
            lib = os.path.join(outdir, "libsnmallocshim.so")
            shutil.copy2(os.path.join(bdir, "libsnmallocshim.so"), lib)
            shutil.rmtree(bdir, ignore_errors=True)
            return lib, dict(command=" ".join(cfg) + " && cmake --build ... --target snmallocshim")
        lib, meta = build_cached("snmalloc", crate, version, "cmake-release-shim", build)
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
        version, src = crate_source(crate, args)
        c = os.path.join(src, "rpmalloc", "rpmalloc", "rpmalloc.c")
        if not os.path.exists(c):
            raise RuntimeError("crate %s %s has no rpmalloc/rpmalloc/rpmalloc.c" % (crate, version))

        def build(outdir):
            lib = os.path.join(outdir, "librpmalloc.so")
            cmd = [cc] + flags + [c, "-o", lib, "-lpthread"]
            run_build(cmd)
            return lib, dict(command=" ".join(cmd))
        lib, meta = build_cached("rpmalloc", crate, version, cc + " ".join(flags), build)
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
    if not common.exports_malloc(p["lib"]):
        return "%s does not export malloc" % p["lib"]
    env = mem.clean_env()
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


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="list (installing/building) the peer allocators")
    ap.add_argument("--allocators", default="")
    ap.add_argument("--no-install", action="store_true")
    a = ap.parse_args()
    a.allocators = set(x for x in a.allocators.split(",") if x)
    for p in peers(a):
        print("%-13s %-28s %-60s %s" % (p["key"], p["name"], p["version"], p["lib"]))
