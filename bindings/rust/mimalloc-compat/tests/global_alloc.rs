//! The crate as the program's global allocator: every Rust allocation comes from it, also
//! under a multi-threaded churn of collections whose blocks are freed on other threads.

use mimalloc_compat::{is_in_heap_region, MiMalloc};
use std::collections::{BTreeMap, HashMap};
use std::sync::mpsc;
use std::thread;

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

#[test]
fn the_global_allocator_is_ours() {
    let b = Box::new(12345u64);
    assert!(is_in_heap_region(&*b as *const u64 as *const u8));
    let s = String::from("hello");
    assert!(is_in_heap_region(s.as_ptr()));
    let big = vec![0u8; 64 << 20]; // a huge block
    assert!(is_in_heap_region(big.as_ptr()));
    let local = 7u64;
    assert!(!is_in_heap_region(&local as *const u64 as *const u8));
    static STATIC: u64 = 9;
    assert!(!is_in_heap_region(&STATIC as *const u64 as *const u8));
    assert!(unsafe { GLOBAL.usable_size(&*b as *const u64 as *const u8) } >= 8);
    assert_eq!(GLOBAL.version(), 20401);
}

#[test]
fn over_aligned_types() {
    #[repr(align(4096))]
    struct Page([u8; 4096]);
    let pages: Vec<Box<Page>> = (0..20).map(|i| Box::new(Page([i as u8; 4096]))).collect();
    for (i, p) in pages.iter().enumerate() {
        assert_eq!(&**p as *const Page as usize % 4096, 0);
        assert!(p.0.iter().all(|&b| b == i as u8));
    }
    let zeroed: Vec<u128> = vec![0; 1000];
    assert_eq!(zeroed.as_ptr() as usize % std::mem::align_of::<u128>(), 0);
    assert!(zeroed.iter().all(|&x| x == 0));
}

fn checksum(s: &str) -> u64 {
    s.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64))
}

/// Each worker builds strings, vectors and maps, keeps some, and sends others to the next
/// worker, which checks their contents and frees them (cross-thread frees).
#[test]
fn multithreaded_churn_with_cross_thread_frees() {
    const THREADS: usize = 4;
    const ROUNDS: usize = 300;
    let (senders, receivers): (Vec<_>, Vec<_>) =
        (0..THREADS).map(|_| mpsc::channel::<(u64, Vec<String>, HashMap<u32, Vec<u32>>)>()).unzip();
    let mut handles = Vec::new();
    for (t, rx) in receivers.into_iter().enumerate() {
        let tx = senders[(t + 1) % THREADS].clone();
        handles.push(thread::spawn(move || {
            let mut kept: BTreeMap<usize, String> = BTreeMap::new();
            let mut received = 0usize;
            for round in 0..ROUNDS {
                let strings: Vec<String> = (0..50)
                    .map(|i| format!("t{t}-r{round}-i{i}-{}", "x".repeat((i * 7 + round) % 200)))
                    .collect();
                let sum = strings.iter().map(|s| checksum(s)).fold(0u64, u64::wrapping_add);
                let mut map = HashMap::new();
                for k in 0..(round % 40) as u32 {
                    map.insert(k, (0..k).collect::<Vec<u32>>());
                }
                kept.insert(round, strings[round % 50].clone());
                if kept.len() > 64 {
                    let first = *kept.keys().next().unwrap();
                    kept.remove(&first);
                }
                tx.send((sum, strings, map)).unwrap();
                // free what the previous worker sent, after checking it
                while let Ok((sum, strings, map)) = rx.try_recv() {
                    assert_eq!(strings.iter().map(|s| checksum(s)).fold(0u64, u64::wrapping_add), sum);
                    for (k, v) in &map {
                        assert_eq!(v.len(), *k as usize);
                        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u32));
                    }
                    assert!(is_in_heap_region(strings.as_ptr().cast()));
                    received += 1;
                }
            }
            drop(tx);
            // the rest
            for (sum, strings, _map) in rx.iter() {
                assert_eq!(strings.iter().map(|s| checksum(s)).fold(0u64, u64::wrapping_add), sum);
                received += 1;
            }
            for (round, s) in &kept {
                assert!(s.starts_with(&format!("t{t}-r{round}-")));
            }
            received
        }));
    }
    drop(senders);
    let total: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(total, THREADS * ROUNDS);
    mimalloc_compat::collect(true);
}

#[test]
fn realloc_growth_keeps_contents() {
    let mut v: Vec<u32> = Vec::new();
    for i in 0..1_000_000u32 {
        v.push(i);
    }
    assert!(v.iter().enumerate().all(|(i, &x)| x == i as u32));
    v.truncate(5);
    v.shrink_to_fit();
    assert_eq!(v, [0, 1, 2, 3, 4]);
    assert!(is_in_heap_region(v.as_ptr().cast()));
}
