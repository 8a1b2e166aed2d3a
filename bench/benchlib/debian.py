# SPDX-License-Identifier: MIT
"""Debian packages: what is installed (dpkg), where its shared objects are, and installing
what is missing (apt-get, as root only; `apt-get update` once per process)."""
import os
import re
import shutil

from benchlib.common import note, run

_apt_updated = False


def files(package):
    """Files of an installed package, or [] (not installed, or no dpkg)."""
    if shutil.which("dpkg") is None:
        return []
    r = run(["dpkg", "-L", package])
    return r.stdout.split() if r.returncode == 0 else []


def full_version(package):
    """The installed package's exact version ("2.0.9-3"), or None when it is not installed."""
    if shutil.which("dpkg-query") is None:
        return None
    r = run(["dpkg-query", "-W", "-f", "${db:Status-Abbrev} ${Version}", package])
    f = r.stdout.split()
    return f[1] if r.returncode == 0 and len(f) == 2 and f[0] == "ii" else None


def version(package):
    """The upstream part of the installed version ("2.0.9"), or None."""
    v = full_version(package)
    m = re.match(r"(?:\d+:)?(\d+(?:\.\d+)*)", v) if v else None
    return m.group(1) if m else None


def find_lib(package, pattern):
    """Path of the shared object of a package whose file name matches `pattern`, or None."""
    libs = [f for f in files(package)
            if re.fullmatch(pattern, os.path.basename(f)) and os.path.isfile(f)]
    # prefer the real file over symlinks to it (same object either way, realpath compares)
    libs.sort(key=lambda f: (os.path.islink(f), f))
    return libs[0] if libs else None


def ensure(packages, no_install=False):
    """Install the packages that are missing. Returns the list of those still missing; says why
    when it cannot install (not root, no apt-get, --no-install)."""
    global _apt_updated
    missing = [p for p in packages if full_version(p) is None]
    if not missing:
        return []
    if no_install:
        note("  --no-install: not installing %s" % " ".join(missing))
        return missing
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        note("  not root or no apt-get: cannot install %s" % " ".join(missing))
        return missing
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    # the lock timeout covers an installation already running in the background
    lock = ["-o", "DPkg::Lock::Timeout=600"]
    if not _apt_updated:
        note("  $ apt-get update")
        run(["apt-get", "update"] + lock, env=env, timeout=900)
        _apt_updated = True
    cmd = ["apt-get", "install", "-y", "--no-install-recommends"] + lock + missing
    note("  $ " + " ".join(cmd))
    r = run(cmd, env=env, timeout=1800)
    if r.returncode != 0:
        note("  apt-get install failed:\n" + r.stderr[-1500:])
    return [p for p in missing if full_version(p) is None]
