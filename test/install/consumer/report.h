/* SPDX-License-Identifier: MIT */
/* Shared by the consumers of an installed mimalloc (main.c, v3.c): the lines run-consumers.sh
   reads back. */
#ifndef MI_CONSUMER_REPORT_H
#define MI_CONSUMER_REPORT_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the mapped shared libmimalloc, or "none" when it is linked in statically */
static void print_mapped_library(void) {
  char line[4096];
  char found[4096] = "none";
  FILE* maps = fopen("/proc/self/maps", "r");
  if (maps == NULL) { perror("/proc/self/maps"); exit(1); }
  while (fgets(line, sizeof line, maps) != NULL) {
    const char* path = strchr(line, '/');
    if (path != NULL && strstr(path, "/libmimalloc") != NULL) {
      snprintf(found, sizeof found, "%s", path);
      found[strcspn(found, "\n")] = '\0';
      break;
    }
  }
  fclose(maps);
  printf("mapped library: %s\n", found);
}

#endif
