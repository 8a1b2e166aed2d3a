# SPDX-License-Identifier: MIT
"""What every subcommand uses: paths, messages, running a command, the clean environment of a
measured run, the RESULT line of the programs, the machine and its load."""
import os
import platform
import shutil
import socket
import subprocess
import sys

LIB_DIR = os.path.dirname(os.path.abspath(__file__))
BENCH_DIR = os.path.dirname(LIB_DIR)
REPO_DIR = os.path.dirname(BENCH_DIR)
RESULTS_DIR = os.path.join(BENCH_DIR, "results")
# peers' sources and builds, real programs' inputs: never in the repository
CACHE_DIR = os.path.join(os.path.expanduser("~"), ".cache", "alloc-bench")
CPUS = os.cpu_count() or 1


def note(msg):
    print(msg, file=sys.stderr, flush=True)


def run(cmd, env=None, timeout=600):
    return subprocess.run(cmd, env=env, timeout=timeout, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)


def cc():
    return os.environ.get("CC", "cc")


def clean_env():
    """The caller's environment without anything that tunes or replaces an allocator."""
    drop = ("MIMALLOC_", "MALLOC_", "_RJEM_", "JE_MALLOC_")
    return {k: v for k, v in os.environ.items()
            if not k.startswith(drop) and k not in ("LD_PRELOAD", "GLIBC_TUNABLES")}


def parse_result(stdout):
    """The key=value fields of the programs' `RESULT ...` line, or None."""
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            return dict(f.split("=", 1) for f in line.split()[1:] if "=" in f)
    return None


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return -1.0


def hms(s):
    s = int(round(s))
    return "%d:%02d:%02d" % (s // 3600, s // 60 % 60, s % 60) if s >= 3600 else \
        "%d:%02d" % (s // 60, s % 60)


def _read_first(path, prefix):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(prefix):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _os_name():
    try:
        with open("/etc/debian_version") as f:
            debian = f.read().strip()
    except OSError:
        debian = None
    pretty = None
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    pretty = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return ("%s (debian_version %s)" % (pretty, debian)) if debian else (pretty or "?")


def machine(compiler):
    """The machine a result was measured on, as stored in the suite's results."""
    mem_kib = _read_first("/proc/meminfo", "MemTotal")
    try:
        ccv = run([compiler, "--version"]).stdout.splitlines()[0] if shutil.which(compiler) \
            else compiler
    except (OSError, subprocess.SubprocessError, IndexError):
        ccv = compiler
    return dict(cpu=_read_first("/proc/cpuinfo", "model name") or platform.processor() or "?",
                cores=CPUS,
                memory="%.1f GiB" % (int(mem_kib.split()[0]) / 1048576.0) if mem_kib else "?",
                kernel="%s %s" % (platform.system(), platform.release()),
                os=_os_name(), compiler=ccv, python=platform.python_version(),
                host=socket.gethostname())


def machine_info(compiler):
    """One line: CPU, CPUs, kernel release, compiler (micro and mem reports)."""
    m = machine(compiler)
    return "%s, %d CPUs, %s, %s" % (m["cpu"], m["cores"], platform.release(), m["compiler"])


def add_build_dir_option(parser):
    """--build-dir, the same in every subcommand that runs our library."""
    parser.add_argument("--build-dir", default=os.path.join(REPO_DIR, "build"),
                        help="build directory of our library (default: <repo>/build)")


def finish_run_args(parser, args):
    """The repetitions, timeout and selections of a suite-like subcommand (suite, scenarios):
    --reps (3; 1 with --quick), --timeout (300 s; 60 with --quick), --only and --allocators
    split on commas."""
    if args.reps is not None and args.reps < 1:
        parser.error("--reps must be at least 1")
    args.reps = args.reps or (1 if args.quick else 3)
    args.timeout = args.timeout or (60.0 if args.quick else 300.0)
    args.only = [x for x in args.only.split(",") if x]
    args.allocators = set(x for x in args.allocators.split(",") if x)


def parse_with_command(parser, argv):
    """parser's options from the part of argv before "--", and the program after it as
    args.command, its first word resolved on PATH (an error through the parser otherwise)."""
    i = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:i])
    args.command = argv[i + 1:]
    if not args.command:
        parser.error("no program after --")
    exe = shutil.which(args.command[0])
    if exe is None:
        parser.error("no such program: %s" % args.command[0])
    args.command[0] = os.path.abspath(exe)
    return args
