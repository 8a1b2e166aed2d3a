/* SPDX-License-Identifier: MIT */
/* Layer 9 (docs/design.md, "Layers"): the observers' functions that other observers use: the
   leak report (leaks.c), the live view (live.c), the statistics' read-outs (stats-print.c) and
   the validators of checked builds (validate.c). The core reaches the observers only through
   observe.h; the profiler's files have prof-hook.h and prof.h. */
#pragma once
#include "alloc.h"

/* leaks.c */
void       _mi_leaks_report(void);           /* MIMALLOC_SHOW_LEAKS at exit */

/* stats-print.c: the ways out of the figures (printing, JSON, mi_stats_get) */
size_t     _mi_stats_print_json_now(char* buf, size_t size);   /* the process JSON now; its length */
/* A bounded text writer (stats-print.c) that counts what does not fit, so the same code measures a
   text's size or fills a buffer; each piece under 256 characters. */
typedef struct mi_json_s {
  char*  buf;
  size_t size;
  size_t len;      /* characters produced so far, also beyond size */
} mi_json_t;
void       _mi_stats_print_json_add(mi_json_t* json, const char* fmt, ...);
void       _mi_stats_print_json_count(mi_json_t* json, const char* name, const mi_stat_count_t* stat);   /* ,"name": {total, peak, current} */
/* a document into buf, or into a new block (buf NULL or buf_size 0); NULL if it does not fit */
char*      _mi_stats_print_json_render(void (*render)(mi_json_t* json, void* arg), void* arg, size_t buf_size, char* buf);
void       _mi_stats_print_process_info_get(mi_process_info_t* info);
void       _mi_stats_print_process_now(mi_stats_data_t* data);   /* the process' figures, the calling thread's merged */
void       _mi_stats_print_fold_bins(const mi_stat_count_t* bins, mi_stat_count_t* public_bins);   /* into mimalloc's bin numbering */

/* live.c: live statistics in shared memory for a viewer (MIMALLOC_LIVE) */
void       _mi_live_init(void);                       /* process init: reads MIMALLOC_LIVE */
void       _mi_live_done(void);                       /* process exit: removes the file */
void       _mi_live_fork_child(mi_tld_t* tld);        /* a fork child publishes nothing */
void       _mi_live_publish(mi_tld_t* tld, bool force);   /* the thread's figures, when due */
void       _mi_live_thread_new(mi_tld_t* tld);        /* a thread starts while the view is on: its state, counting from now */
void       _mi_live_thread_done(mi_tld_t* tld);       /* frees the thread's slot and state */
void       _mi_live_page_move(mi_page_t* page, mi_tld_t* from, mi_tld_t* to);   /* a page with blocks in use changes thread (NULL: none) */
mi_msecs_t _mi_live_background(mi_msecs_t now);     /* the background thread: publishes what is due; when next (0: off) */
void       _mi_live_fork_prepare(void);               /* the publisher's locks around fork */
void       _mi_live_fork_parent(void);
void       _mi_stats_print_at_exit(void);              /* show_stats, verbose, stats JSON */

/* stats-print.c: the statistics as text, from a snapshot and the process information of the
   same moment; `thread`: the figures are the calling thread's own (mi_thread_stats_print_out). */
void       _mi_stats_print_text(const mi_stats_data_t* stats, const mi_process_info_t* info, bool thread,
                                mi_output_fun* out, void* arg);
void       _mi_stats_print_process_info_text(const mi_process_info_t* info, mi_output_fun* out, void* arg);   /* mimalloc's two process lines */
/* the readable layout under a title line of its own (a heap's or a subprocess' figures) */
void       _mi_stats_print_titled(const mi_stats_data_t* stats, const mi_process_info_t* info, const char* title,
                                  mi_output_fun* out, void* arg);

/* ------------------------------------------------------------------------------------------
   validate.c (checked builds): one validator per structure, checking the invariants of
   types.h; each returns true or reports the field (expected and found values) and aborts.
   MI_DEBUG >= 3 (CMake MI_DEBUG_FULL) calls them at the slow-path boundaries through
   mi_assert_expensive(_mi_observe_check(...)) (observe.h); tests may call them in any debug build. See validate.c for who may
   call which.
------------------------------------------------------------------------------------------ */
bool       _mi_validate_page(const mi_page_t* page);
bool       _mi_validate_heap(const mi_heap_t* heap);           /* with its pages and their segments */
bool       _mi_validate_segment(const mi_segment_t* segment);  /* with its segment map entries; takes its subprocess' lock */
bool       _mi_validate_segment_locked(const mi_segment_t* segment);   /* the caller holds the lock */
bool       _mi_validate_segment_map(const mi_segment_t* segment);
bool       _mi_validate_subproc(mi_subproc_t* subproc);        /* free, purge and abandoned lists; takes the lock */
bool       _mi_validate_subproc_locked(mi_subproc_t* subproc);
bool       _mi_validate_arena_memid(const void* p, const mi_memid_t* memid);   /* blocks a segment holds */
bool       _mi_validate_arenas(void);
bool       _mi_validate_stats(const mi_stats_data_t* stats, bool thread);   /* thread: tld->stats (else the totals) */
bool       _mi_validate_thread(const mi_heap_t* heap);         /* all of the above for this thread */
