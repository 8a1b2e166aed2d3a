# SPDX-License-Identifier: MIT
"""The launcher: a small C program between python and each measured program, which times it
and reads its rusage with wait4 (suite, ab)."""
import os
import signal
import subprocess
import tempfile

from benchlib.common import run

# A tiny launcher between this script and each program. A process forked from python inherits
# python's RSS in its ru_maxrss (Linux keeps the high-water mark of the pre-exec memory), which
# would put a floor of ~30 MiB under every measurement; forked from this small launcher, the
# floor is the launcher's ~1 MiB. It forks, sets LD_PRELOAD in the child only, execs the
# program, wait4()s for it and writes "<wait status> <ru_maxrss KiB> <wall seconds>" to a file.
LAUNCHER_C = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "usage: launch OUTFILE PRELOAD PROGRAM [ARGS...]\n"); return 2; }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pid_t pid = fork();
  if (pid < 0) { perror("fork"); return 126; }
  if (pid == 0) {
    if (argv[2][0] != 0) setenv("LD_PRELOAD", argv[2], 1);
    execv(argv[3], argv + 3);
    perror("execv");
    _exit(127);
  }
  int st = 0;
  struct rusage ru;
  while (wait4(pid, &st, 0, &ru) < 0) {
    if (errno != EINTR) { perror("wait4"); return 126; }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  FILE *f = fopen(argv[1], "w");
  if (f == NULL) { perror(argv[1]); return 126; }
  fprintf(f, "%d %ld %.6f %.6f %ld\n", st, ru.ru_maxrss,
          (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9,
          (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6,
          ru.ru_minflt);
  fclose(f);
  if (WIFSIGNALED(st)) {
    signal(WTERMSIG(st), SIG_DFL);
    raise(WTERMSIG(st));
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 126;
}
"""


def build(compiler, tmp):
    src = os.path.join(tmp, "launch.c")
    exe = os.path.join(tmp, "launch")
    with open(src, "w") as f:
        f.write(LAUNCHER_C)
    r = run([compiler, "-std=c11", "-O2", "-Wall", "-Wextra", src, "-o", exe])
    if r.returncode != 0:
        raise RuntimeError("cannot build the launcher:\n" + r.stderr)
    return exe


def run_program(launcher, exe, argv, env, timeout, tmp, extra=None):
    """(wall_s, problem text or None, ru_maxrss KiB, stdout, stderr) of one run of exe, started
    by the launcher with env (whose LD_PRELOAD goes to the program only). extra (a dict), when
    given, gets the program's cpu_s (user + system) and minor page faults (minflt)."""
    env = dict(env)
    preload = env.pop("LD_PRELOAD", "")
    stat_file = os.path.join(tmp, "launch-stat.txt")
    if os.path.exists(stat_file):
        os.remove(stat_file)
    with tempfile.TemporaryFile("w+", dir=tmp) as out, tempfile.TemporaryFile("w+", dir=tmp) as err:
        proc = subprocess.Popen([launcher, stat_file, preload, exe] + argv, env=env, stdout=out,
                                stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the launcher and the program
            except OSError:
                pass
            proc.wait()
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    wall, maxrss, status = None, None, None
    try:
        with open(stat_file) as f:
            st, rss, w, cpu, flt = f.read().split()
        status, maxrss, wall = int(st), int(rss), float(w)
        if extra is not None:
            extra.update(cpu_s=float(cpu), minflt=int(flt))
    except (OSError, ValueError):
        pass
    if timed_out:
        problem = "timed out after %.0f s" % timeout
    elif status is None:
        problem = "the launcher failed (exit %s): %s" % (proc.returncode, stderr.strip()[-300:])
    elif os.WIFSIGNALED(status):
        try:
            problem = "killed by %s" % signal.Signals(os.WTERMSIG(status)).name
        except ValueError:
            problem = "killed by signal %d" % os.WTERMSIG(status)
    elif os.WEXITSTATUS(status) != 0:
        problem = "exit status %d" % os.WEXITSTATUS(status)
    else:
        problem = None
    return wall, problem, maxrss, stdout, stderr

