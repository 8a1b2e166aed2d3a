# SPDX-License-Identifier: MIT
"""Our library: finding libmimalloc.so in a build directory, building it when it is missing,
and checking that it can be preloaded (it exports malloc)."""
import os
import shutil
import subprocess

from benchlib.common import REPO_DIR, note, run


def find(build_dir):
    """Path of our libmimalloc.so in build_dir (or a subdirectory), or None."""
    if not os.path.isdir(build_dir):
        return None
    direct = os.path.join(build_dir, "libmimalloc.so")
    if os.path.exists(direct):
        return direct
    for root, dirs, names in os.walk(build_dir):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "CMakeFiles"]
        if "libmimalloc.so" in names:
            return os.path.join(root, "libmimalloc.so")
    return None


def exports_malloc(lib):
    try:
        out = run(["nm", "-D", "--defined-only", lib]).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return any(len(f) >= 3 and f[2] == "malloc" and f[1] in "TtWiI"
               for f in (line.split() for line in out.splitlines()))


def build(build_dir):
    """Configure and build our library in build_dir (as the README says); True on success."""
    if shutil.which("cmake") is None:
        note("cannot build our library: cmake not found")
        return False
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    cmds = [["cmake", "-S", REPO_DIR, "-B", build_dir] + gen + ["-DCMAKE_BUILD_TYPE=Release"],
            ["cmake", "--build", build_dir]]
    for cmd in cmds:
        note("  $ " + " ".join(cmd))
        r = run(cmd, timeout=1800)
        if r.returncode != 0:
            note(r.stdout[-3000:] + r.stderr[-3000:])
            return False
    return True


def preloadable(build_dir):
    """Path of our library in build_dir, built if missing; raises RuntimeError when it cannot be
    had or cannot be preloaded."""
    lib = find(build_dir)
    if lib is None:
        note("no libmimalloc.so under %s: building it" % build_dir)
        if build(build_dir):
            lib = find(build_dir)
    if lib is None:
        raise RuntimeError("our library is not in %s and could not be built" % build_dir)
    if not exports_malloc(lib):
        raise RuntimeError("%s does not export malloc: it cannot be preloaded" % lib)
    note("ours: %s" % lib)
    return lib


def git_describe():
    try:
        r = run(["git", "-C", REPO_DIR, "describe", "--always", "--dirty", "--abbrev=12"])
        return r.stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError):
        return "?"
