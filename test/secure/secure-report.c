/* SPDX-License-Identifier: MIT */
/* What a user of the secure build sees, with no option and no error handler (secure-report.sh
 * checks stderr and the exit status):
 *   double-free    a block freed twice: reported, ignored, the program goes on (exit 0);
 *   uaf            a freed block's free-list link overwritten: reported, then the program
 *                  aborts with a line saying why;
 *   many-then-uaf  40 double frees (beyond max_errors' 32 lines), then the corruption: the
 *                  reason for the abort is still shown.
 * usage: secure-report CASE */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char target[256];   /* where a forged link points */

/* the compiler must neither drop a malloc/free pair nor see a use after free (gcc's
   -Wuse-after-free): the freed pointer is read back from a volatile slot */
static void* volatile launder_slot;
static void* launder(void* p) { launder_slot = p; return launder_slot; }
static void* stale(void) { return launder_slot; }

static void double_free(void) {
  free(launder(malloc(48)));
  free(stale());
}

/* overwrite the link of a freed block, then allocate until the list reaches it */
static void use_after_free(void) {
  void* keep[64];
  for (int i = 0; i < 64; i++) keep[i] = malloc(48);
  free(launder(keep[32]));
  void* evil = target + 64;
  memcpy(stale(), &evil, sizeof evil);
  for (int i = 0; i < 20000; i++) {
    void* q = launder(malloc(48));
    if (q != NULL) memset(q, 0x5A, 48);
  }
  for (int i = 0; i < 64; i++) if (i != 32) free(keep[i]);
}

int main(int argc, char** argv) {
  if (argc != 2) { fprintf(stderr, "usage: secure-report CASE\n"); return 2; }
  if (strcmp(argv[1], "double-free") == 0) double_free();
  else if (strcmp(argv[1], "uaf") == 0) use_after_free();
  else if (strcmp(argv[1], "many-then-uaf") == 0) {
    for (int i = 0; i < 40; i++) double_free();
    use_after_free();
  }
  else { fprintf(stderr, "secure-report: unknown case %s\n", argv[1]); return 2; }
  printf("secure-report %s: the program went on\n", argv[1]);
  return 0;
}
