//! The `v3` module against the library: each function called, with results that tell v3's
//! meaning from v2's (a heap shared by threads, the main heap of all threads, v3's option
//! numbers, the pointer arena id, the subprocess struct).
#![cfg(feature = "v3")]

use core::ffi::c_void;
use mimalloc_compat_sys as ffi;
use mimalloc_compat_sys::v3;
use std::sync::Barrier;

/// Every function of the module links (an unused `extern` declaration is never resolved, so a
/// wrong `link_name` would go unnoticed until a program calls it).
#[test]
fn every_function_links() {
    let fns: &[*const ()] = &[
        v3::mi_heap_new as *const (), v3::mi_heap_new_in_arena as *const (), v3::mi_check_owned as *const (),
        v3::mi_heap_visit_abandoned_blocks as *const (), v3::mi_heap_main as *const (), v3::mi_heap_of as *const (),
        v3::mi_heap_contains as *const (), v3::mi_reserve_huge_os_pages_at_ex as *const (),
        v3::mi_reserve_os_memory_ex as *const (), v3::mi_manage_os_memory_ex as *const (), v3::mi_manage_memory as *const (),
        v3::mi_arena_area as *const (), v3::mi_arena_contains as *const (), v3::mi_subproc_main as *const (),
        v3::mi_subproc_current as *const (), v3::mi_subproc_new as *const (), v3::mi_subproc_destroy as *const (),
        v3::mi_subproc_add_current_thread as *const (), v3::mi_heap_theap as *const (),
        v3::mi_theap_set_default as *const (), v3::mi_theap_get_default as *const (), v3::mi_theap_collect as *const (),
        v3::mi_theap_malloc as *const (), v3::mi_theap_zalloc as *const (), v3::mi_theap_calloc as *const (),
        v3::mi_theap_malloc_small as *const (), v3::mi_theap_zalloc_small as *const (),
        v3::mi_theap_malloc_aligned as *const (), v3::mi_theap_realloc as *const (),
        v3::mi_theap_guarded_set_sample_rate as *const (), v3::mi_theap_guarded_set_size_bound as *const (),
        v3::mi_theap_visit_blocks as *const (), v3::mi_option_is_enabled as *const (), v3::mi_option_enable as *const (),
        v3::mi_option_disable as *const (), v3::mi_option_set_enabled as *const (),
        v3::mi_option_set_enabled_default as *const (), v3::mi_option_get as *const (), v3::mi_option_get_clamp as *const (),
        v3::mi_option_get_size as *const (), v3::mi_option_set as *const (), v3::mi_option_set_default as *const (),
        v3::mi_subproc_visit_heaps as *const (), v3::mi_heap_set_numa_affinity as *const (),
        v3::mi_heap_stats_get as *const (),
        v3::mi_heap_stats_get_json as *const (), v3::mi_heap_stats_print_out as *const (),
        v3::mi_heap_stats_merge_to_subproc as *const (), v3::mi_subproc_stats_get as *const (),
        v3::mi_subproc_stats_get_json as *const (), v3::mi_subproc_stats_print_out as *const (),
        v3::mi_subproc_heap_stats_print_out as *const (), v3::mi_subproc_stats_get_exclusive as *const (),
        v3::mi_stats_as_json as *const (), v3::mi_stats_get_bin_size as *const (),
    ];
    assert!(fns.iter().all(|f| !f.is_null()));
    assert_eq!(fns.len(), 55);
}

#[test]
fn v3_types_have_the_headers_layout() {
    use std::mem::{align_of, size_of};
    // the header: same size as v2 mode's area (an int there, a pointer here, at the end)
    assert_eq!(size_of::<v3::mi_heap_area_t>(), size_of::<ffi::mi_heap_area_t>());
    assert_eq!(std::mem::offset_of!(v3::mi_heap_area_t, reserved1), std::mem::offset_of!(ffi::mi_heap_area_t, heap_tag));
    assert_eq!(size_of::<v3::mi_subproc_id_t>(), size_of::<*mut c_void>());
    assert_eq!(align_of::<v3::mi_subproc_id_t>(), align_of::<*mut c_void>());
    assert_eq!(size_of::<v3::mi_arena_id_t>(), size_of::<*mut c_void>());
}

/// Four threads allocate in one heap from `mi_heap_new`, each frees the blocks of the next
/// thread (a free across threads), then one thread deletes the heap; a second heap is
/// destroyed with blocks of several threads still in it.
#[test]
fn a_heap_any_thread_allocates_in() {
    const THREADS: usize = 4;
    const BLOCKS: usize = 500;
    for destroy in [false, true] {
        let heap = unsafe { v3::mi_heap_new() } as usize;
        assert_ne!(heap, 0);
        let slots: Vec<std::sync::Mutex<Vec<usize>>> = (0..THREADS).map(|_| Default::default()).collect();
        let barrier = Barrier::new(THREADS);
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (slots, barrier) = (&slots, &barrier);
                s.spawn(move || unsafe {
                    let heap = heap as *mut ffi::mi_heap_t;
                    let mut mine = Vec::new();
                    for i in 0..BLOCKS {
                        let p = ffi::mi_heap_malloc(heap, 16 + (i % 200)) as *mut u8;
                        assert!(!p.is_null());
                        p.write_bytes(t as u8, 16);
                        // v3: the heap of a block this thread allocated in it is the heap
                        assert!(v3::mi_heap_contains(heap, p.cast()));
                        mine.push(p as usize);
                    }
                    *slots[t].lock().unwrap() = mine;
                    barrier.wait();
                    if !destroy {
                        // free the next thread's blocks, checking they were not overwritten
                        let theirs = std::mem::take(&mut *slots[(t + 1) % THREADS].lock().unwrap());
                        for p in theirs {
                            assert_eq!(*(p as *const u8), ((t + 1) % THREADS) as u8);
                            ffi::mi_free(p as *mut c_void);
                        }
                    }
                });
            }
        });
        unsafe {
            let heap = heap as *mut ffi::mi_heap_t;
            let p = ffi::mi_heap_malloc(heap, 100); // the deleting thread used it too
            assert!(!p.is_null());
            if destroy {
                ffi::mi_heap_destroy(heap); // frees every block still in it
            } else {
                ffi::mi_free(p);
                ffi::mi_heap_delete(heap);
            }
        }
    }
}

#[test]
fn the_main_heap_is_one_heap_for_all_threads() {
    unsafe {
        let main = v3::mi_heap_main();
        assert!(!main.is_null());
        let other = std::thread::spawn(|| v3::mi_heap_main() as usize).join().unwrap();
        assert_eq!(other, main as usize, "v3's main heap is the same heap in every thread");
        assert_ne!(main, ffi::mi_heap_get_backing(), "v2's per-thread backing heap");
        let p = ffi::mi_malloc(40);
        assert_eq!(v3::mi_heap_of(p), main, "a default block is the main heap's");
        assert!(v3::mi_heap_contains(main, p) && v3::mi_heap_contains(core::ptr::null(), p));
        let q = ffi::mi_heap_malloc(main, 40);
        assert!(!q.is_null() && v3::mi_heap_of(q) == main);
        // another thread allocates in the same heap
        let m = main as usize;
        let r = std::thread::spawn(move || ffi::mi_heap_malloc(m as *mut ffi::mi_heap_t, 24) as usize).join().unwrap();
        assert_ne!(r, 0);
        ffi::mi_free(r as *mut c_void);
        // the main heap cannot be deleted: it still works afterwards
        ffi::mi_heap_delete(main);
        let s = ffi::mi_heap_malloc(main, 8);
        assert!(!s.is_null());
        for x in [p, q, s] {
            ffi::mi_free(x);
        }
        let stack = 0u8;
        assert!(v3::mi_heap_of(&stack as *const u8 as *const c_void).is_null());
    }
}

#[test]
fn check_owned_is_any_heaps() {
    // a block of another thread's default heap: v3's mi_check_owned finds it (v2's looks in
    // the calling thread's default heap only)
    let p = std::thread::spawn(|| unsafe { ffi::mi_malloc(64) as usize }).join().unwrap() as *mut c_void;
    unsafe {
        assert!(v3::mi_check_owned(p));
        assert!(!ffi::mi_check_owned(p));
        let stack = 0u64;
        assert!(!v3::mi_check_owned(&stack as *const u64 as *const c_void));
        ffi::mi_free(p);
    }
}

struct Count {
    areas: usize,
    blocks: usize,
}

unsafe extern "C" fn count_blocks(
    _heap: *const ffi::mi_heap_t,
    area: *const v3::mi_heap_area_t,
    block: *mut c_void,
    _size: usize,
    arg: *mut c_void,
) -> bool {
    let count = &mut *(arg as *mut Count);
    assert!(!area.is_null());
    if block.is_null() {
        count.areas += 1;
    } else {
        count.blocks += 1;
    }
    true
}

#[test]
fn theaps() {
    unsafe {
        let heap = v3::mi_heap_new();
        let theap = v3::mi_heap_theap(heap);
        assert!(!theap.is_null());
        assert_eq!(v3::mi_heap_theap(heap), theap, "the same part on the second call");
        // another thread gets another part
        let h = heap as usize;
        let other = std::thread::spawn(move || v3::mi_heap_theap(h as *mut ffi::mi_heap_t) as usize).join().unwrap();
        assert!(other != 0 && other != theap as usize);
        // the main heap's part is the thread's default theap
        assert_eq!(v3::mi_heap_theap(core::ptr::null_mut()), v3::mi_theap_get_default());
        assert_eq!(v3::mi_heap_theap(v3::mi_heap_main()), v3::mi_theap_get_default());

        let a = v3::mi_theap_malloc(theap, 100) as *mut u8;
        let z = v3::mi_theap_zalloc(theap, 300) as *mut u8;
        let c = v3::mi_theap_calloc(theap, 10, 30) as *mut u8;
        let s = v3::mi_theap_malloc_small(theap, 64) as *mut u8;
        let zs = v3::mi_theap_zalloc_small(theap, 128) as *mut u8;
        let al = v3::mi_theap_malloc_aligned(theap, 100, 256) as *mut u8;
        for p in [a, z, c, s, zs, al] {
            assert!(!p.is_null());
            assert!(v3::mi_heap_contains(heap, p.cast()), "a theap's block is its heap's");
        }
        assert!((0..300).all(|i| *z.add(i) == 0));
        assert!((0..300).all(|i| *c.add(i) == 0));
        assert!((0..128).all(|i| *zs.add(i) == 0));
        assert_eq!(al as usize % 256, 0);
        assert!(v3::mi_theap_calloc(theap, usize::MAX, 2).is_null(), "overflow");
        a.write_bytes(9, 100);
        let a2 = v3::mi_theap_realloc(theap, a.cast(), 5000) as *mut u8;
        assert!(!a2.is_null() && *a2.add(99) == 9 && ffi::mi_usable_size(a2.cast()) >= 5000);

        let mut count = Count { areas: 0, blocks: 0 };
        assert!(v3::mi_theap_visit_blocks(theap, true, Some(count_blocks), &mut count as *mut Count as *mut c_void));
        assert_eq!(count.blocks, 6, "the six live blocks of the theap");
        assert!(count.areas >= 1);

        // guarded builds only; elsewhere no effect: the theap keeps allocating
        v3::mi_theap_guarded_set_sample_rate(theap, 1, 0);
        v3::mi_theap_guarded_set_size_bound(theap, 0, 1 << 20);
        let g = v3::mi_theap_malloc(theap, 64);
        assert!(!g.is_null());

        for p in [a2, z, c, s, zs, al, g as *mut u8] {
            ffi::mi_free(p.cast());
        }
        v3::mi_theap_collect(theap, true);
        let mut count = Count { areas: 0, blocks: 0 };
        assert!(v3::mi_theap_visit_blocks(theap, true, Some(count_blocks), &mut count as *mut Count as *mut c_void));
        assert_eq!(count.blocks, 0, "freed and collected");

        // the thread's part of a shared heap as its default theap: mi_malloc allocates in the heap
        let dflt = v3::mi_theap_get_default();
        assert_eq!(v3::mi_theap_set_default(theap), dflt);
        assert_eq!(v3::mi_theap_get_default(), theap);
        let p = ffi::mi_malloc(40);
        assert!(!p.is_null() && v3::mi_heap_of(p) == heap && v3::mi_heap_contains(heap, p));
        assert_eq!(v3::mi_theap_set_default(dflt), theap);
        assert_eq!(v3::mi_theap_get_default(), dflt);
        // deleting the heap while its part is the default sets the default back; the block stays
        assert_eq!(v3::mi_theap_set_default(theap), dflt);
        ffi::mi_heap_delete(heap);
        assert_eq!(v3::mi_theap_get_default(), dflt);
        ffi::mi_free(p);
    }
}

#[test]
fn options_have_v3_numbers() {
    unsafe {
        // allow_thp is 43 in v3, 37 in v2: the same option
        let thp = v3::mi_option_get(v3::mi_option_allow_thp);
        assert_eq!(thp, ffi::mi_option_get(ffi::mi_option_allow_thp));
        v3::mi_option_set(v3::mi_option_generic_collect, 12345); // v2's 36
        assert_eq!(ffi::mi_option_get(ffi::mi_option_generic_collect), 12345);
        assert_eq!(v3::mi_option_get(v3::mi_option_generic_collect), 12345);
        assert_eq!(v3::mi_option_get_clamp(v3::mi_option_generic_collect, 0, 100), 100);
        // a v3-only option keeps what the program sets
        v3::mi_option_set(v3::mi_option_page_max_candidates, 7);
        assert_eq!(v3::mi_option_get(v3::mi_option_page_max_candidates), 7);
        v3::mi_option_set_default(v3::mi_option_page_max_candidates, 99); // already set: kept
        assert_eq!(v3::mi_option_get(v3::mi_option_page_max_candidates), 7);
        v3::mi_option_disable(v3::mi_option_page_full_retain);
        assert!(!v3::mi_option_is_enabled(v3::mi_option_page_full_retain));
        v3::mi_option_enable(v3::mi_option_page_full_retain);
        assert!(v3::mi_option_is_enabled(v3::mi_option_page_full_retain));
        v3::mi_option_set_enabled(v3::mi_option_page_full_retain, false);
        assert_eq!(v3::mi_option_get(v3::mi_option_page_full_retain), 0);
        v3::mi_option_set_enabled_default(v3::mi_option_page_full_retain, true); // already set
        assert_eq!(v3::mi_option_get(v3::mi_option_page_full_retain), 0);
        // KiB options read as bytes
        v3::mi_option_set(v3::mi_option_arena_max_object_size, 3);
        assert_eq!(v3::mi_option_get_size(v3::mi_option_arena_max_object_size), 3 * 1024);
        // this implementation's options keep their numbers
        assert_eq!(v3::mi_option_get(v3::mi_option_purge_thread), ffi::mi_option_get(ffi::mi_option_purge_thread));
    }
}

#[test]
fn arenas_take_the_pointer_id() {
    unsafe {
        let mut id: v3::mi_arena_id_t = core::ptr::null_mut();
        assert_eq!(v3::mi_reserve_os_memory_ex(64 << 20, false, false, true, &mut id), 0);
        assert!(!id.is_null());
        let mut size = 0usize;
        let start = v3::mi_arena_area(id, &mut size);
        assert!(!start.is_null() && size >= 32 << 20, "{size}");
        let heap = v3::mi_heap_new_in_arena(id);
        assert!(!heap.is_null());
        let p = ffi::mi_heap_malloc(heap, 1000);
        assert!(!p.is_null());
        assert!(v3::mi_arena_contains(id, p));
        let q = ffi::mi_malloc(1000);
        assert!(!v3::mi_arena_contains(id, q), "a default block is in no exclusive arena");
        assert!(!v3::mi_arena_contains(usize::MAX as v3::mi_arena_id_t, p), "an unknown id");
        ffi::mi_free(p);
        ffi::mi_free(q);
        ffi::mi_heap_delete(heap);

        // memory the program gives: aligned as the library asks
        let (min, align) = (ffi::mi_arena_min_size(), ffi::mi_arena_min_alignment());
        let layout = std::alloc::Layout::from_size_align(2 * min, align).unwrap();
        let mem = std::alloc::alloc(layout); // leaked: the arena keeps it
        assert!(!mem.is_null());
        let mut id2: v3::mi_arena_id_t = core::ptr::null_mut();
        assert!(v3::mi_manage_os_memory_ex(mem.cast(), 2 * min, true, false, false, -1, true, &mut id2));
        assert!(!id2.is_null() && id2 != id);
        assert!(v3::mi_arena_contains(id2, mem.add(min).cast()));

        // memory whose commits are the program's: counted here (it is accessible already)
        static CALLS: [std::sync::atomic::AtomicUsize; 2] = [std::sync::atomic::AtomicUsize::new(0), std::sync::atomic::AtomicUsize::new(0)];
        unsafe extern "C" fn count(commit: bool, _start: *mut c_void, _size: usize, is_zero: *mut bool, arg: *mut c_void) -> bool {
            assert_eq!(arg as usize, 42);
            assert_eq!(commit, !is_zero.is_null(), "is_zero is given to a commit only");
            CALLS[commit as usize].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            true
        }
        let mem4 = std::alloc::alloc(layout); // leaked: the arena keeps it
        let mut id4: v3::mi_arena_id_t = core::ptr::null_mut();
        assert!(v3::mi_manage_memory(mem4.cast(), 2 * min, false, false, false, -1, true, Some(count), 42usize as *mut c_void, &mut id4));
        assert!(!id4.is_null() && v3::mi_arena_contains(id4, mem4.cast()));
        assert_eq!(CALLS[1].load(std::sync::atomic::Ordering::Relaxed), 0, "nothing committed before use");
        let heap4 = v3::mi_heap_new_in_arena(id4);
        let p4 = ffi::mi_heap_malloc(heap4, 100_000);
        assert!(!p4.is_null() && v3::mi_arena_contains(id4, p4));
        assert!(CALLS[1].load(std::sync::atomic::Ordering::Relaxed) >= 1, "committed through the function");
        ffi::mi_free(p4);
        ffi::mi_heap_delete(heap4);
        ffi::mi_collect(true);
        assert!(CALLS[0].load(std::sync::atomic::Ordering::Relaxed) >= 1, "purged through the function");

        // 1 GiB pages are rarely available: either an arena or a null id
        let mut id3: v3::mi_arena_id_t = 1usize as v3::mi_arena_id_t;
        let err = v3::mi_reserve_huge_os_pages_at_ex(1, -1, 10, true, &mut id3);
        assert_eq!(err == 0, !id3.is_null(), "error {err}, id {id3:?}");
    }
}

#[test]
fn subprocesses_take_the_struct() {
    unsafe {
        let main = v3::mi_subproc_main();
        assert!(main._mi_subproc_id.is_null());
        assert_eq!(v3::mi_subproc_current(), main);
        let sp = v3::mi_subproc_new();
        assert!(!sp._mi_subproc_id.is_null());
        let sp_bits = sp._mi_subproc_id as usize;
        let seen = std::thread::spawn(move || {
            let sp = v3::mi_subproc_id_t { _mi_subproc_id: sp_bits as *mut c_void };
            v3::mi_subproc_add_current_thread(sp);
            let p = ffi::mi_malloc(10);
            ffi::mi_free(p);
            v3::mi_subproc_current()._mi_subproc_id as usize
        })
        .join()
        .unwrap();
        assert_eq!(seen, sp_bits, "the thread moved into the new subprocess");
        assert_eq!(v3::mi_subproc_current(), main, "this thread did not");
        v3::mi_subproc_destroy(sp);
        v3::mi_subproc_destroy(main); // ignored
    }
}

/// An ended thread's block, found through the main heap by a thread of the same subprocess
/// (v3's option number turns the walk on). A subprocess of their own: no other test's thread
/// can take the ended thread's page over before the walk.
#[test]
fn visit_abandoned_blocks() {
    unsafe {
        v3::mi_option_enable(v3::mi_option_visit_abandoned); // v3's 28, v2's 29
        assert!(ffi::mi_option_is_enabled(ffi::mi_option_visit_abandoned));
        let sp = v3::mi_subproc_new()._mi_subproc_id as usize;
        let join = move || v3::mi_subproc_add_current_thread(v3::mi_subproc_id_t { _mi_subproc_id: sp as *mut c_void });
        let left = std::thread::spawn(move || {
            join();
            ffi::mi_malloc(200) as usize
        })
        .join()
        .unwrap();
        struct Find {
            wanted: usize,
            found: bool,
        }
        unsafe extern "C" fn find(
            _heap: *const ffi::mi_heap_t,
            _area: *const v3::mi_heap_area_t,
            block: *mut c_void,
            _size: usize,
            arg: *mut c_void,
        ) -> bool {
            let f = &mut *(arg as *mut Find);
            f.found |= block as usize == f.wanted;
            true
        }
        let found = std::thread::spawn(move || {
            join();
            let mut f = Find { wanted: left, found: false };
            let done = v3::mi_heap_visit_abandoned_blocks(core::ptr::null_mut(), true, Some(find), &mut f as *mut Find as *mut c_void);
            done && f.found
        })
        .join()
        .unwrap();
        assert!(found, "the ended thread's block is visited");
        ffi::mi_free(left as *mut c_void);
    }
}

/// The C compiler's view of the header's v3 mode (`c/probe_v3.c`) against this module: the
/// sizes, alignments and field offsets of the v3 types and every option value, both ways.
#[test]
fn v3_definitions_match_the_c_compiler() {
    use std::collections::BTreeMap;
    use std::mem::{align_of, offset_of, size_of};
    use v3::*;
    let mut count = 0usize;
    let table = unsafe { ffi::probe::mi_compat_probe_v3_table(&mut count) };
    let rows = unsafe { std::slice::from_raw_parts(table, count) };
    let c: BTreeMap<String, i64> = rows
        .iter()
        .map(|r| (unsafe { std::ffi::CStr::from_ptr(r.name) }.to_str().unwrap().to_string(), r.value))
        .collect();
    assert_eq!(c.len(), count, "a probe row twice");
    let mut rust: Vec<(&str, i64)> = vec![
        ("sizeof(mi_arena_id_t)", size_of::<mi_arena_id_t>() as i64),
        ("alignof(mi_arena_id_t)", align_of::<mi_arena_id_t>() as i64),
        ("sizeof(mi_subproc_id_t)", size_of::<mi_subproc_id_t>() as i64),
        ("alignof(mi_subproc_id_t)", align_of::<mi_subproc_id_t>() as i64),
        ("offsetof(mi_subproc_id_t,_mi_subproc_id)", offset_of!(mi_subproc_id_t, _mi_subproc_id) as i64),
        ("sizeof(mi_subproc_id_t._mi_subproc_id)", size_of::<*mut c_void>() as i64),
        ("sizeof(mi_option_t)", size_of::<mi_option_t>() as i64),
        ("alignof(mi_option_t)", align_of::<mi_option_t>() as i64),
        ("sizeof(mi_heap_area_t)", size_of::<mi_heap_area_t>() as i64),
        ("alignof(mi_heap_area_t)", align_of::<mi_heap_area_t>() as i64),
    ];
    rust.push(("MI_STAT_VERSION", MI_STAT_VERSION as i64));
    rust.push(("sizeof(mi_stats_t)", size_of::<mi_stats_t>() as i64));
    rust.push(("alignof(mi_stats_t)", align_of::<mi_stats_t>() as i64));
    macro_rules! stats_field {
        ($($f:ident: $t:ty),*) => {$(
            rust.push((concat!("offsetof(mi_stats_t,", stringify!($f), ")"), offset_of!(mi_stats_t, $f) as i64));
            rust.push((concat!("sizeof(mi_stats_t.", stringify!($f), ")"), size_of::<$t>() as i64));
        )*};
    }
    stats_field!(pages: ffi::mi_stat_count_t, _segments_reserved: ffi::mi_stat_count_t, heaps: ffi::mi_stat_count_t,
                 theaps: ffi::mi_stat_count_t, pages_unabandon_busy_wait: ffi::mi_stat_counter_t,
                 heaps_delete_wait: ffi::mi_stat_counter_t, malloc_bins: [ffi::mi_stat_count_t; MI_BIN_HUGE + 1],
                 page_bins: [ffi::mi_stat_count_t; MI_BIN_HUGE + 1], chunk_bins: [ffi::mi_stat_count_t; MI_CBIN_COUNT]);
    macro_rules! field {
        ($($f:ident: $t:ty),*) => {$(
            rust.push((concat!("offsetof(mi_heap_area_t,", stringify!($f), ")"), offset_of!(mi_heap_area_t, $f) as i64));
            rust.push((concat!("sizeof(mi_heap_area_t.", stringify!($f), ")"), size_of::<$t>() as i64));
        )*};
    }
    field!(blocks: *mut c_void, reserved: usize, committed: usize, used: usize, block_size: usize,
           full_block_size: usize, reserved1: *mut c_void);
    rust.extend_from_slice(&[
        ("mi_option_show_errors", mi_option_show_errors as i64),
        ("mi_option_show_stats", mi_option_show_stats as i64),
        ("mi_option_verbose", mi_option_verbose as i64),
        ("mi_option_deprecated_eager_commit", mi_option_deprecated_eager_commit as i64),
        ("mi_option_arena_eager_commit", mi_option_arena_eager_commit as i64),
        ("mi_option_purge_decommits", mi_option_purge_decommits as i64),
        ("mi_option_allow_large_os_pages", mi_option_allow_large_os_pages as i64),
        ("mi_option_reserve_huge_os_pages", mi_option_reserve_huge_os_pages as i64),
        ("mi_option_reserve_huge_os_pages_at", mi_option_reserve_huge_os_pages_at as i64),
        ("mi_option_reserve_os_memory", mi_option_reserve_os_memory as i64),
        ("mi_option_deprecated_segment_cache", mi_option_deprecated_segment_cache as i64),
        ("mi_option_deprecated_page_reset", mi_option_deprecated_page_reset as i64),
        ("mi_option_deprecated_abandoned_page_purge", mi_option_deprecated_abandoned_page_purge as i64),
        ("mi_option_deprecated_segment_reset", mi_option_deprecated_segment_reset as i64),
        ("mi_option_deprecated_eager_commit_delay", mi_option_deprecated_eager_commit_delay as i64),
        ("mi_option_purge_delay", mi_option_purge_delay as i64),
        ("mi_option_use_numa_nodes", mi_option_use_numa_nodes as i64),
        ("mi_option_disallow_os_alloc", mi_option_disallow_os_alloc as i64),
        ("mi_option_os_tag", mi_option_os_tag as i64),
        ("mi_option_max_errors", mi_option_max_errors as i64),
        ("mi_option_max_warnings", mi_option_max_warnings as i64),
        ("mi_option_deprecated_max_segment_reclaim", mi_option_deprecated_max_segment_reclaim as i64),
        ("mi_option_destroy_on_exit", mi_option_destroy_on_exit as i64),
        ("mi_option_arena_reserve", mi_option_arena_reserve as i64),
        ("mi_option_arena_purge_mult", mi_option_arena_purge_mult as i64),
        ("mi_option_deprecated_purge_extend_delay", mi_option_deprecated_purge_extend_delay as i64),
        ("mi_option_disallow_arena_alloc", mi_option_disallow_arena_alloc as i64),
        ("mi_option_retry_on_oom", mi_option_retry_on_oom as i64),
        ("mi_option_visit_abandoned", mi_option_visit_abandoned as i64),
        ("mi_option_guarded_min", mi_option_guarded_min as i64),
        ("mi_option_guarded_max", mi_option_guarded_max as i64),
        ("mi_option_guarded_precise", mi_option_guarded_precise as i64),
        ("mi_option_guarded_sample_rate", mi_option_guarded_sample_rate as i64),
        ("mi_option_guarded_sample_seed", mi_option_guarded_sample_seed as i64),
        ("mi_option_generic_collect", mi_option_generic_collect as i64),
        ("mi_option_page_reclaim_on_free", mi_option_page_reclaim_on_free as i64),
        ("mi_option_page_full_retain", mi_option_page_full_retain as i64),
        ("mi_option_page_max_candidates", mi_option_page_max_candidates as i64),
        ("mi_option_max_vabits", mi_option_max_vabits as i64),
        ("mi_option_pagemap_commit", mi_option_pagemap_commit as i64),
        ("mi_option_page_commit_on_demand", mi_option_page_commit_on_demand as i64),
        ("mi_option_page_max_reclaim", mi_option_page_max_reclaim as i64),
        ("mi_option_page_cross_thread_max_reclaim", mi_option_page_cross_thread_max_reclaim as i64),
        ("mi_option_allow_thp", mi_option_allow_thp as i64),
        ("mi_option_minimal_purge_size", mi_option_minimal_purge_size as i64),
        ("mi_option_arena_max_object_size", mi_option_arena_max_object_size as i64),
        ("mi_option_arena_is_numa_local", mi_option_arena_is_numa_local as i64),
        ("_mi_option_last", _mi_option_last as i64),
        ("mi_option_large_os_pages", mi_option_large_os_pages as i64),
        ("mi_option_eager_region_commit", mi_option_eager_region_commit as i64),
        ("mi_option_reset_decommits", mi_option_reset_decommits as i64),
        ("mi_option_reset_delay", mi_option_reset_delay as i64),
        ("mi_option_limit_os_alloc", mi_option_limit_os_alloc as i64),
        ("mi_option_live", mi_option_live as i64),
        ("mi_option_live_interval", mi_option_live_interval as i64),
        ("mi_option_purge_thread", mi_option_purge_thread as i64),
    ]);
    let mut problems = Vec::new();
    for (name, value) in &rust {
        match c.get(*name) {
            None => problems.push(format!("{name} = {value} in Rust, not in c/probe_v3.c")),
            Some(v) if v != value => problems.push(format!("{name} = {v} in C (v3 mode), {value} in Rust")),
            Some(_) => {}
        }
    }
    for name in c.keys() {
        if !rust.iter().any(|(n, _)| n == name) {
            problems.push(format!("{name}: in c/probe_v3.c, not compared"));
        }
    }
    assert!(problems.is_empty(), "{} mismatches:\n{}", problems.len(), problems.join("\n"));
    assert!(rust.len() > 70);
}

struct Seen {
    heaps: Vec<usize>,
    stop_after: usize,
}

unsafe extern "C" fn record_heap(heap: *mut ffi::mi_heap_t, arg: *mut c_void) -> bool {
    let seen = &mut *(arg as *mut Seen);
    seen.heaps.push(heap as usize);
    seen.heaps.len() < seen.stop_after
}

/// The main heap first, then the live heaps of `mi_heap_new` of the subprocess; a deleted
/// heap is no longer visited; a visitor that returns false stops the walk; no visitor: false.
#[test]
fn subproc_visit_heaps() {
    unsafe {
        let (a, b) = (v3::mi_heap_new(), v3::mi_heap_new());
        let mut seen = Seen { heaps: Vec::new(), stop_after: usize::MAX };
        let arg = &mut seen as *mut Seen as *mut c_void;
        assert!(v3::mi_subproc_visit_heaps(v3::mi_subproc_current(), Some(record_heap), arg));
        assert_eq!(seen.heaps.first(), Some(&(v3::mi_heap_main() as usize)), "the main heap first");
        assert!(seen.heaps.contains(&(a as usize)) && seen.heaps.contains(&(b as usize)));
        // stop after the first
        let mut once = Seen { heaps: Vec::new(), stop_after: 1 };
        assert!(!v3::mi_subproc_visit_heaps(v3::mi_subproc_main(), Some(record_heap), &mut once as *mut Seen as *mut c_void));
        assert_eq!(once.heaps.len(), 1);
        // a subprocess of its own (no other test makes heaps in it): the main heap, then its
        // heaps; one deleted there is no longer visited
        let sp = v3::mi_subproc_new()._mi_subproc_id as usize;
        let c = std::thread::spawn(move || {
            v3::mi_subproc_add_current_thread(v3::mi_subproc_id_t { _mi_subproc_id: sp as *mut c_void });
            let (c, gone) = (v3::mi_heap_new(), v3::mi_heap_new());
            ffi::mi_heap_delete(gone);
            c as usize
        })
        .join()
        .unwrap();
        let mut in_sp = Seen { heaps: Vec::new(), stop_after: usize::MAX };
        let sp_id = v3::mi_subproc_id_t { _mi_subproc_id: sp as *mut c_void };
        assert!(v3::mi_subproc_visit_heaps(sp_id, Some(record_heap), &mut in_sp as *mut Seen as *mut c_void));
        assert_eq!(in_sp.heaps, [v3::mi_heap_main() as usize, c], "the main heap, then the subprocess' heap");
        assert!(!v3::mi_subproc_visit_heaps(sp_id, None, core::ptr::null_mut()), "no visitor");
        ffi::mi_heap_delete(c as *mut ffi::mi_heap_t);
        ffi::mi_heap_delete(a);
        ffi::mi_heap_delete(b);
    }
}

fn blocks_in_use(st: &v3::mi_stats_t) -> i64 {
    st.malloc_bins.iter().map(|b| b.current).sum()
}

unsafe extern "C" fn count_lines(_msg: *const core::ffi::c_char, arg: *mut c_void) {
    *(arg as *mut usize) += 1;
}

/// A heap's figures: two threads' parts (the other thread ended: its blocks stay the heap's and
/// count, though its part is gone), after frees;
/// a subprocess', the process' in v3's layout, the JSON and the printers.
#[test]
fn heap_and_subprocess_statistics() {
    unsafe {
        let heap = v3::mi_heap_new();
        let mine: Vec<usize> = (0..40).map(|_| ffi::mi_heap_malloc(heap, 100) as usize).collect();
        let h = heap as usize;
        let theirs: Vec<usize> = std::thread::spawn(move || {
            let heap = h as *mut ffi::mi_heap_t;
            let v: Vec<usize> = (0..60).map(|_| ffi::mi_heap_malloc(heap, 100) as usize).collect();
            v3::mi_heap_stats_merge_to_subproc(heap); // published, then the thread ends: its blocks stay
            v
        })
        .join()
        .unwrap();
        let mut st = v3::mi_stats_t::new();
        assert!(v3::mi_heap_stats_get(heap, &mut st));
        assert_eq!(blocks_in_use(&st), 100, "the ended thread's blocks are still the heap's");
        assert_eq!(st.theaps.current, 1, "live parts only");
        assert!(st.malloc_normal.current >= 4000 && st.pages.current >= 1);
        for p in mine.iter().take(10) {
            ffi::mi_free(*p as *mut c_void);
        }
        assert!(v3::mi_heap_stats_get(heap, &mut st));
        assert_eq!(blocks_in_use(&st), 90);
        let json = v3::mi_heap_stats_get_json(heap, 0, core::ptr::null_mut());
        assert!(!json.is_null());
        let text = std::ffi::CStr::from_ptr(json).to_str().unwrap().to_string();
        ffi::mi_free(json as *mut c_void);
        assert!(text.contains("\"stat_version\": 5") && text.contains("\"current\": 90,"), "{text}");
        let mut lines = 0usize;
        v3::mi_heap_stats_print_out(heap, Some(count_lines), &mut lines as *mut usize as *mut c_void);
        assert!(lines >= 4);
        let mut sp = v3::mi_stats_t::new();
        assert!(v3::mi_subproc_stats_get(v3::mi_subproc_main(), &mut sp));
        assert!(sp.pages.current > 0 && sp.heaps.current >= 2);
        assert!(v3::mi_subproc_stats_get_exclusive(v3::mi_subproc_main(), &mut sp));
        let mut all = v3::mi_stats_t::new();
        assert!(ffi::mi_stats_get(&mut all as *mut v3::mi_stats_t as *mut ffi::mi_stats_t), "v3's layout is taken");
        assert!(all.reserved.current > 0);
        let sj = v3::mi_subproc_stats_get_json(v3::mi_subproc_main(), 0, core::ptr::null_mut());
        assert!(!sj.is_null());
        ffi::mi_free(sj as *mut c_void);
        let aj = v3::mi_stats_as_json(&mut st, 0, core::ptr::null_mut());
        assert!(!aj.is_null());
        ffi::mi_free(aj as *mut c_void);
        lines = 0;
        v3::mi_subproc_stats_print_out(v3::mi_subproc_main(), Some(count_lines), &mut lines as *mut usize as *mut c_void);
        v3::mi_subproc_heap_stats_print_out(v3::mi_subproc_main(), Some(count_lines), &mut lines as *mut usize as *mut c_void);
        assert!(lines >= 8);
        assert_eq!(v3::mi_stats_get_bin_size(1), std::mem::size_of::<usize>());
        assert!(v3::mi_stats_get_bin_size(20) > v3::mi_stats_get_bin_size(19));
        for p in mine.iter().skip(10).chain(theirs.iter()) {
            ffi::mi_free(*p as *mut c_void);
        }
        ffi::mi_heap_delete(heap);
    }
}
