//! A plain timed benchmark of the global allocator (not a test). The allocator is chosen at
//! build time so that each binary links only one of them:
//!
//! ```sh
//! cargo build --release -p mimalloc-compat-bench                       # system allocator
//! cargo build --release -p mimalloc-compat-bench --features ours       # this repository's
//! cargo build --release -p mimalloc-compat-bench --features registry   # crates.io mimalloc
//! ```
//!
//! `alloc-bench [reps]` runs each workload `reps` times (default 1) and prints one line per
//! run: `<allocator> <workload> <milliseconds>`. `bench/run.sh` builds the three binaries and
//! interleaves their runs.

use std::collections::{BTreeMap, HashMap};
use std::hint::black_box;
use std::time::Instant;

#[cfg(all(feature = "ours", feature = "registry"))]
compile_error!("choose one allocator feature: `ours` or `registry`");

#[cfg(feature = "ours")]
#[global_allocator]
static GLOBAL: mimalloc_compat::MiMalloc = mimalloc_compat::MiMalloc;
#[cfg(feature = "ours")]
const ALLOCATOR: &str = "ours";

#[cfg(feature = "registry")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
#[cfg(all(feature = "registry", not(feature = "registry-v2")))]
const ALLOCATOR: &str = "mimalloc-crate";
#[cfg(feature = "registry-v2")]
const ALLOCATOR: &str = "mimalloc-crate-v2";

#[cfg(not(any(feature = "ours", feature = "registry")))]
const ALLOCATOR: &str = "system";

/// A small deterministic generator (xorshift), so that every build does the same work.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Threads build and drop Vecs, Strings, HashMaps and BTreeMaps; a quarter of the objects go
/// to the next thread through a channel and are freed there.
fn collections_churn(threads: usize, rounds: usize) -> u64 {
    use std::sync::mpsc;
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..threads).map(|_| mpsc::channel::<Vec<String>>()).unzip();
    let handles: Vec<_> = rxs
        .into_iter()
        .enumerate()
        .map(|(t, rx)| {
            let tx = txs[(t + 1) % threads].clone();
            std::thread::spawn(move || {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1));
                let mut sum = 0u64;
                for round in 0..rounds {
                    let mut map: HashMap<u64, String> = HashMap::new();
                    let mut tree: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
                    for i in 0..200u64 {
                        let k = rng.next() % 1000;
                        map.insert(k, format!("{k}-{i}-{}", "y".repeat((k % 64) as usize)));
                        tree.insert(k, (0..(k % 100) as u32).collect());
                    }
                    sum += map.values().map(|s| s.len() as u64).sum::<u64>();
                    sum += tree.values().map(|v| v.len() as u64).sum::<u64>();
                    let outgoing: Vec<String> = map.into_values().take(50).collect();
                    if round % 2 == 0 {
                        let _ = tx.send(outgoing);
                    }
                    while let Ok(v) = rx.try_recv() {
                        sum += v.len() as u64;
                    }
                }
                drop(tx);
                for v in rx.iter() {
                    sum += v.len() as u64;
                }
                sum
            })
        })
        .collect();
    drop(txs);
    handles.into_iter().map(|h| h.join().unwrap()).sum()
}

/// One thread allocates and frees small boxes, keeping a sliding window of live ones.
fn small_objects(iterations: usize) -> u64 {
    let mut rng = Rng(42);
    let mut window: Vec<Option<Box<[u8]>>> = (0..1024).map(|_| None).collect();
    let mut sum = 0u64;
    for _ in 0..iterations {
        let r = rng.next();
        let size = 8 + (r % 248) as usize;
        let slot = ((r >> 16) % 1024) as usize;
        let b = vec![(r & 0xFF) as u8; size].into_boxed_slice();
        sum += b[size - 1] as u64;
        window[slot] = Some(black_box(b));
    }
    sum + window.iter().flatten().count() as u64
}

/// A named workload; it returns a checksum so that its work is not optimised away.
type Workload = (&'static str, fn() -> u64);

fn main() {
    let reps: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let workloads: [Workload; 2] = [
        ("collections-4t", || collections_churn(4, 400)),
        ("small-objects", || small_objects(5_000_000)),
    ];
    for _ in 0..reps {
        for (name, f) in &workloads {
            let start = Instant::now();
            black_box(f());
            println!("{ALLOCATOR} {name} {:.1}", start.elapsed().as_secs_f64() * 1000.0);
        }
    }
}
