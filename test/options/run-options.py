#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Option tests (the option functions and MIMALLOC_* variables, include/mimalloc.h section 7),
driven from ctest.

Runs opt-probe / opt-api in a clean environment (nothing inherited but PATH and sanitizer
settings, i.e. like `env -i PATH=...`) plus the MIMALLOC_* variables of each case, and checks
values and stderr exactly.

usage: run-options.py --probe P --probe-static PS --api A --api-static AS [--build NAME]
                      [--wrapper "valgrind -q --error-exitcode=99"] GROUP...

Groups:
  defaults     every option's built-in value, get_size and is_enabled; enum aliases (shared+static)
  env-each     each of the 38 MIMALLOC_<NAME> variables alone: that option changes, no other does
  env-names    case-insensitive names, all 38 variables at once, near-miss names are not taken
               for the variable
  unknown      unknown MIMALLOC_ names: a near miss always warns with "did you mean", others
               only with show_errors/verbose; known names (options, legacy, other settings) never
  syntax       booleans, empty value, signs, size units and rounding, truncation at 64 chars
  syntax-clamp huge sizes saturate alike whatever the spelling (bytes, K, T, strtol overflow)
  ranges       every option clamps to its documented range, with one warning naming the range
  fuzz         random values for random options, checked against a model of the parser and
               the ranges (value stored, warning or not), 300 runs with a fixed seed
  invalid      malformed values: default kept, exactly one warning line naming the variable,
               unless show_errors was set to 0 (verbose shows it anyway)
  legacy       legacy variable names: used when the new name is absent, with a deprecation
               warning shown by default; with both names the new one wins and the legacy one
               is reported as ignored; mimalloc's retired names are reported as having no effect
  api-basic    opt-api basic (shared and static library): enable/disable/set_enabled(_default),
               get_clamp, get_size, out-of-range options, guarded min/max, set_default, aliases
  api-env      opt-api env: set beats the environment; set_default loses to an environment value
  api-early    opt-api early: the same calls from .preinit_array, before the library read the
               environment
  output       mimalloc: prefix, one line per message, mi_register_output replay, max_warnings,
               max_errors, mi_options_print lines
  verbose-startup   MIMALLOC_VERBOSE=1 prints the option list at start-up; 2 adds a trace line
                    per OS call
  print-levels      mi_options_print ends with debug, secure and tracking level lines
  thread-prefix     messages from a non-main thread carry "thread 0x<id>: "
"""
import argparse
import os
import random
import re
import shlex
import subprocess
import sys

# name, default (64-bit Linux, release build; show_errors is 1 in debug builds), kib
OPTIONS = [
    ("show_errors", 0, False),
    ("show_stats", 0, False),
    ("verbose", 0, False),
    ("eager_commit", 1, False),
    ("arena_eager_commit", 2, False),
    ("purge_decommits", 1, False),
    ("allow_large_os_pages", 0, False),
    ("reserve_huge_os_pages", 0, False),
    ("reserve_huge_os_pages_at", -1, False),
    ("reserve_os_memory", 0, True),
    ("deprecated_segment_cache", 0, False),
    ("deprecated_page_reset", 0, False),
    ("abandoned_page_purge", 0, False),
    ("deprecated_segment_reset", 0, False),
    ("eager_commit_delay", 1, False),
    ("purge_delay", 10, False),
    ("use_numa_nodes", 0, False),
    ("disallow_os_alloc", 0, False),
    ("os_tag", 100, False),
    ("max_errors", 32, False),
    ("max_warnings", 32, False),
    ("max_segment_reclaim", 10, False),
    ("destroy_on_exit", 0, False),
    ("arena_reserve", 1048576, True),
    ("arena_purge_mult", 10, False),
    ("purge_extend_delay", 1, False),
    ("abandoned_reclaim_on_free", 1, False),
    ("disallow_arena_alloc", 0, False),
    ("retry_on_oom", 400, False),
    ("visit_abandoned", 0, False),
    ("guarded_min", 0, False),
    ("guarded_max", 1073741824, False),
    ("guarded_precise", 0, False),
    ("guarded_sample_rate", 0, False),
    ("guarded_sample_seed", 0, False),
    ("target_segments_per_thread", 0, False),
    ("generic_collect", 10000, False),
    ("allow_thp", 1, False),
]
assert len(OPTIONS) == 38
# this implementation's own options (numbers from 1000), printed after mimalloc's: name, default
# (name, default as mi_options_print shows it: the memory limit's default is 100% of the cgroup's)
EXT_OPTIONS = [("live", "0"), ("live_interval", "1000"), ("purge_thread", "1"),
               ("memory_limit", "100%"), ("memory_limit_hard", "0 KiB")]
INDEX = {name: i for i, (name, _, _) in enumerate(OPTIONS)}

LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1
MS_MAX = 24 * 60 * 60 * 1000
KIB_MAX = 1 << 36           # half the 47-bit user address space, in KiB
SAT_KIB = 1 << 37           # the parser's saturation for sizes (2^47 bytes) before clamping
# the documented range of every option (README, Options); no range: any long
RANGES = {name: (LONG_MIN, LONG_MAX) for name, _, _ in OPTIONS}
for _n in ("show_errors", "show_stats", "eager_commit", "purge_decommits", "allow_large_os_pages",
           "abandoned_page_purge", "disallow_os_alloc", "abandoned_reclaim_on_free",
           "disallow_arena_alloc", "visit_abandoned", "guarded_precise", "allow_thp"):
    RANGES[_n] = (0, 1)
RANGES.update({
    "verbose": (0, 2), "arena_eager_commit": (0, 2), "reserve_huge_os_pages": (0, 128 * 1024),
    "reserve_huge_os_pages_at": (-1, 1023), "reserve_os_memory": (0, KIB_MAX),
    "eager_commit_delay": (0, 1024), "purge_delay": (-1, MS_MAX), "use_numa_nodes": (0, 1024),
    "max_segment_reclaim": (0, 100), "destroy_on_exit": (0, 2), "arena_reserve": (0, KIB_MAX),
    "arena_purge_mult": (0, 1000), "purge_extend_delay": (0, MS_MAX), "retry_on_oom": (0, 2000),
    "guarded_min": (0, LONG_MAX), "guarded_max": (0, LONG_MAX), "guarded_sample_rate": (0, LONG_MAX),
    "target_segments_per_thread": (0, 1000000), "generic_collect": (1, 1000000),
})

# A non-default value for every option (as written in the environment, and as stored),
# harmless for a short run.
ENV_VALUES = {
    "show_errors": ("1", 1), "show_stats": ("1", 1), "verbose": ("1", 1),
    "eager_commit": ("0", 0), "arena_eager_commit": ("0", 0), "purge_decommits": ("0", 0),
    "allow_large_os_pages": ("1", 1), "reserve_huge_os_pages": ("0", 0),
    "reserve_huge_os_pages_at": ("0", 0), "reserve_os_memory": ("8M", 8192),
    "deprecated_segment_cache": ("3", 3), "deprecated_page_reset": ("4", 4),
    "abandoned_page_purge": ("1", 1), "deprecated_segment_reset": ("5", 5),
    "eager_commit_delay": ("4", 4), "purge_delay": ("250", 250), "use_numa_nodes": ("1", 1),
    "disallow_os_alloc": ("1", 1), "os_tag": ("200", 200), "max_errors": ("7", 7),
    "max_warnings": ("9", 9), "max_segment_reclaim": ("50", 50), "destroy_on_exit": ("1", 1),
    "arena_reserve": ("64M", 65536), "arena_purge_mult": ("3", 3),
    "purge_extend_delay": ("7", 7), "abandoned_reclaim_on_free": ("0", 0),
    "disallow_arena_alloc": ("1", 1), "retry_on_oom": ("100", 100), "visit_abandoned": ("1", 1),
    "guarded_min": ("16", 16), "guarded_max": ("4096", 4096), "guarded_precise": ("1", 1),
    "guarded_sample_rate": ("1000", 1000), "guarded_sample_seed": ("42", 42),
    "target_segments_per_thread": ("8", 8), "generic_collect": ("500", 500),
    "allow_thp": ("0", 0),
}
# reserve_huge_os_pages tries to reserve 1 GiB pages: one (there are none on a test machine)
ENV_VALUES["reserve_huge_os_pages"] = ("1", 1)
assert set(ENV_VALUES) == set(INDEX)

LEGACY = [  # legacy variable, option, value, stored value
    ("eager_region_commit", "arena_eager_commit", "0", 0),
    ("reset_decommits", "purge_decommits", "0", 0),
    ("large_os_pages", "allow_large_os_pages", "1", 1),
    ("abandoned_page_reset", "abandoned_page_purge", "1", 1),
    ("reset_delay", "purge_delay", "250", 250),
    ("limit_os_alloc", "disallow_os_alloc", "1", 1),
    ("decommit_extend_delay", "purge_extend_delay", "7", 7),
]

PASSTHROUGH = ("ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS", "LSAN_OPTIONS")


class Ctx:
    def __init__(self, args):
        self.args = args
        self.wrapper = shlex.split(args.wrapper) if args.wrapper else []
        self.failures = []
        self.checks = 0
        self.runs = 0
        self.defaults = [d for (_, d, _) in OPTIONS]
        if args.debug:
            self.defaults[INDEX["show_errors"]] = 1

    # ---- running ----
    def run(self, prog, argv, env_vars, what):
        env = {"PATH": "/usr/bin:/bin"}
        for k in PASSTHROUGH:
            if k in os.environ:
                env[k] = os.environ[k]
        env.update(env_vars)
        self.runs += 1
        try:
            p = subprocess.run(self.wrapper + [prog] + list(argv), env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=60)
        except subprocess.TimeoutExpired:
            self.fail(what, "timed out")
            return None
        out = p.stdout.decode("utf-8", "replace")
        err = p.stderr.decode("utf-8", "replace")
        if p.returncode != 0:
            self.fail(what, "exit code %d\n--- stdout:\n%s--- stderr:\n%s" % (p.returncode, out, err))
            return None
        return out, err

    def probe(self, env_vars, what, cmds=("dump",), static=False):
        prog = self.args.probe_static if static else self.args.probe
        r = self.run(prog, cmds, env_vars, what)
        if r is None:
            return None
        out, err = r
        if not out.endswith("done\n"):
            self.fail(what, "probe did not finish:\n" + out)
            return None
        return out, err

    # ---- checking ----
    def fail(self, what, msg):
        self.failures.append("%s: %s" % (what, msg))

    def check(self, cond, what, msg):
        self.checks += 1
        if not cond:
            self.fail(what, msg)
        return cond

    def eq(self, actual, expected, what, label=""):
        return self.check(actual == expected, what,
                          "%sexpected %r, got %r" % (label + ": " if label else "", expected, actual))


def parse_dump(out):
    vals = {}
    for line in out.splitlines():
        m = re.match(r"^opt (\d+) (-?\d+) (\d+) ([01])$", line)
        if m:
            vals[int(m.group(1))] = (int(m.group(2)), int(m.group(3)), int(m.group(4)))
    return vals


def expected_triple(i, value):
    kib = OPTIONS[i][2]
    size = 0 if value < 0 else (value * 1024 if kib else value)
    return (value, size, 1 if value != 0 else 0)


def check_dump(ctx, out, expect, what):
    """expect: {index: value} overrides on top of the defaults; every option is checked."""
    vals = parse_dump(out)
    if not ctx.check(sorted(vals) == list(range(38)), what, "dump incomplete:\n" + out):
        return
    for i in range(38):
        value = expect.get(i, ctx.defaults[i])
        ctx.eq(vals[i], expected_triple(i, value), what, "option %d (%s) get/get_size/is_enabled" % (i, OPTIONS[i][0]))


def env_name(name):
    return "MIMALLOC_" + name.upper()


def warn_invalid(name):
    return "mimalloc: warning: environment option mimalloc_%s has an invalid value.\n" % name


def value_str(name, v):
    """an option value as the warnings print it: sizes in the largest binary unit dividing them"""
    if not OPTIONS[INDEX[name]][2] or v <= 0:
        return "%d" % v
    units = ["KiB", "MiB", "GiB", "TiB"]
    u = 0
    while u < 3 and v % 1024 == 0:
        v //= 1024
        u += 1
    return "%d %s" % (v, units[u])


def warn_range(name, text, value):
    lo, hi = RANGES[name]
    return ("mimalloc: warning: environment option mimalloc_%s=%s is out of range (%s to %s); using %s.\n"
            % (name, text, value_str(name, lo), value_str(name, hi), value_str(name, value)))


def warn_unknown(var, suggestion=None):
    if suggestion is None:
        return "mimalloc: warning: environment variable %s is not a setting of this allocator (ignored).\n" % var
    return ("mimalloc: warning: environment variable %s is not a setting of this allocator (ignored); "
            "did you mean MIMALLOC_%s?\n" % (var, suggestion))


def clamp(name, v):
    lo, hi = RANGES[name]
    return lo if v < lo else (hi if v > hi else v)


def model_parse(name, text):
    """The value syntax (README, Options): (stored value, warning line or "") or None if invalid."""
    kib = OPTIONS[INDEX[name]][2]
    raw = text[:64]
    t = raw.upper()
    if t in ("", "1", "TRUE", "YES", "ON"):
        v = 1
    elif t in ("0", "FALSE", "NO", "OFF"):
        v = 0
    else:
        m = re.match(r"^[ \t\n\v\f\r]*([+-]?)([0-9]+)", t)
        if not m:
            return None
        v = int(m.group(2)) * (-1 if m.group(1) == "-" else 1)
        v = max(LONG_MIN, min(LONG_MAX, v))
        rest = t[m.end():]
        if kib:
            mult = 0
            if rest[:1] in ("K", "M", "G", "T") and rest[:1] != "":
                mult = {"K": 1, "M": 1024, "G": 1 << 20, "T": 1 << 30}[rest[0]]
                rest = rest[1:]
            if rest.startswith("IB"):
                rest = rest[2:]
            elif rest.startswith("B"):
                rest = rest[1:]
            if v <= 0:
                pass
            elif mult == 0:
                v = (min(v, 1 << 47) + 1023) // 1024
            elif v > SAT_KIB // mult:
                v = SAT_KIB
            else:
                v *= mult
        if rest != "":
            return None
    c = clamp(name, v)
    return c, ("" if c == v else warn_range(name, raw, c))


def warn_legacy(old, new):
    return ("mimalloc: warning: environment option MIMALLOC_%s is deprecated; use MIMALLOC_%s (its value is applied to it).\n"
            % (old.upper(), new.upper()))


def warn_legacy_ignored(old, new):
    return ("mimalloc: warning: environment option MIMALLOC_%s is deprecated and ignored: MIMALLOC_%s is set.\n"
            % (old.upper(), new.upper()))


def warn_retired(var):
    return "mimalloc: warning: environment option %s is deprecated and has no effect (ignored).\n" % var


# ---------------------------------------------------------------------------------------
def group_defaults(ctx):
    for static in (False, True):
        what = "defaults (%s library)" % ("static" if static else "shared")
        r = ctx.probe({}, what, ("dump", "aliases"), static=static)
        if r is None:
            continue
        out, err = r
        check_dump(ctx, out, {}, what)
        for alias, target in (("large_os_pages", "allow_large_os_pages"), ("eager_region_commit", "arena_eager_commit"),
                              ("reset_decommits", "purge_decommits"), ("reset_delay", "purge_delay"),
                              ("abandoned_page_reset", "abandoned_page_purge"), ("limit_os_alloc", "disallow_os_alloc")):
            ctx.check("alias %s %d\n" % (alias, INDEX[target]) in out, what,
                      "mi_option_%s should equal mi_option_%s (%d):\n%s" % (alias, target, INDEX[target], out))
        ctx.check("last 38\n" in out, what, "_mi_option_last should be 38")
        ctx.eq(err, "" if not ctx.args.debug else err, what, "stderr of a clean run")


def group_env_each(ctx):
    for name, _, _ in OPTIONS:
        i = INDEX[name]
        text, value = ENV_VALUES[name]
        what = "env-each %s=%s" % (env_name(name), text)
        r = ctx.probe({env_name(name): text}, what)
        if r is not None:
            check_dump(ctx, r[0], {i: value}, what)


def group_env_names(ctx):
    cases = [
        ({"mimalloc_verbose": "1"}, {INDEX["verbose"]: 1}),
        ({"MiMalloc_Max_Errors": "7"}, {INDEX["max_errors"]: 7}),
        ({"mimalloc_purge_delay": "0"}, {INDEX["purge_delay"]: 0}),
        ({"MIMALLOC_arena_RESERVE": "2G"}, {INDEX["arena_reserve"]: 2 * 1024 * 1024}),
        ({"mImAlLoC_aLlOw_ThP": "off"}, {INDEX["allow_thp"]: 0}),
        # near misses are not the variable (show_errors on: a near miss taken for the variable
        # would at least give an invalid-value warning)
        ({"MIMALLOC_SHOW_ERRORS": "1", "MIMALLOC_PURGE_DELAYX": "5", "MIMALLOC_PURGE_DELA": "6",
          "XMIMALLOC_PURGE_DELAY": "7", "MIMALLOC_PURGE_DELAY_": "8", "MIMALLOC_PURGE": "9", "MIMALLOC_": "1",
          "MIMALLOC": "1", "MIMALLOC_PURGE_DELAY ": "11", "PURGE_DELAY": "12", "MIMALLOC_OS_TAG2": "3",
          "MIMALLOC_VERBOSE1": "1", "MIMALLOC_MAX_ERRORSS": "5"}, {INDEX["show_errors"]: 1}),
    ]
    near = {"MIMALLOC_PURGE_DELAYX": "PURGE_DELAY", "MIMALLOC_PURGE_DELA": "PURGE_DELAY",
            "MIMALLOC_PURGE_DELAY_": "PURGE_DELAY", "MIMALLOC_PURGE": None, "MIMALLOC_": None,
            "MIMALLOC_PURGE_DELAY ": "PURGE_DELAY", "MIMALLOC_OS_TAG2": "OS_TAG",
            "MIMALLOC_VERBOSE1": "VERBOSE", "MIMALLOC_MAX_ERRORSS": "MAX_ERRORS"}
    for env, expect in cases:
        what = "env-names %s" % " ".join("%s=%s" % kv for kv in env.items())
        r = ctx.probe(env, what)
        if r is not None:
            check_dump(ctx, r[0], expect, what)
            if "MIMALLOC_SHOW_ERRORS" in env:
                want = sorted(warn_unknown(k, v) for k, v in near.items() if k in env)
                ctx.eq(sorted(r[1].splitlines(keepends=True)), want, what, "stderr")
    # all 38 at once, in mixed-case spellings (verbose/show_stats print to stderr: not checked)
    env, expect = {}, {}
    for k, (name, _, _) in enumerate(OPTIONS):
        text, value = ENV_VALUES[name]
        var = env_name(name)
        if k % 3 == 1:
            var = var.lower()
        elif k % 3 == 2:
            var = "".join(c.lower() if j % 2 else c for j, c in enumerate(var))
        env[var] = text
        expect[k] = value
    what = "env-names all 38 at once"
    r = ctx.probe(env, what)
    if r is not None:
        check_dump(ctx, r[0], expect, what)


def group_syntax(ctx):
    cases = []   # (option, text, stored)
    for t in ("1", "on", "ON", "On", "yes", "YES", "Yes", "true", "TRUE", "True", "tRuE", ""):
        cases.append(("deprecated_segment_cache", t, 1))
        cases.append(("guarded_precise", t, 1))
    for t in ("0", "off", "OFF", "Off", "no", "NO", "No", "false", "FALSE", "False", "fAlSe"):
        cases.append(("eager_commit", t, 0))
        cases.append(("allow_thp", t, 0))
    for t, v in (("-1", -1), ("0", 0), ("250", 250), ("  42", 42), ("+42", 42), ("-0", 0),
                 ("007", 7), ("-250", -250), ("2147483648", 2147483648), ("86400000", MS_MAX),
                 ("86400001", 86400001), ("-2", -2), ("99999999999999999999", LONG_MAX),
                 ("-99999999999999999999", LONG_MIN)):
        cases.append(("purge_delay", t, v))
    cases.append(("reserve_huge_os_pages_at", "-1", -1))
    cases.append(("reserve_huge_os_pages_at", "3", 3))
    cases.append(("max_warnings", "-1", -1))
    sizes = [("4096", 4), ("4096B", 4), ("4096b", 4), ("4097", 5), ("2", 1), ("1023", 1), ("1024", 1),
             ("1025B", 2), ("1", 1), ("YES", 1), ("on", 1), ("", 1), ("0", 0), ("no", 0), ("0K", 0),
             ("64k", 64), ("64K", 64), ("64KiB", 64), ("64kib", 64), ("64kb", 64), ("64KB", 64),
             ("1024K", 1024), ("512m", 524288), ("512M", 524288), ("512MiB", 524288), ("512mb", 524288),
             ("4G", 4194304), ("4g", 4194304), ("4GiB", 4194304), ("4GB", 4194304),
             ("1T", 1073741824), ("1TiB", 1073741824), ("2tb", 2147483648),
             ("-1", -1), ("-4096", -4096), ("-5G", -5), ("-1K", -1), (" 8k", 8), ("+8k", 8)]   # negative: clamped to 0
    for t, v in sizes:
        cases.append(("arena_reserve", t, v))
        cases.append(("reserve_os_memory", t, v))
    # values longer than 64 characters are truncated to 64
    cases.append(("purge_delay", "0" * 64 + "7", 0))
    cases.append(("purge_delay", "0" * 63 + "7", 7))
    for name, text, value in cases:
        what = "syntax %s=%r" % (env_name(name), text)
        r = ctx.probe({env_name(name): text, "MIMALLOC_SHOW_ERRORS": "1"}, what)
        if r is None:
            continue
        out, err = r
        stored = clamp(name, value)
        expect = {INDEX[name]: stored, INDEX["show_errors"]: 1}
        check_dump(ctx, out, expect, what)
        ctx.eq(err, "" if stored == value else warn_range(name, text[:64], stored), what,
               "stderr (a valid value in range gives no warning)")
        ctx.eq(model_parse(name, text), (stored, "" if stored == value else warn_range(name, text[:64], stored)),
               what, "the test's own model of the parser")


def group_syntax_clamp(ctx):
    # clamping of huge sizes: every spelling of "too much" gives the same value, the top of the
    # range (64 TiB in KiB), with a warning, and converts to bytes without overflow
    huge = ["99999999999T", "9223372036854775807", "9223372036854775807K", "9223372036854775807B",
            "99999999999999999999", "8388608T", "9007199254740991G"]
    results = {}
    for t in huge:
        what = "syntax clamp MIMALLOC_ARENA_RESERVE=%s" % t
        r = ctx.probe({"MIMALLOC_ARENA_RESERVE": t, "MIMALLOC_SHOW_ERRORS": "1"}, what)
        if r is None:
            continue
        vals = parse_dump(r[0])
        if 23 in vals:
            results[t] = vals[23]
        ctx.eq(r[1], warn_range("arena_reserve", t, KIB_MAX), what, "stderr")
    if results:
        ref = results[huge[0]]
        what = "syntax clamp"
        ctx.eq(ref[0], KIB_MAX, what, "clamped KiB value")
        ctx.check(ref[1] == ref[0] * 1024 and ref[1] <= (1 << 63) - 1, what,
                  "get_size %d of the saturated value %d KiB" % (ref[1], ref[0]))
        for t, v in results.items():
            ctx.check(v == ref, what, "MIMALLOC_ARENA_RESERVE=%s gives %r, but %s gives %r (all must saturate alike)"
                      % (t, v, huge[0], ref))


def group_unknown(ctx):
    # (env, expected warning lines) with show_errors on, then the same without show_errors:
    # only the near misses remain
    cases = [
        ({"MIMALLOC_SHOWSTATS": "1"}, [("MIMALLOC_SHOWSTATS", "SHOW_STATS")]),
        ({"MIMALLOC_show_stat": "1"}, [("MIMALLOC_show_stat", "SHOW_STATS")]),
        ({"MIMALLOC_PURGEDELAY": "5", "MIMALLOC_VERBSE": "1"},
         [("MIMALLOC_PURGEDELAY", "PURGE_DELAY"), ("MIMALLOC_VERBSE", "VERBOSE")]),
        ({"MIMALLOC_RESERVE_OS_MEMMORY": "1G"}, [("MIMALLOC_RESERVE_OS_MEMMORY", "RESERVE_OS_MEMORY")]),
        ({"MIMALLOC_SHOW_LEAK": "1"}, [("MIMALLOC_SHOW_LEAK", "SHOW_LEAKS")]),
        ({"MIMALLOC_RESETDELAY": "1"}, [("MIMALLOC_RESETDELAY", "RESET_DELAY")]),
        ({"MIMALLOC_FOO": "1", "MIMALLOC_PAGE_RESETS": "1"}, [("MIMALLOC_FOO", None), ("MIMALLOC_PAGE_RESETS", None)]),
        ({"MIMALLOC_THIS_IS_NOT_AN_OPTION": "x"}, [("MIMALLOC_THIS_IS_NOT_AN_OPTION", None)]),
        ({"MIMALLOC_TAG": "1"}, [("MIMALLOC_TAG", None)]),   # short name: distance 2 is not a typo
        # known names never warn: options, legacy names, settings outside the table
        ({"MIMALLOC_PURGE_DELAY": "5", "mimalloc_show_leaks": "0", "MIMALLOC_STATS_JSON": "",
          "MIMALLOC_STATS_LAYOUT": "mimalloc", "MIMALLOC_DISABLE_REDIRECT": "1", "MIMALLOC_RESET_DELAY": "7",
          "NOT_MIMALLOC_X": "1", "MIMALLOCX": "1"}, []),
    ]
    for env, warned in cases:
        for show in ("1", None):
            full = dict(env)
            if show is not None:
                full["MIMALLOC_SHOW_ERRORS"] = show
            what = "unknown %s (show_errors %s)" % (" ".join("%s=%s" % kv for kv in env.items()), show or "unset")
            r = ctx.probe(full, what)
            if r is None:
                continue
            lines = [l for l in r[1].splitlines(keepends=True) if "deprecated" not in l]
            want = [warn_unknown(v, sug) for v, sug in warned if show is not None or sug is not None]
            if show is None and ctx.args.debug:   # debug builds show errors by default
                want = [warn_unknown(v, sug) for v, sug in warned]
            ctx.eq(sorted(lines), sorted(want), what, "stderr")
    # show_errors=0 silences even a near miss; verbose shows everything
    what = "unknown MIMALLOC_SHOWSTATS=1 with show_errors=0"
    r = ctx.probe({"MIMALLOC_SHOWSTATS": "1", "MIMALLOC_SHOW_ERRORS": "0"}, what)
    if r is not None:
        ctx.eq(r[1], "", what, "stderr")


def group_ranges(ctx):
    # each option below its range and above it (where it has a bound), as the environment sets it
    for name, _, _ in OPTIONS:
        lo, hi = RANGES[name]
        if name in ("show_errors", "verbose", "show_stats", "max_warnings", "reserve_os_memory",
                    "reserve_huge_os_pages", "destroy_on_exit"):
            continue   # side effects on the output or the process; checked below
        tries = []
        if lo > LONG_MIN:
            tries.append((str(lo - 1), lo))
            tries.append(("-99999999999999999999", lo))
        if hi < LONG_MAX:
            tries.append((str(hi + 1), hi))
            tries.append(("99999999999999999999", hi))
        for text, value in tries:
            if OPTIONS[INDEX[name]][2] and text == str(hi + 1):
                text = "%dK" % (hi + 1)
            what = "ranges %s=%s" % (env_name(name), text)
            r = ctx.probe({env_name(name): text, "MIMALLOC_SHOW_ERRORS": "1"}, what)
            if r is not None:
                check_dump(ctx, r[0], {INDEX[name]: value, INDEX["show_errors"]: 1}, what)
                ctx.eq(r[1], warn_range(name, text, value), what, "stderr")
    # the user's example: a 100 TiB reservation becomes 64 TiB, said once
    what = "ranges MIMALLOC_RESERVE_OS_MEMORY=100TiB"
    r = ctx.probe({"MIMALLOC_RESERVE_OS_MEMORY": "100TiB", "MIMALLOC_ARENA_EAGER_COMMIT": "0",
                   "MIMALLOC_SHOW_ERRORS": "1"}, what)
    if r is not None:
        check_dump(ctx, r[0], {INDEX["reserve_os_memory"]: KIB_MAX, INDEX["show_errors"]: 1,
                               INDEX["arena_eager_commit"]: 0}, what)
        ctx.check(r[1].startswith(warn_range("reserve_os_memory", "100TiB", KIB_MAX)), what, "stderr: %r" % r[1])
    for name, text, value in (("verbose", "5", 2), ("show_stats", "-1", 0), ("destroy_on_exit", "3", 2),
                              ("reserve_huge_os_pages", "-2", 0)):
        what = "ranges %s=%s" % (env_name(name), text)
        r = ctx.probe({env_name(name): text, "MIMALLOC_SHOW_ERRORS": "1"}, what)
        if r is not None:
            check_dump(ctx, r[0], {INDEX[name]: value, INDEX["show_errors"]: 1}, what)
            ctx.check(warn_range(name, text, value) in r[1], what, "stderr: %r" % r[1][:400])
    # PURGE_DELAY=-5: purging is off, and the start-up line says so truthfully
    what = "ranges MIMALLOC_PURGE_DELAY=-5 (verbose)"
    r = ctx.probe({"MIMALLOC_PURGE_DELAY": "-5", "MIMALLOC_VERBOSE": "1"}, what)
    if r is not None:
        ctx.check(warn_range("purge_delay", "-5", -1) in r[1], what, "range warning: %r" % r[1][:300])
        ctx.check("purging is off (purge_delay=-1)" in r[1], what, "purge line: %r" % r[1][:600])
    # a huge delay: the arena delay is the product, printed without overflow
    what = "ranges MIMALLOC_PURGE_DELAY=99999999999999999999 (verbose)"
    r = ctx.probe({"MIMALLOC_PURGE_DELAY": "99999999999999999999", "MIMALLOC_ARENA_PURGE_MULT": "1000",
                   "MIMALLOC_VERBOSE": "1"}, what)
    if r is not None:
        ctx.check("after %d ms, free arena blocks after %d ms" % (MS_MAX, MS_MAX * 1000) in r[1], what,
                  "purge line: %r" % r[1][:800])


FUZZ_SKIP = ("show_errors", "verbose", "show_stats", "max_warnings", "reserve_os_memory",
             "reserve_huge_os_pages", "destroy_on_exit", "disallow_os_alloc", "allow_large_os_pages")


def fuzz_value(rng):
    kind = rng.randrange(9)
    if kind == 0:
        w = rng.choice(["1", "0", "true", "false", "yes", "no", "on", "off", "", "TRUE", "oN", "nO"])
        return w
    if kind == 1:   # small numbers
        return str(rng.randint(-3, 3000))
    if kind == 2:   # big numbers, maybe beyond the long range
        return ("-" if rng.random() < 0.3 else "") + str(rng.randint(0, 10 ** rng.randint(5, 25)))
    if kind == 3:   # with a unit
        return str(rng.randint(-5, 99999)) + rng.choice(["K", "M", "G", "T", "k", "m", "g", "t", "KB", "kib",
                                                          "MiB", "GB", "B", "b", "X", "KiBB", "Ki"])
    if kind == 4:   # signs and blanks
        return rng.choice([" ", "\t", "", "  "]) + rng.choice(["+", "-", "", "+-", "--"]) + str(rng.randint(0, 999))
    if kind == 5:   # junk
        alphabet = "0123456789+- kKmMgGtTbBiIxX.eE,_"
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
    if kind == 6:   # long values, truncated at 64
        return rng.choice(["0", "9", " "]) * rng.randint(60, 70) + str(rng.randint(0, 9))
    if kind == 7:   # near the bounds
        return str(rng.choice([-1, 0, 1, 100, 1000, 1024, 2000, 86400000, 1 << 31, 1 << 36, (1 << 63) - 1, -(1 << 63)])
                   + rng.randint(-1, 1))
    return rng.choice(["10ms", "0x10", "1e3", "1.5", "abc", "-", "+", "K", "1,000"])


def group_fuzz(ctx):
    rng = random.Random(20261125)
    names = [n for n, _, _ in OPTIONS if n not in FUZZ_SKIP]
    runs = 300 if not ctx.wrapper else 40
    for k in range(runs):
        chosen = rng.sample(names, rng.randint(1, 4))
        env = {"MIMALLOC_SHOW_ERRORS": "1"}
        expect = {INDEX["show_errors"]: 1}
        want = []
        for name in chosen:
            text = fuzz_value(rng)
            env[env_name(name)] = text
            m = model_parse(name, text)
            if m is None:
                want.append(warn_invalid(name))
            else:
                expect[INDEX[name]] = m[0]
                if m[1]:
                    want.append(m[1])
        # the guarded min/max pair keeps min <= max only through mi_option_set; the environment
        # stores each as parsed
        what = "fuzz #%d %s" % (k, " ".join("%s=%r" % kv for kv in env.items()))
        r = ctx.probe(env, what)
        if r is not None:
            check_dump(ctx, r[0], expect, what)
            ctx.eq(sorted(r[1].splitlines(keepends=True)), sorted(want), what, "stderr")


def group_invalid(ctx):
    bad = [("purge_delay", "10ms"), ("purge_delay", "64k"), ("purge_delay", "0x10"), ("purge_delay", "5 "),
           ("purge_delay", "1.5"), ("purge_delay", "abc"), ("purge_delay", "onn"), ("purge_delay", "-"),
           ("purge_delay", "1e3"), ("purge_delay", "10 ms"),
           ("arena_reserve", "0x10"), ("arena_reserve", "10ms"), ("arena_reserve", "64kk"),
           ("arena_reserve", "64 k"), ("arena_reserve", "K"), ("arena_reserve", "1.5G"),
           ("arena_reserve", "4GiBB"), ("arena_reserve", "4Gi"), ("arena_reserve", "4GBB"), ("arena_reserve", "4X"),
           ("reserve_os_memory", "12X"), ("reserve_os_memory", "M"),
           ("max_errors", "abc"), ("allow_thp", "maybe"), ("eager_commit", "yess"), ("eager_commit", "enabled"),
           ("os_tag", "x"), ("max_warnings", "lots")]
    for name, text in bad:
        what = "invalid %s=%r (show_errors)" % (env_name(name), text)
        r = ctx.probe({"MIMALLOC_SHOW_ERRORS": "1", env_name(name): text}, what)
        if r is not None:
            check_dump(ctx, r[0], {INDEX["show_errors"]: 1}, what)
            ctx.eq(r[1], warn_invalid(name), what, "stderr")
        what = "invalid %s=%r (show_errors=0)" % (env_name(name), text)
        r = ctx.probe({"MIMALLOC_SHOW_ERRORS": "0", env_name(name): text}, what)
        if r is not None:
            check_dump(ctx, r[0], {INDEX["show_errors"]: 0}, what)
            ctx.eq(r[1], "", what, "stderr")
    # lower-case variable name: the message still names mimalloc_<name>
    what = "invalid mimalloc_os_tag=x"
    r = ctx.probe({"MIMALLOC_SHOW_ERRORS": "1", "mimalloc_os_tag": "x"}, what)
    if r is not None:
        ctx.eq(r[1], warn_invalid("os_tag"), what, "stderr")
    # no show_errors variable at all: the user's own setting is wrong, so it is shown anyway
    what = "invalid MIMALLOC_PURGE_DELAY=10ms (no show_errors variable)"
    r = ctx.probe({"MIMALLOC_PURGE_DELAY": "10ms"}, what)
    if r is not None:
        check_dump(ctx, r[0], {}, what)
        ctx.eq(r[1], warn_invalid("purge_delay"), what, "stderr")
    # an invalid show_errors value: the default stays, and the warning shows
    what = "invalid MIMALLOC_SHOW_ERRORS=maybe"
    r = ctx.probe({"MIMALLOC_SHOW_ERRORS": "maybe"}, what)
    if r is not None:
        check_dump(ctx, r[0], {}, what)
        ctx.eq(r[1], warn_invalid("show_errors"), what, "stderr")
    # an invalid verbose value: verbose stays off; its warning follows the same rule (hidden
    # only by an explicit show_errors=0 or max_warnings=0)
    for env, shown in (({"MIMALLOC_VERBOSE": "maybe", "MIMALLOC_SHOW_ERRORS": "0"}, False),
                       ({"MIMALLOC_VERBOSE": "2x"}, True),
                       ({"MIMALLOC_VERBOSE": "maybe", "MIMALLOC_SHOW_ERRORS": "1"}, True),
                       ({"MIMALLOC_VERBOSE": "maybe", "MIMALLOC_SHOW_ERRORS": "1", "MIMALLOC_MAX_WARNINGS": "0"}, False)):
        what = "invalid %s" % " ".join("%s=%s" % kv for kv in env.items())
        r = ctx.probe(env, what)
        if r is not None:
            expect = {INDEX["max_warnings"]: 0} if "MIMALLOC_MAX_WARNINGS" in env else {}
            if "MIMALLOC_SHOW_ERRORS" in env:
                expect[INDEX["show_errors"]] = int(env["MIMALLOC_SHOW_ERRORS"])
            check_dump(ctx, r[0], expect, what)
            ctx.eq(r[1], warn_invalid("verbose") if shown else "", what, "stderr")
    # several invalid values: one line each
    env = {"MIMALLOC_SHOW_ERRORS": "1", "MIMALLOC_PURGE_DELAY": "x", "MIMALLOC_OS_TAG": "y",
           "MIMALLOC_ARENA_RESERVE": "z", "MIMALLOC_GENERIC_COLLECT": "1,000"}
    what = "invalid four at once"
    r = ctx.probe(env, what)
    if r is not None:
        check_dump(ctx, r[0], {INDEX["show_errors"]: 1}, what)
        lines = r[1].splitlines(keepends=True)
        ctx.eq(sorted(lines), sorted(warn_invalid(n) for n in ("purge_delay", "os_tag", "arena_reserve", "generic_collect")),
               what, "stderr lines")


def group_legacy(ctx):
    for old, new, text, value in LEGACY:
        i = INDEX[new]
        what = "legacy MIMALLOC_%s=%s" % (old.upper(), text)
        r = ctx.probe({"MIMALLOC_SHOW_ERRORS": "1", "MIMALLOC_" + old.upper(): text}, what)
        if r is not None:
            check_dump(ctx, r[0], {INDEX["show_errors"]: 1, i: value}, what)
            ctx.eq(r[1], warn_legacy(old, new), what, "stderr")
        # reported without show_errors, like a misspelled name
        what = "legacy MIMALLOC_%s=%s (show_errors unset)" % (old.upper(), text)
        r = ctx.probe({"MIMALLOC_" + old.upper(): text}, what)
        if r is not None:
            check_dump(ctx, r[0], {i: value}, what)
            ctx.eq(r[1], warn_legacy(old, new), what, "stderr")
        what = "legacy MIMALLOC_%s=%s (show_errors=0)" % (old.upper(), text)
        r = ctx.probe({"MIMALLOC_SHOW_ERRORS": "0", "MIMALLOC_" + old.upper(): text}, what)
        if r is not None:
            check_dump(ctx, r[0], {i: value, INDEX["show_errors"]: 0}, what)
            ctx.eq(r[1], "", what, "stderr")
        # both names: the new one wins, and the legacy one is reported as ignored
        new_text, new_value = {"arena_eager_commit": ("1", 1), "purge_decommits": ("1", 1),
                               "allow_large_os_pages": ("0", 0), "abandoned_page_purge": ("0", 0),
                               "purge_delay": ("33", 33), "disallow_os_alloc": ("0", 0),
                               "purge_extend_delay": ("4", 4)}[new]
        for order in (0, 1):
            pairs = [("MIMALLOC_" + old.upper(), text), (env_name(new), new_text)]
            if order:
                pairs.reverse()
            env = {"MIMALLOC_SHOW_ERRORS": "1"}
            env.update(pairs)
            what = "legacy both %s" % " ".join("%s=%s" % kv for kv in pairs)
            r = ctx.probe(env, what)
            if r is not None:
                check_dump(ctx, r[0], {INDEX["show_errors"]: 1, i: new_value}, what)
                ctx.eq(r[1], warn_legacy_ignored(old, new), what, "stderr")
        # the new name with a bad value still hides the legacy one
        what = "legacy MIMALLOC_%s=%s with %s=bad" % (old.upper(), text, env_name(new))
        r = ctx.probe({"MIMALLOC_SHOW_ERRORS": "1", "MIMALLOC_" + old.upper(): text, env_name(new): "bad"}, what)
        if r is not None:
            check_dump(ctx, r[0], {INDEX["show_errors"]: 1}, what)
            ctx.eq(r[1], warn_legacy_ignored(old, new) + warn_invalid(new), what, "stderr")
    # mimalloc's retired names do nothing: always reported (show_errors=0 silences them)
    for var in ("MIMALLOC_PAGE_RESET", "MIMALLOC_SEGMENT_CACHE", "mimalloc_segment_reset"):
        for show in (None, "1", "0"):
            env = {var: "1"}
            if show is not None:
                env["MIMALLOC_SHOW_ERRORS"] = show
            what = "retired %s=1 (show_errors %s)" % (var, show or "unset")
            r = ctx.probe(env, what)
            if r is not None:
                check_dump(ctx, r[0], {} if show is None else {INDEX["show_errors"]: int(show)}, what)
                ctx.eq(r[1], "" if show == "0" else warn_retired(var), what, "stderr")
    # case-insensitive legacy name
    what = "legacy mimalloc_reset_delay=3"
    r = ctx.probe({"mimalloc_reset_delay": "3", "MIMALLOC_SHOW_ERRORS": "1"}, what)
    if r is not None:
        check_dump(ctx, r[0], {INDEX["purge_delay"]: 3, INDEX["show_errors"]: 1}, what)
        ctx.eq(r[1], warn_legacy("reset_delay", "purge_delay"), what, "stderr")
    # legacy name with an invalid value: deprecation, then the invalid-value warning
    what = "legacy MIMALLOC_RESET_DELAY=10ms"
    r = ctx.probe({"MIMALLOC_RESET_DELAY": "10ms", "MIMALLOC_SHOW_ERRORS": "1"}, what)
    if r is not None:
        check_dump(ctx, r[0], {INDEX["show_errors"]: 1}, what)
        ctx.eq(r[1], warn_legacy("reset_delay", "purge_delay") + warn_invalid("purge_delay"), what, "stderr")


API_ENVS = {
    "basic": {},
    "env": {"MIMALLOC_PURGE_DELAY": "5", "MIMALLOC_USE_NUMA_NODES": "2",
            "MIMALLOC_MAX_SEGMENT_RECLAIM": "bogus", "MIMALLOC_ABANDONED_PAGE_PURGE": "1",
            "MIMALLOC_GENERIC_COLLECT": "500"},
    "early": {"MIMALLOC_EAGER_COMMIT_DELAY": "3", "MIMALLOC_ARENA_PURGE_MULT": "6",
              "MIMALLOC_PURGE_DELAY": "5", "MIMALLOC_ABANDONED_RECLAIM_ON_FREE": "0",
              "MIMALLOC_DISALLOW_ARENA_ALLOC": "1"},
}


def run_api(ctx, scenario):
    for static in (False, True):
        prog = ctx.args.api_static if static else ctx.args.api
        env = dict(API_ENVS[scenario])
        env["MIMALLOC_SHOW_ERRORS"] = "0"
        what = "api %s (%s library)" % (scenario, "static" if static else "shared")
        r = ctx.run(prog, [scenario], env, what)
        if r is not None:
            ctx.check("PASS options-api" in r[0], what, "opt-api failed:\n" + r[0] + r[1])


def message_lines_ok(ctx, err, what, allow_stats=False):
    """Every stderr line is a `mimalloc: ` message, except (if allowed) one contiguous
    statistics block: mimalloc's layout starting with its `heap stats:` header, or the
    readable layout's sections between its `mimalloc: peak RSS` summary line and its closing
    `(rows that are zero ...)` line (docs/statistics.md)."""
    lines = err.splitlines()
    other = [k for k, l in enumerate(lines) if not l.startswith("mimalloc: ") and l != "MARK"]
    if not other:
        return
    if allow_stats and other == list(range(other[0], other[-1] + 1)):
        if "heap stats:" in lines[other[0]]:
            return
        if (other[0] > 0 and lines[other[0] - 1].startswith("mimalloc: peak RSS ") and
                lines[other[-1]].startswith("(rows that are zero are not shown")):
            return
    ctx.fail(what, "stderr lines without the `mimalloc: ` prefix: %r" % [lines[k] for k in other][:5])


def cap_messages(out):
    """The messages the capture function received, in order (None: called with a wrong arg)."""
    msgs = []
    for line in out.splitlines():
        if line.startswith("cap "):
            msgs.append(re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), line[4:]))
        elif line == "cap-badarg":
            msgs.append(None)
    return msgs


def check_print_lines(ctx, lines, values, what):
    """lines: the option lines of mi_options_print in order; values: index -> value."""
    opt_lines = [l for l in lines if l.startswith("mimalloc: option '")]
    expect = ["mimalloc: option '%s': %d%s\n" % (name, values[i], " KiB" if kib else "")
              for i, (name, _, kib) in enumerate(OPTIONS)]
    expect += ["mimalloc: option '%s': %s\n" % (name, default) for name, default in EXT_OPTIONS]
    ctx.eq(opt_lines, expect, what, "option lines of mi_options_print")


def group_output(ctx):
    # (a) buffered early output replayed on registration; later output goes only to the
    #     registered function, one call per line; unregistering restores stderr
    env = {"MIMALLOC_SHOW_ERRORS": "1", "MIMALLOC_PURGE_DELAY": "10ms"}
    what = "output register/replay"
    r = ctx.probe(env, what, ("mark", "register", "warn", "err", "print", "mark", "unregister", "warn", "mark"))
    if r is not None:
        out, err = r
        msgs = cap_messages(out)
        ctx.check(None not in msgs, what, "the output function received the wrong arg")
        msgs = [m for m in msgs if m is not None]
        ctx.check(len(msgs) >= 1 and msgs[0] == warn_invalid("purge_delay"), what,
                  "first call should replay the early warning exactly, got %r" % (msgs[:1],))
        later = msgs[1:]
        for m in later:
            ctx.check(m.startswith("mimalloc: ") and m.endswith("\n") and m.count("\n") == 1, what,
                      "each message must be one `mimalloc: ` line per call, got %r" % m)
        ctx.check(len(later) >= 1 and later[0].startswith("mimalloc: warning: ") and "deprecated" in later[0], what,
                  "the warning after registration should reach the output function: %r" % later[:1])
        ctx.check(any(m.startswith("mimalloc: error: ") for m in later), what,
                  "the error after registration should reach the output function")
        check_print_lines(ctx, later, {**{i: d for i, d in enumerate(ctx.defaults)}, INDEX["show_errors"]: 1}, what)
        parts = err.split("MARK\n")
        if ctx.check(len(parts) == 4, what, "stderr marks: %r" % err):
            ctx.eq(parts[0], warn_invalid("purge_delay"), what, "stderr before registration")
            ctx.eq(parts[1], "", what, "stderr while an output function is registered")
            ctx.check(parts[2].startswith("mimalloc: warning: ") and "deprecated" in parts[2]
                      and parts[2].count("\n") == 1, what, "stderr after unregistering: %r" % parts[2])
            ctx.eq(parts[3], "", what, "stderr at exit")
        ctx.eq(out.count("warned 0 0\n"), 2, what, "mi_reserve_huge_os_pages(0) results")
        message_lines_ok(ctx, err, what)

    # (b) max_warnings: 4 invalid values + 2 API warnings = 6 warnings
    bad = {"MIMALLOC_PURGE_DELAY": "x", "MIMALLOC_OS_TAG": "y", "MIMALLOC_MAX_SEGMENT_RECLAIM": "z",
           "MIMALLOC_ARENA_PURGE_MULT": "w"}
    for limit, shown in (("2", 2), ("0", 0), ("1", 1), ("-1", 6), ("100", 6)):
        env = {"MIMALLOC_SHOW_ERRORS": "1", "MIMALLOC_MAX_WARNINGS": limit, **bad}
        what = "output MIMALLOC_MAX_WARNINGS=%s" % limit
        r = ctx.probe(env, what, ("warn", "warn", "dump"))
        if r is not None:
            out, err = r
            lines = err.splitlines(keepends=True)
            ctx.eq(len(lines), shown, what, "number of warning lines (%r)" % lines)
            ctx.check(all(l.startswith("mimalloc: warning: ") for l in lines), what, "lines: %r" % lines)
            invalid = [l for l in lines if "invalid value" in l]
            ctx.eq(len(set(invalid)), len(invalid), what, "distinct invalid-value warnings")
            check_dump(ctx, out, {INDEX["show_errors"]: 1, INDEX["max_warnings"]: int(limit)}, what)
    # verbose lifts the limit (and needs no show_errors)
    what = "output MIMALLOC_MAX_WARNINGS=2 with MIMALLOC_VERBOSE=1"
    r = ctx.probe({"MIMALLOC_VERBOSE": "1", "MIMALLOC_SHOW_ERRORS": "0", "MIMALLOC_MAX_WARNINGS": "2", **bad}, what, ("warn", "warn"))
    if r is not None:
        ctx.eq(len([l for l in r[1].splitlines() if l.startswith("mimalloc: warning: ")]), 6, what, "warning lines")
        message_lines_ok(ctx, r[1], what, allow_stats=True)
    # show_errors off: no warnings at all
    what = "output warnings without show_errors"
    r = ctx.probe({"MIMALLOC_SHOW_ERRORS": "0", **bad}, what, ("warn", "err"))
    if r is not None:
        ctx.eq(r[1], "", what, "stderr")
        ctx.check("err NULL\n" in r[0], what, "mi_malloc(PTRDIFF_MAX) should fail")

    # (c) max_errors
    for limit, exact in (("2", 2), ("0", 0), ("1", 1)):
        what = "output MIMALLOC_MAX_ERRORS=%s" % limit
        r = ctx.probe({"MIMALLOC_SHOW_ERRORS": "1", "MIMALLOC_MAX_ERRORS": limit}, what, ("err",) * 5)
        if r is not None:
            lines = r[1].splitlines()
            ctx.eq(len(lines), exact, what, "number of error lines (%r)" % lines)
            ctx.check(all(l.startswith("mimalloc: error: ") for l in lines), what, "lines: %r" % lines)
            ctx.eq(r[0].count("err NULL\n"), 5, what, "failed allocations")
    what = "output MIMALLOC_MAX_ERRORS=-1"
    r = ctx.probe({"MIMALLOC_SHOW_ERRORS": "1", "MIMALLOC_MAX_ERRORS": "-1"}, what, ("err",) * 40)
    if r is not None:
        lines = r[1].splitlines()
        ctx.check(len(lines) >= 40, what, "unlimited errors: only %d lines" % len(lines))
        ctx.check(all(l.startswith("mimalloc: error: ") for l in lines), what, "lines: %r" % lines[:3])

    # (d) everything on stderr is `mimalloc: ` lines (statistics excepted) in a verbose run
    what = "output verbose prefixes"
    r = ctx.probe({"MIMALLOC_VERBOSE": "1", "MIMALLOC_PURGE_DELAY": "bad"}, what, ("warn", "err", "print", "dump"))
    if r is not None:
        message_lines_ok(ctx, r[1], what, allow_stats=True)
        ctx.check(warn_invalid("purge_delay") in r[1], what, "the invalid-value warning is missing")
        check_dump(ctx, r[0], {INDEX["verbose"]: 1}, what)

    # (e) mi_options_print on stderr, with values from the environment
    env = {"MIMALLOC_PURGE_DELAY": "250", "MIMALLOC_ARENA_RESERVE": "64M", "MIMALLOC_RESERVE_OS_MEMORY": "1G",
           "MIMALLOC_SHOW_ERRORS": "0"}
    what = "output mi_options_print"
    r = ctx.probe(env, what, ("print",))
    if r is not None:
        values = {i: d for i, d in enumerate(ctx.defaults)}
        values.update({INDEX["purge_delay"]: 250, INDEX["arena_reserve"]: 65536,
                       INDEX["reserve_os_memory"]: 1048576, INDEX["show_errors"]: 0})
        lines = r[1].splitlines(keepends=True)
        check_print_lines(ctx, lines, values, what)
        for l in ("mimalloc: option 'purge_delay': 250\n", "mimalloc: option 'arena_reserve': 65536 KiB\n",
                  "mimalloc: option 'reserve_os_memory': 1048576 KiB\n", "mimalloc: option 'eager_commit': 1\n"):
            ctx.check(l in lines, what, "missing line %r" % l)
        message_lines_ok(ctx, r[1], what)
        first_opt = next((k for k, l in enumerate(lines) if l.startswith("mimalloc: option ")), None)
        ctx.check(first_opt is not None and first_opt >= 1 and "2.4.1" in lines[first_opt - 1], what,
                  "a version line (2.4.1) should precede the option lines: %r" % lines[:2])


def group_verbose_startup(ctx):
    env = {"MIMALLOC_VERBOSE": "1", "MIMALLOC_PURGE_DELAY": "250", "MIMALLOC_ARENA_RESERVE": "64M"}
    what = "MIMALLOC_VERBOSE=1 lists the options at start-up"
    r = ctx.probe(env, what, ())
    if r is None:
        return
    lines = r[1].splitlines(keepends=True)
    values = {i: d for i, d in enumerate(ctx.defaults)}
    values.update({INDEX["verbose"]: 1, INDEX["purge_delay"]: 250, INDEX["arena_reserve"]: 65536})
    check_print_lines(ctx, lines, values, what)
    for l in ("mimalloc: option 'verbose': 1\n", "mimalloc: option 'purge_delay': 250\n",
              "mimalloc: option 'arena_reserve': 65536 KiB\n", "mimalloc: option 'max_errors': 32\n"):
        ctx.eq(lines.count(l), 1, what, "occurrences of %r" % l)
    message_lines_ok(ctx, r[1], what, allow_stats=True)
    ctx.check(not any(" os: " in l for l in lines), what, "level 1 has no trace lines")
    # level 2 adds a trace line per OS call: the first arena (64 MiB here) is one of them
    env["MIMALLOC_VERBOSE"] = "2"
    what = "MIMALLOC_VERBOSE=2 traces OS calls"
    r = ctx.probe(env, what, ("alloc",))
    if r is None:
        return
    trace = [l for l in r[1].splitlines() if l.startswith("mimalloc: os: ")]
    ctx.check(any(re.match(r"^mimalloc: os: mapped 65536 KiB at 0x[0-9a-f]+ \((committed|reserved)\)$", l)
                  for l in trace), what, "no trace of the 64 MiB arena mapping: %r" % trace[:10])
    ctx.check("mimalloc: option 'verbose': 2\n" in r[1], what, "verbose 2 in the option list")


def group_print_levels(ctx):
    what = "mi_options_print names the build and prints debug, secure and tracking levels"
    r = ctx.probe({"MIMALLOC_SHOW_ERRORS": "0"}, what, ("print",))
    if r is None:
        return
    lines = r[1].splitlines()
    for word in ("debug", "secure", "track"):
        ctx.check(any(l.startswith("mimalloc: ") and word in l and "option '" not in l for l in lines), what,
                  "no %s line in %r" % (word, lines[-4:]))
    head = [l for l in lines if "independent implementation of the mimalloc" in l]
    ctx.check(len(head) == 1 and head[0].endswith(" API; %s build)" % ctx.args.build), what,
              "the version line should name the %s build: %r" % (ctx.args.build, head))
    tracking = {"valgrind": "valgrind", "asan": "asan"}.get(ctx.args.build, "none")
    ctx.check("mimalloc: mem tracking: %s" % tracking in lines, what,
              "expected the line 'mem tracking: %s' in %r" % (tracking, lines[-4:]))
    # the start-up line (MIMALLOC_VERBOSE=1) names the build too
    what = "the start-up line names the %s build" % ctx.args.build
    r = ctx.probe({"MIMALLOC_VERBOSE": "1"}, what)
    if r is None:
        return
    start = [l for l in r[1].splitlines() if l.startswith("mimalloc: allocator ")]
    ctx.check(len(start) == 1 and ("; %s build" % ctx.args.build) in start[0], what,
              "expected one 'allocator active/loaded' line naming the %s build: %r" % (ctx.args.build, start))


def group_thread_prefix(ctx):
    what = "messages from another thread carry `thread 0x<id>: `"
    r = ctx.probe({"MIMALLOC_SHOW_ERRORS": "1"}, what, ("warn", "twarn"))
    if r is None:
        return
    lines = r[1].splitlines()
    if ctx.eq(len(lines), 2, what, "warning lines (%r)" % lines):
        ctx.check(lines[0].startswith("mimalloc: warning: ") and "thread 0x" not in lines[0], what,
                  "main thread: %r" % lines[0])
        ctx.check(re.match(r"^mimalloc: (warning: )?thread 0x[0-9a-f]+: ", lines[1]) is not None, what,
                  "second thread: %r" % lines[1])


GROUPS = {
    "defaults": group_defaults, "env-each": group_env_each, "env-names": group_env_names,
    "unknown": group_unknown, "ranges": group_ranges, "fuzz": group_fuzz,
    "syntax": group_syntax, "syntax-clamp": group_syntax_clamp, "invalid": group_invalid,
    "legacy": group_legacy, "api-basic": lambda ctx: run_api(ctx, "basic"),
    "api-env": lambda ctx: run_api(ctx, "env"), "api-early": lambda ctx: run_api(ctx, "early"),
    "output": group_output, "verbose-startup": group_verbose_startup,
    "print-levels": group_print_levels, "thread-prefix": group_thread_prefix,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", required=True)
    ap.add_argument("--probe-static", required=True)
    ap.add_argument("--api", required=True)
    ap.add_argument("--api-static", required=True)
    ap.add_argument("--build", default="release",
                    help="the build's name as the start-up line gives it (release, debug, secure, debug secure, valgrind, asan)")
    ap.add_argument("--wrapper", default="")
    ap.add_argument("groups", nargs="+")
    args = ap.parse_args()
    # debug and secure builds show errors by default
    args.debug = ("debug" in args.build.split() or "secure" in args.build.split())
    ctx = Ctx(args)
    for g in args.groups:
        if g == "all":
            for name, fn in GROUPS.items():
                fn(ctx)
        elif g in GROUPS:
            GROUPS[g](ctx)
        else:
            print("unknown group %s" % g)
            return 2
    for f in ctx.failures[:60]:
        print("FAIL " + f)
    if len(ctx.failures) > 60:
        print("... %d more failures" % (len(ctx.failures) - 60))
    status = "FAIL" if ctx.failures else "PASS"
    print("%s options %s: %d runs, %d checks, %d failures" % (status, " ".join(args.groups), ctx.runs, ctx.checks, len(ctx.failures)))
    return 1 if ctx.failures else 0


if __name__ == "__main__":
    sys.exit(main())
