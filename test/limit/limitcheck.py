# SPDX-License-Identifier: MIT
"""limitcheck.py -- what the memory limit's test drivers share (run-limit.py, run-cgroup.py):
the failures list, check(), and the clean environment a probe runs in (only PATH, the
sanitizers' settings and LD_LIBRARY_PATH are inherited, so no MIMALLOC_* of the caller leaks in)."""
import os

KiB, MiB, GiB = 1024, 1024 * 1024, 1024 * 1024 * 1024
FAILS = []


def check(cond, what, note=""):
    if not cond:
        FAILS.append(f"{what}: {note}")
        print(f"FAIL {what}: {note}")
    return cond


def clean_env(extra):
    env = {k: v for k, v in os.environ.items()
           if k == "PATH" or k.endswith("SAN_OPTIONS") or k == "LD_LIBRARY_PATH"}
    env.update(extra)
    return env
