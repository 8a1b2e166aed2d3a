/* SPDX-License-Identifier: MIT */
/* secure-link-keys: a free-list link changed in its low 1 or 2 bytes (an overflow of 1 or 2
   bytes from the block below it) never decodes to an address near its page.

   The secure build encodes each link with two keys drawn per page (src/secure.c, page.h). This
   draws the keys of many pages, encodes a link to a block, changes the encoded link's low 16
   bits in every possible way and checks that each decodes more than 4 GiB away from the block:
   outside every page, so the free-list checks always reject it. With the rotation drawn from all
   64 values, some keys move a changed low byte onto the bits of a block's index in its page.
   Exit status 0: the property held for every page drawn. */
#include "internal/page.h"
#include <stdio.h>

int main(void) {
  static uint8_t blocks[4096] __attribute__((aligned(64)));   /* a realistic block address */
  const uintptr_t block = (uintptr_t)&blocks[1024];
  const uintptr_t targets[2] = { block, 0 };                   /* a link to a block, and the tail */
  mi_page_t page;
  long bad = 0;
  for (int draw = 0; draw < 2000; draw++) {
    _mi_secure_page_init_keys(&page);
    for (int t = 0; t < 2; t++) {
      const uintptr_t e = mi_link_encode(&page, (const mi_block_t*)targets[t]);
      if ((uintptr_t)mi_link_decode(&page, e) != targets[t]) { fprintf(stderr, "encode/decode mismatch\n"); return 1; }
      for (uintptr_t delta = 1; delta < 0x10000; delta++) {
        const uintptr_t d = (uintptr_t)mi_link_decode(&page, e ^ delta);
        const uintptr_t dist = (d > targets[t] ? d - targets[t] : targets[t] - d);
        if (dist < ((uintptr_t)1 << 32)) {
          if (bad++ < 4) fprintf(stderr, "keys %#zx %#zx (rotation %zu): link ^ %#zx decodes %#zx from its target\n",
                                 (size_t)page.keys[0], (size_t)page.keys[1], (size_t)(page.keys[1] & 63), (size_t)delta, (size_t)dist);
        }
      }
    }
  }
  if (bad > 0) { fprintf(stderr, "secure-link-keys: %ld changed links decode near their target\n", bad); return 1; }
  printf("secure-link-keys: 2000 key draws, every 1- and 2-byte change decodes 4 GiB or more away\n");
  return 0;
}
