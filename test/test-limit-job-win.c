/* SPDX-License-Identifier: MIT */
/* test-limit-job-win.c -- Windows: the memory limit (src/limit.c) of the job object the process
   is in (src/prim/windows.c, _mi_prim_job_limits), Windows' counterpart of a cgroup's limit.

   Usage: test-limit-job-win [fake|real]
     fake  (default) MIMALLOC_TEST_JOB_LIMIT="PROCESS,JOB" stands in for the job, changed while
           the program runs (the limit is read again once a second): the lesser of the two is
           the limit, a 0 is "not set", none and malformed values are no limit; the source on
           mi_options_print's "memory limit:" line; MIMALLOC_MEMORY_LIMIT as a share of it; and
           with MIMALLOC_MEMORY_LIMIT_HARD on, 1 MiB blocks fail with ENOMEM at the job's limit.
     real  a job object with a per-process and a job memory limit, the process assigned to it:
           the limit follows within 1.1 s. Exit 77 (skipped) where the system does not keep a
           job's limits (Wine reports none back) or cannot put the process in a job. */
#include <windows.h>
#include <errno.h>
#include <string.h>
#include <mimalloc.h>
#include "testing.h"

#define MiB ((size_t)1024 * 1024)

static char printed[8192];
static size_t printed_len;

static void capture(const char* msg, void* arg) {
  (void)arg;
  const size_t n = strlen(msg);
  if (printed_len + n < sizeof(printed)) { memcpy(printed + printed_len, msg, n + 1); printed_len += n; }
}

/* The "memory limit:" line of mi_options_print contains `want`. */
static void check_line(const char* want) {
  printed_len = 0;
  printed[0] = 0;
  mi_options_print_out(&capture, NULL);
  const char* line = strstr(printed, "memory limit:");
  CHECK_MSG(line != NULL && strstr(line, want) != NULL && strchr(line, '\n') > strstr(line, want),
            "memory limit line without \"%s\": %.200s", want, line != NULL ? line : printed);
}

/* The limit after the job's limits changed: read again once a second (MI_LIMIT_REREAD_MS). */
static size_t limit_later(void) {
  Sleep(1100);
  return mi_memory_limit();
}

static void set_fake(const char* value) {
  CHECK(SetEnvironmentVariableA("MIMALLOC_TEST_JOB_LIMIT", value));
}

static int test_fake(void) {
  set_fake("536870912,268435456");   /* before the first read: nothing has been committed yet */
  CHECK_EQ(mi_memory_limit(), 256 * MiB);
  check_line("256 MiB (job object job memory limit)");
  set_fake("536870912,0");
  CHECK_EQ(limit_later(), 512 * MiB);
  check_line("512 MiB (job object process memory limit)");
  set_fake("0,402653184");
  CHECK_EQ(limit_later(), 384 * MiB);
  set_fake("0,0");
  CHECK_EQ(limit_later(), 0);
  check_line("none (no job memory limit found)");
  set_fake("12,x");
  CHECK_EQ(limit_later(), 0);
  /* a share of the job's limit */
  set_fake("104857600,0");
  mi_option_set(mi_option_memory_limit, -50);
  CHECK_EQ(limit_later(), 50 * MiB);
  check_line("50 MiB (50% of job object process memory limit 100 MiB)");
  mi_option_set(mi_option_memory_limit, -100);
  CHECK_EQ(mi_memory_limit(), 100 * MiB);
  /* the limit acts: the hard limit at the job's, 1 MiB blocks until one is refused */
  set_fake("67108864,0");
  CHECK_EQ(limit_later(), 64 * MiB);
  mi_option_set(mi_option_memory_limit_hard, 1);
  static void* blocks[256];
  size_t n = 0;
  errno = 0;
  while (n < 256) {
    void* p = mi_malloc(MiB);
    if (p == NULL) break;
    memset(p, 1, MiB);
    blocks[n++] = p;
  }
  const int err = errno;
  CHECK_MSG(n >= 32 && n < 64, "%zu blocks of 1 MiB under a 64 MiB job limit", n);
  CHECK_EQ(err, ENOMEM);
  for (size_t i = 0; i < n; i++) mi_free(blocks[i]);
  void* again = mi_malloc(MiB);   /* freed memory counts no more */
  CHECK(again != NULL);
  mi_free(again);
  mi_option_set(mi_option_memory_limit_hard, 0);
  set_fake("");
  return test_summary("limit-job-win fake", "%zu blocks of 1 MiB under 64 MiB", n);
}

static int test_real(void) {
  HANDLE job = CreateJobObjectW(NULL, NULL);
  if (job == NULL) { printf("skip: CreateJobObject failed (%lu)\n", GetLastError()); return 77; }
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION info;
  memset(&info, 0, sizeof(info));
  info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_PROCESS_MEMORY | JOB_OBJECT_LIMIT_JOB_MEMORY;
  info.ProcessMemoryLimit = 3 * 1024 * MiB;
  info.JobMemoryLimit = 2 * 1024 * MiB;
  if (!SetInformationJobObject(job, JobObjectExtendedLimitInformation, &info, sizeof(info)) ||
      !AssignProcessToJobObject(job, GetCurrentProcess())) {
    printf("skip: cannot put the process in a job with limits (%lu)\n", GetLastError());
    return 77;
  }
  memset(&info, 0, sizeof(info));
  if (!QueryInformationJobObject(NULL, JobObjectExtendedLimitInformation, &info, sizeof(info), NULL) ||
      (info.BasicLimitInformation.LimitFlags & JOB_OBJECT_LIMIT_JOB_MEMORY) == 0) {
    printf("skip: this system does not report the job's limits back\n");
    return 77;
  }
  CHECK_EQ(limit_later(), 2 * 1024 * MiB);
  check_line("2 GiB (job object job memory limit)");
  info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_PROCESS_MEMORY;
  CHECK(SetInformationJobObject(job, JobObjectExtendedLimitInformation, &info, sizeof(info)));
  CHECK_EQ(limit_later(), 3 * 1024 * MiB);
  return test_summary("limit-job-win real", "2 GiB, then 3 GiB");
}

int main(int argc, char** argv) {
  const char* mode = (argc > 1 ? argv[1] : "fake");
  if (strcmp(mode, "real") == 0) return test_real();
  return test_fake();
}
