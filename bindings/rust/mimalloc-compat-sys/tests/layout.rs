//! Compares the Rust definitions with the C compiler's view of the headers: `c/probe.c`
//! (compiled by build.rs with the library's flags) reports the size, alignment and field
//! offsets of each public struct, every option value and every constant. Each probe row must
//! have a Rust counterpart with the same value, and each Rust row a probe row.

use mimalloc_compat_sys::*;
use std::collections::BTreeMap;
use std::ffi::CStr;
use std::mem::{align_of, offset_of, size_of};

fn probe() -> BTreeMap<String, i64> {
    let mut count = 0usize;
    let table = unsafe { probe::mi_compat_probe_table(&mut count) };
    assert!(!table.is_null() && count > 0);
    let rows = unsafe { std::slice::from_raw_parts(table, count) };
    let mut map = BTreeMap::new();
    for row in rows {
        let name = unsafe { CStr::from_ptr(row.name) }.to_str().unwrap().to_string();
        assert!(map.insert(name.clone(), row.value).is_none(), "probe row {name} twice");
    }
    map
}

macro_rules! rows {
    ($($name:expr => $value:expr,)*) => {{
        let v: Vec<(String, i64)> = vec![$( ($name.to_string(), $value as i64), )*];
        v
    }};
}

macro_rules! layout {
    ($v:ident, $ty:ident { $($field:ident),* }) => {
        $v.push((format!("sizeof({})", stringify!($ty)), size_of::<$ty>() as i64));
        $v.push((format!("alignof({})", stringify!($ty)), align_of::<$ty>() as i64));
        $( $v.push((format!("offsetof({},{})", stringify!($ty), stringify!($field)),
                    offset_of!($ty, $field) as i64));
           $v.push((format!("sizeof({}.{})", stringify!($ty), stringify!($field)),
                    field_size(|s: &$ty| &s.$field) as i64)); )*
    };
}

macro_rules! options {
    ($v:ident, $($name:ident),* $(,)?) => {
        $( $v.push((stringify!($name).to_string(), $name as i64)); )*
    };
}

/// The size of a field's type, named through a projection closure.
fn field_size<T, F>(_field: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

fn rust_rows() -> Vec<(String, i64)> {
    let mut v = rows! {
        "MI_MALLOC_VERSION" => MI_MALLOC_VERSION,
        "MI_SMALL_WSIZE_MAX" => MI_SMALL_WSIZE_MAX,
        "MI_SMALL_SIZE_MAX" => MI_SMALL_SIZE_MAX,
        "MI_STAT_VERSION" => MI_STAT_VERSION,
        "MI_BIN_HUGE" => MI_BIN_HUGE,
        "sizeof(mi_arena_id_t)" => size_of::<mi_arena_id_t>(),
        "alignof(mi_arena_id_t)" => align_of::<mi_arena_id_t>(),
        "sizeof(mi_subproc_id_t)" => size_of::<mi_subproc_id_t>(),
        "alignof(mi_subproc_id_t)" => align_of::<mi_subproc_id_t>(),
        "sizeof(mi_option_t)" => size_of::<mi_option_t>(),
        "alignof(mi_option_t)" => align_of::<mi_option_t>(),
        "sizeof(bool)" => size_of::<bool>(),
        "alignof(bool)" => align_of::<bool>(),
        "sizeof(long)" => size_of::<std::ffi::c_long>(),
        "alignof(long)" => align_of::<std::ffi::c_long>(),
        "sizeof(wchar_t)" => size_of::<wchar_t>(),
        "alignof(wchar_t)" => align_of::<wchar_t>(),
    };
    layout!(v, mi_heap_area_t { blocks, reserved, committed, used, block_size, full_block_size, heap_tag });
    layout!(v, mi_stat_count_t { total, peak, current });
    layout!(v, mi_stat_counter_t { total });
    v.push(("sizeof(mi_stats_t)".into(), size_of::<mi_stats_t>() as i64));
    v.push(("alignof(mi_stats_t)".into(), align_of::<mi_stats_t>() as i64));
    for (field, offset, size) in MI_STATS_FIELDS {
        v.push((format!("offsetof(mi_stats_t,{field})"), *offset as i64));
        v.push((format!("sizeof(mi_stats_t.{field})"), *size as i64));
    }
    options!(v,
        mi_option_show_errors, mi_option_show_stats, mi_option_verbose, mi_option_eager_commit,
        mi_option_arena_eager_commit, mi_option_purge_decommits, mi_option_allow_large_os_pages,
        mi_option_reserve_huge_os_pages, mi_option_reserve_huge_os_pages_at,
        mi_option_reserve_os_memory, mi_option_deprecated_segment_cache,
        mi_option_deprecated_page_reset, mi_option_abandoned_page_purge,
        mi_option_deprecated_segment_reset, mi_option_eager_commit_delay, mi_option_purge_delay,
        mi_option_use_numa_nodes, mi_option_disallow_os_alloc, mi_option_os_tag,
        mi_option_max_errors, mi_option_max_warnings, mi_option_max_segment_reclaim,
        mi_option_destroy_on_exit, mi_option_arena_reserve, mi_option_arena_purge_mult,
        mi_option_purge_extend_delay, mi_option_abandoned_reclaim_on_free,
        mi_option_disallow_arena_alloc, mi_option_retry_on_oom, mi_option_visit_abandoned,
        mi_option_guarded_min, mi_option_guarded_max, mi_option_guarded_precise,
        mi_option_guarded_sample_rate, mi_option_guarded_sample_seed,
        mi_option_target_segments_per_thread, mi_option_generic_collect, mi_option_allow_thp,
        _mi_option_last, mi_option_large_os_pages, mi_option_eager_region_commit,
        mi_option_reset_decommits, mi_option_reset_delay, mi_option_abandoned_page_reset,
        mi_option_limit_os_alloc, MI_OPTION_EXT_FIRST, mi_option_live, mi_option_live_interval,
        mi_option_purge_thread,
        mi_option_memory_limit,
        mi_option_memory_limit_hard,
    );
    v
}

#[test]
fn rust_definitions_match_the_c_compiler() {
    let c = probe();
    let rust = rust_rows();
    let mut problems = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (name, value) in &rust {
        assert!(seen.insert(name.clone()), "Rust row {name} twice");
        match c.get(name) {
            None => problems.push(format!("{name}: not reported by c/probe.c")),
            Some(cv) if cv != value => problems.push(format!("{name}: C {cv}, Rust {value}")),
            Some(_) => {}
        }
    }
    for name in c.keys() {
        if !seen.contains(name) {
            problems.push(format!("{name}: reported by c/probe.c, no Rust counterpart"));
        }
    }
    assert!(problems.is_empty(), "{} mismatches:\n{}", problems.len(), problems.join("\n"));
    eprintln!("{} layout rows checked", rust.len());
}

#[test]
fn stats_struct_is_accepted_by_the_library() {
    let mut stats = mi_stats_t::new();
    let p = unsafe { mi_malloc(100) };
    assert!(unsafe { mi_stats_get(&mut stats) });
    unsafe { mi_free(p) };
    assert_eq!(stats.size, size_of::<mi_stats_t>());
    assert!(stats.committed.current > 0);
    // a struct of the wrong version is refused
    let mut wrong = mi_stats_t::new();
    wrong.version += 1;
    assert!(!unsafe { mi_stats_get(&mut wrong) });
}

#[test]
fn heap_area_is_read_correctly_by_a_visitor() {
    unsafe extern "C" fn visit(
        _heap: *const mi_heap_t,
        area: *const mi_heap_area_t,
        block: *mut std::ffi::c_void,
        block_size: usize,
        arg: *mut std::ffi::c_void,
    ) -> bool {
        let found = &mut *(arg as *mut (usize, usize));
        let area = &*area;
        if block.is_null() && (48..=64).contains(&area.block_size) {
            found.0 += area.used;
        } else if !block.is_null() && (48..=64).contains(&block_size) {
            found.1 += 1;
        }
        true
    }
    unsafe {
        let heap = mi_heap_new();
        let blocks: Vec<_> = (0..10).map(|_| mi_heap_malloc(heap, 48)).collect();
        let mut found = (0usize, 0usize);
        assert!(mi_heap_visit_blocks(heap, true, Some(visit), &mut found as *mut _ as *mut _));
        assert_eq!(found, (10, 10));
        for b in blocks {
            mi_free(b);
        }
        mi_heap_delete(heap);
    }
}
