# SPDX-License-Identifier: MIT
"""Peers built from the C/C++ sources bundled in crates.io crates: the newest version of a crate
(crates.io API, else the sparse index), its .crate archive downloaded and extracted under
~/.cache/alloc-bench/src/, and builds cached under ~/.cache/alloc-bench/build/ keyed by crate
version and flags. Nothing of it goes into the repository."""
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import time
import urllib.request

from benchlib.common import CACHE_DIR, note

USER_AGENT = "alloc-bench-suite (allocator benchmark runner; python urllib)"
BUILD_TIMEOUT = 300  # seconds for one peer's build: "within a few minutes"


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


