#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Each source file of the library compiles on its own.

The library is one translation unit (src/static.c includes every src/*.c), so a file that
forgets an include, or uses a static function of another file, still builds there. This check
takes the build's own command for src/static.c (compile_commands.json), asks the preprocessor
which .c files that build's static.c includes (so the configuration's files: prim/unix.c or
prim/failinject.c, ...), and compiles each of them alone with the same flags (and
_GNU_SOURCE, which static.c defines first) and -fsyntax-only, with implicit declarations as errors.

Usage: compile-alone.py BUILD_DIR
Exit: 0 every file compiles alone; 1 with the compiler's errors for each file that does not;
77 (skipped) when the build has no compile_commands.json (a generator that writes none).
"""
import json, os, shlex, subprocess, sys


def static_command(build):
    path = os.path.join(build, "compile_commands.json")
    if not os.path.exists(path):
        return None
    for entry in json.load(open(path)):
        if entry["file"].replace("\\", "/").endswith("src/static.c"):
            args = entry.get("arguments") or shlex.split(entry["command"])
            return entry["directory"], args, entry["file"]
    return None


def base_args(args, source):
    """The command without its output, its dependency file and the source itself."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
        elif a in ("-c", "-MD", "-MMD") or a == source or a.endswith("src/static.c"):
            pass
        else:
            out.append(a)
    return out


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    found = static_command(sys.argv[1])
    if found is None:
        print("compile-alone.py: no compile_commands.json entry for src/static.c: skipped")
        return 77
    cwd, args, source = found
    cmd = base_args(args, source)
    deps = subprocess.run(cmd + ["-M", "-MG", source], cwd=cwd, capture_output=True, text=True)
    if deps.returncode != 0:
        print(deps.stderr)
        return 1
    srcdir = os.path.dirname(os.path.abspath(os.path.join(cwd, source)))
    files = []
    for tok in deps.stdout.replace("\\\n", " ").split():
        tok = os.path.abspath(os.path.join(cwd, tok))
        if tok.endswith(".c") and tok.startswith(srcdir + os.sep) and os.path.basename(tok) != "static.c":
            files.append(tok)
    if len(files) < 10:
        print(f"compile-alone.py: static.c includes only {len(files)} .c files: the dependency list was not read right")
        return 1
    bad = 0
    for f in files:
        # -D_GNU_SOURCE: static.c defines it before its first include, for every file
        r = subprocess.run(cmd + ["-D_GNU_SOURCE", "-fsyntax-only", "-Werror=implicit-function-declaration", f],
                           cwd=cwd, capture_output=True, text=True)
        if r.returncode != 0:
            bad += 1
            print(f"--- {os.path.relpath(f, srcdir)} does not compile on its own:\n{r.stderr}")
    print(f"compile-alone.py: {len(files)} files of static.c, each compiled alone: {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
