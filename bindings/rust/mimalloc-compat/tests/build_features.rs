//! Checks that the Cargo features really select the library build: `override` (malloc of the
//! whole process is ours), `debug` / `debug_in_debug` (heap-misuse checks, exact usable size)
//! and `secure` (double frees detected). No global allocator is set here, so Rust's own
//! allocations go through the system `malloc`.

use mimalloc_compat::{ffi, is_in_heap_region, stats::capture_output};
use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::atomic::{AtomicI32, Ordering};

extern "C" {
    fn malloc(size: usize) -> *mut c_void;
    fn free(p: *mut c_void);
    fn strdup(s: *const c_char) -> *mut c_char;
}

const OVERRIDE: bool = cfg!(feature = "override");
const DEBUG: bool = cfg!(feature = "debug") || (cfg!(feature = "debug_in_debug") && cfg!(debug_assertions));
const SECURE: bool = cfg!(feature = "secure");

#[test]
fn malloc_is_ours_exactly_with_override() {
    // make sure the library is linked and initialised
    assert!(mimalloc_compat::version() > 0);
    unsafe {
        let p = malloc(100);
        assert_eq!(is_in_heap_region(p.cast()), OVERRIDE, "malloc");
        free(p);
        // libc's own call to malloc, inside strdup
        let c = CString::new("through libc").unwrap();
        assert_eq!(is_in_heap_region(c.as_ptr().cast()), OVERRIDE, "CString via the system allocator");
        let d = strdup(c.as_ptr());
        assert_eq!(is_in_heap_region(d.cast()), OVERRIDE, "strdup");
        free(d.cast());
        // a block handed from Rust to C: C frees it with free()
        let raw = c.into_raw();
        drop(CString::from_raw(raw));
    }
    let b = Box::new([1u8; 64]);
    assert_eq!(is_in_heap_region(b.as_ptr()), OVERRIDE, "Box with the System allocator");
}

#[test]
fn build_line_reports_debug_and_secure_levels() {
    let ((), out) = capture_output(|| unsafe { ffi::mi_options_print() });
    let debug_level = if DEBUG { "debug level : 2" } else { "debug level : 0" };
    let secure_level = if SECURE { "secure level: 1" } else { "secure level: 0" };
    assert!(out.contains(debug_level), "expected {debug_level:?} in:\n{out}");
    assert!(out.contains(secure_level), "expected {secure_level:?} in:\n{out}");
}

#[test]
fn usable_size_is_exact_only_in_debug_builds() {
    unsafe {
        let p = ffi::mi_malloc(13);
        let usable = ffi::mi_usable_size(p);
        if DEBUG {
            assert_eq!(usable, 13, "debug builds: the requested size");
            // new memory is filled with 0xD0
            assert!((0..13).all(|i| *p.cast::<u8>().add(i) == 0xD0));
        } else {
            assert!(usable >= 16);
        }
        ffi::mi_free(p);
    }
}

static LAST_ERROR: AtomicI32 = AtomicI32::new(0);

unsafe extern "C" fn on_error(err: c_int, _arg: *mut c_void) {
    LAST_ERROR.store(err, Ordering::SeqCst);
}

#[test]
fn double_free_is_detected_in_secure_and_debug_builds() {
    if !(SECURE || DEBUG) {
        eprintln!("release build: a double free is undefined behaviour, not tested");
        return;
    }
    unsafe {
        ffi::mi_register_error(Some(on_error), std::ptr::null_mut());
        // release and secure builds print errors only when asked to
        mimalloc_compat::MiOption::ShowErrors.enable();
        let ((), out) = capture_output(|| {
            let p = ffi::mi_malloc(48);
            ffi::mi_free(p);
            ffi::mi_free(p);
        });
        ffi::mi_register_error(None, std::ptr::null_mut());
        assert_eq!(LAST_ERROR.load(Ordering::SeqCst), 11 /* EAGAIN */, "{out}");
        assert!(out.contains("double free"), "{out}");
    }
}
