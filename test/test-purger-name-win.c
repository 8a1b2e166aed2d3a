/* SPDX-License-Identifier: MIT */
/* test-purger-name-win.c -- Windows: the purger thread (src/purger.c) names itself "mi-purger"
   (SetThreadDescription, looked up at run time: src/prim/windows.c), as debuggers and process
   explorers show it.

   The program allocates and frees 64 MiB in huge blocks (purges are scheduled), then makes one
   more allocation (the slow path that starts the purger), and looks for a thread of the process
   whose description (GetThreadDescription) is "mi-purger", for up to 2 s.
   Usage: test-purger-name-win [on|off]
     on   (default) such a thread must be there
     off  (MIMALLOC_PURGE_THREAD=0) none may be, 300 ms after the same workload
   Exit 77 (skipped) where the system has no GetThreadDescription (before Windows 10 1607). */
#include <windows.h>
#include <tlhelp32.h>
#include <string.h>
#include <wchar.h>
#include <mimalloc.h>
#include "testing.h"

typedef HRESULT (WINAPI *get_description_t)(HANDLE, PWSTR*);

#define BLOCKS     8
#define HUGE_BLOCK (8 * 1024 * 1024 - 64 * 1024)

/* Threads of this process described as `name`; -1 if the threads cannot be listed. */
static int threads_named(get_description_t get_description, const wchar_t* name) {
  HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
  if (snap == INVALID_HANDLE_VALUE) return -1;
  const DWORD pid = GetCurrentProcessId();
  int count = 0;
  THREADENTRY32 te;
  te.dwSize = sizeof(te);
  for (BOOL ok = Thread32First(snap, &te); ok; ok = Thread32Next(snap, &te)) {
    if (te.th32OwnerProcessID != pid) continue;
    HANDLE thread = OpenThread(THREAD_QUERY_LIMITED_INFORMATION, FALSE, te.th32ThreadID);
    if (thread == NULL) continue;   /* (ended meanwhile) */
    PWSTR desc = NULL;
    if (SUCCEEDED(get_description(thread, &desc)) && desc != NULL) {
      if (wcscmp(desc, name) == 0) count++;
      LocalFree(desc);
    }
    CloseHandle(thread);
  }
  CloseHandle(snap);
  return count;
}

int main(int argc, char** argv) {
  const int off = (argc > 1 && strcmp(argv[1], "off") == 0);
  HMODULE kernel32 = GetModuleHandleW(L"kernel32.dll");
  get_description_t get_description = (kernel32 == NULL ? NULL : (get_description_t)(void*)GetProcAddress(kernel32, "GetThreadDescription"));
  if (get_description == NULL) {
    printf("SKIP test-purger-name-win: no GetThreadDescription on this system\n");
    return 77;
  }
  CHECK_EQ(mi_option_get(mi_option_purge_thread), off ? 0 : 1);
  void* blocks[BLOCKS];
  for (int i = 0; i < BLOCKS; i++) {
    blocks[i] = mi_malloc(HUGE_BLOCK);
    CHECK(blocks[i] != NULL);
    if (blocks[i] != NULL) memset(blocks[i], 0xA5, HUGE_BLOCK);
  }
  for (int i = 0; i < BLOCKS; i++) mi_free(blocks[i]);
  mi_free(mi_malloc(HUGE_BLOCK));   /* an allocation slow path: starts the purger */
  int named = threads_named(get_description, L"mi-purger");
  const int wait_ms = (off ? 300 : 2000);
  for (int waited = 0; waited < wait_ms && (off || named == 0); waited += 10) {
    Sleep(10);
    named = threads_named(get_description, L"mi-purger");
    if (off && named != 0) break;
  }
  if (off) CHECK_MSG(named == 0, "%d threads named mi-purger with MIMALLOC_PURGE_THREAD=0", named);
  else CHECK_MSG(named == 1, "%d threads named mi-purger (want 1) after the frees", named);
  return test_summary(off ? "purger-name-win off" : "purger-name-win", "%d thread(s) named mi-purger", named);
}
