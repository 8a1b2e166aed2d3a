//! The safe v3 API (feature `v3`): a heap shared by threads, the main heap, theaps, options.
#![cfg(feature = "v3")]

use mimalloc_compat::ffi;
use mimalloc_compat::v3::{self, SharedHeap, Theap};
use std::sync::{Arc, Barrier, Mutex};

/// Eight threads allocate in one heap, each frees the next one's blocks, the heap is deleted
/// by the last owner; then the same with the heap destroyed while blocks of every thread
/// are still in it.
#[test]
fn shared_heap_across_threads() {
    const THREADS: usize = 8;
    for destroy in [false, true] {
        let heap = Arc::new(SharedHeap::new());
        let slots: Arc<Vec<Mutex<Vec<usize>>>> = Arc::new((0..THREADS).map(|_| Mutex::new(Vec::new())).collect());
        let barrier = Arc::new(Barrier::new(THREADS));
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let (heap, slots, barrier) = (heap.clone(), slots.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    for i in 0..300 {
                        let p = if i % 2 == 0 { heap.malloc(8 + i) } else { heap.zalloc(8 + i) };
                        assert!(!p.is_null());
                        assert!(heap.contains(p), "v3: the block is the heap's");
                        unsafe { p.write(t as u8) };
                        mine.push(p as usize);
                    }
                    *slots[t].lock().unwrap() = mine;
                    barrier.wait();
                    if !destroy {
                        for p in std::mem::take(&mut *slots[(t + 1) % THREADS].lock().unwrap()) {
                            assert_eq!(unsafe { *(p as *const u8) }, ((t + 1) % THREADS) as u8);
                            unsafe { ffi::mi_free(p as *mut _) };
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let heap = Arc::try_unwrap(heap).expect("all threads are done");
        let p = heap.calloc(10, 10);
        assert!(!p.is_null() && unsafe { std::slice::from_raw_parts(p, 100) }.iter().all(|&b| b == 0));
        if destroy {
            heap.destroy();
        } else {
            unsafe { ffi::mi_free(p.cast()) };
            heap.delete();
        }
    }
}

#[test]
fn shared_heap_allocation_functions() {
    let other = SharedHeap::try_new().expect("a heap");
    let default = SharedHeap::default();
    assert!(!other.is_main() && !default.is_main() && other.as_ptr() != default.as_ptr());
    drop((other, default));
    let heap = SharedHeap::new();
    assert!(!heap.is_main());
    let a = heap.malloc_aligned(100, 4096);
    assert!(!a.is_null() && a as usize % 4096 == 0 && heap.contains(a));
    let z = heap.zalloc_aligned(300, 128);
    assert!(!z.is_null() && z as usize % 128 == 0);
    assert!(unsafe { std::slice::from_raw_parts(z, 300) }.iter().all(|&b| b == 0));
    assert!(heap.malloc_aligned(10, 3).is_null(), "not a power of two");
    assert!(heap.calloc(usize::MAX, 2).is_null(), "overflow");
    let layout = std::alloc::Layout::from_size_align(48, 64).unwrap();
    let l = heap.alloc(layout).unwrap();
    let lz = heap.alloc_zeroed(layout).unwrap();
    assert_eq!(l.as_ptr() as usize % 64, 0);
    assert!(unsafe { std::slice::from_raw_parts(lz.as_ptr(), 48) }.iter().all(|&b| b == 0));
    unsafe {
        a.write_bytes(5, 100);
        let a1 = heap.realloc_aligned(a, 200, 4096);
        assert!(!a1.is_null() && a1 as usize % 4096 == 0 && *a1.add(99) == 5);
        let a2 = heap.realloc(a1, 100_000);
        assert!(!a2.is_null() && *a2.add(99) == 5 && heap.contains(a2));
        for p in [a2, z, l.as_ptr(), lz.as_ptr()] {
            ffi::mi_free(p.cast());
        }
    }
    heap.collect(true);
    let stack = 0u8;
    assert!(!heap.contains(&stack));
}

#[test]
fn main_heap() {
    let main = SharedHeap::main();
    assert!(main.is_main());
    let other = std::thread::spawn(|| SharedHeap::main().as_ptr() as usize).join().unwrap();
    assert_eq!(other, main.as_ptr() as usize, "one main heap for all threads");
    let p = main.malloc(50);
    assert!(!p.is_null() && main.contains(p));
    let q = unsafe { ffi::mi_malloc(50) }.cast::<u8>();
    assert!(main.contains(q), "a default block is the main heap's");
    let h = SharedHeap::new();
    let r = h.malloc(50);
    assert!(!main.contains(r) && h.contains(r) && !h.contains(q));
    unsafe {
        for x in [p, q, r] {
            ffi::mi_free(x.cast());
        }
    }
    // dropping or destroying the handle leaves the main heap alone
    main.destroy();
    drop(SharedHeap::main());
    let s = SharedHeap::main().malloc(8);
    assert!(!s.is_null());
    unsafe { ffi::mi_free(s.cast()) };
}

#[test]
fn check_owned_sees_every_thread() {
    let p = std::thread::spawn(|| unsafe { ffi::mi_malloc(32) } as usize).join().unwrap() as *mut u8;
    assert!(v3::check_owned(p));
    let stack = 0u8;
    assert!(!v3::check_owned(&stack));
    unsafe { ffi::mi_free(p.cast()) };
}

#[test]
fn theaps() {
    let heap = SharedHeap::new();
    let theap = heap.theap().unwrap();
    assert_eq!(heap.theap().unwrap().as_ptr(), theap.as_ptr());
    let blocks = [
        theap.malloc(100),
        theap.zalloc(200),
        theap.calloc(3, 100),
        theap.malloc_small(16),
        theap.zalloc_small(64),
        theap.malloc_small(100_000), // beyond the small size: the general path
        theap.zalloc_small(100_000),
        theap.malloc_aligned(64, 1024),
    ];
    assert!(blocks.iter().all(|p| !p.is_null() && heap.contains(*p)));
    assert!(unsafe { std::slice::from_raw_parts(blocks[6], 100_000) }.iter().all(|&b| b == 0));
    assert_eq!(blocks[7] as usize % 1024, 0);
    let (count, bytes) = theap.live_blocks();
    assert_eq!(count, blocks.len());
    assert!(bytes >= 100 + 200 + 300 + 16 + 64 + 200_000 + 64, "{bytes}");
    let grown = unsafe { theap.realloc(blocks[0], 10_000) };
    assert!(!grown.is_null() && heap.contains(grown));
    for p in blocks.iter().skip(1).chain([&grown]) {
        unsafe { ffi::mi_free(p.cast()) };
    }
    theap.collect(true);
    assert_eq!(theap.live_blocks(), (0, 0));

    let dflt = Theap::default_theap();
    assert_ne!(dflt.as_ptr(), theap.as_ptr());
    assert_eq!(SharedHeap::main().theap().unwrap().as_ptr(), dflt.as_ptr(), "the main heap's part is the default");
    let d = dflt.malloc(10);
    assert!(SharedHeap::main().contains(d));
    unsafe { ffi::mi_free(d.cast()) };
}

#[test]
fn options_by_v3_number() {
    use ffi::v3 as o;
    v3::option_set(o::mi_option_guarded_sample_seed, 4242); // v2's 34, v3's 33
    assert_eq!(v3::option_get(o::mi_option_guarded_sample_seed), 4242);
    assert_eq!(mimalloc_compat::MiOption::GuardedSampleSeed.get(), 4242);
    v3::option_set(o::mi_option_max_vabits, 40); // v3 only: reads back
    assert_eq!(v3::option_get(o::mi_option_max_vabits), 40);
    assert!(v3::option_is_enabled(o::mi_option_max_vabits));
    v3::option_set(o::mi_option_max_vabits, 0);
    assert!(!v3::option_is_enabled(o::mi_option_max_vabits));
    v3::option_set(999, 1); // unknown: ignored
    assert_eq!(v3::option_get(999), 0);
}

#[test]
fn shared_heap_in_an_arena() {
    let mut id: ffi::v3::mi_arena_id_t = std::ptr::null_mut();
    assert_eq!(unsafe { ffi::v3::mi_reserve_os_memory_ex(32 << 20, false, false, true, &mut id) }, 0);
    let heap = SharedHeap::in_arena(id).expect("a heap in the arena");
    let p = std::thread::scope(|s| s.spawn(|| heap.malloc(1000) as usize).join().unwrap()) as *mut u8;
    let q = heap.malloc(1000);
    for x in [p, q] {
        assert!(!x.is_null());
        assert!(unsafe { ffi::v3::mi_arena_contains(id, x.cast()) }, "allocated in the arena");
    }
    let r = unsafe { ffi::mi_malloc(1000) };
    assert!(!unsafe { ffi::v3::mi_arena_contains(id, r) });
    unsafe {
        for x in [p, q, r.cast()] {
            ffi::mi_free(x.cast());
        }
    }
    heap.delete();
}

/// `&SharedHeap` as an `allocator_api2` allocator: vectors in one heap, grown on several
/// threads, dropped on another one.
#[cfg(feature = "allocator-api2")]
#[test]
fn shared_heap_as_allocator_api2() {
    use allocator_api2::vec::Vec as AVec;
    let heap = SharedHeap::new();
    let vecs: Vec<AVec<u64, &SharedHeap>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..4u64)
            .map(|t| {
                let heap = &heap;
                s.spawn(move || {
                    let mut v = AVec::new_in(heap);
                    for i in 0..10_000 {
                        v.push(t * 100_000 + i);
                    }
                    assert!(heap.contains(v.as_ptr().cast()), "grown in this thread's part");
                    v
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    for (t, v) in vecs.iter().enumerate() {
        assert_eq!(v.len(), 10_000);
        assert!(v.iter().enumerate().all(|(i, &x)| x == t as u64 * 100_000 + i as u64));
    }
    std::thread::scope(|s| {
        s.spawn(move || drop(vecs)); // freed on yet another thread
    });
    let mut z = AVec::<u8, _>::with_capacity_in(10, &heap);
    z.extend_from_slice(&[1, 2, 3]);
    z.shrink_to_fit();
    assert_eq!(&z[..], &[1, 2, 3]);
    drop(z);
    heap.delete();
}

#[test]
fn visit_heaps() {
    let (a, b) = (SharedHeap::new(), SharedHeap::new());
    let mut seen = Vec::new();
    assert!(v3::visit_heaps(|h| {
        seen.push(h);
        true
    }));
    assert_eq!(seen.first(), Some(&SharedHeap::main().as_ptr()), "the main heap first");
    assert!(seen.contains(&a.as_ptr()) && seen.contains(&b.as_ptr()));
    let mut n = 0;
    assert!(!v3::visit_heaps(|_| {
        n += 1;
        n < 2
    }), "stopped by the visitor");
    assert_eq!(n, 2);
    a.delete();
    b.delete();
}

#[test]
fn numa_affinity_is_a_preference() {
    // (the library's own test pretends two nodes; here any number of nodes: allocation goes on)
    let heap = SharedHeap::try_new().expect("a heap");
    heap.set_numa_affinity(Some(3));
    let p = std::thread::scope(|s| s.spawn(|| heap.malloc(3000) as usize).join().unwrap()) as *mut u8;
    let q = heap.malloc(100_000);
    assert!(!p.is_null() && !q.is_null() && heap.contains(q));
    SharedHeap::main().set_numa_affinity(Some(0));
    let r = SharedHeap::main().malloc(5000);
    assert!(!r.is_null());
    SharedHeap::main().set_numa_affinity(None);
    heap.set_numa_affinity(None);
    unsafe {
        mimalloc_compat::ffi::mi_free(r.cast());
        mimalloc_compat::ffi::mi_free(q.cast());
        mimalloc_compat::ffi::mi_free(p.cast());
    }
}
