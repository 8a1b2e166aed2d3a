//! Builds the allocator from the repository's C sources: the whole library is the one
//! translation unit `src/static.c`, compiled with the `cc` crate (no CMake), plus the small
//! layout probes `c/probe.c` and `c/probe_v3.c` (the header in its `MI_V3_API` mode) that the
//! tests read (the linker drops them from programs that do not call them).

use std::env;
use std::path::{Path, PathBuf};

fn feature(name: &str) -> bool {
    env::var_os(format!("CARGO_FEATURE_{}", name.to_uppercase())).is_some()
}

/// The repository root: `MIMALLOC_COMPAT_ROOT` if set, else three levels above this crate
/// (`<root>/bindings/rust/mimalloc-compat-sys`).
fn source_root(manifest_dir: &Path) -> PathBuf {
    println!("cargo:rerun-if-env-changed=MIMALLOC_COMPAT_ROOT");
    let root = match env::var_os("MIMALLOC_COMPAT_ROOT") {
        Some(dir) => PathBuf::from(dir),
        None => manifest_dir.join("../../.."),
    };
    let root = root.canonicalize().unwrap_or(root);
    if !root.join("src/static.c").is_file() || !root.join("include/mimalloc.h").is_file() {
        panic!(
            "mimalloc-compat-sys: the allocator's C sources are not at {} (expected src/static.c \
             and include/mimalloc.h there). Use this crate from a checkout of the repository \
             (a path or git dependency), or set MIMALLOC_COMPAT_ROOT to the repository root.",
            root.display()
        );
    }
    root
}

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = source_root(&manifest_dir);
    let include = root.join("include");

    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os != "linux" {
        println!(
            "cargo:warning=mimalloc-compat-sys: the allocator supports Linux only (target os: {target_os})"
        );
    }

    // debug_in_debug: a debug build of the allocator only in a debug profile
    let profile_is_debug = env::var("PROFILE").map(|p| p == "debug").unwrap_or(false);
    let debug = feature("debug") || (feature("debug_in_debug") && profile_is_debug);
    let secure = feature("secure");
    let override_malloc = feature("override");
    let local_dynamic_tls = feature("local_dynamic_tls");

    let mut build = cc::Build::new();
    build
        .file(root.join("src/static.c"))
        .file(manifest_dir.join("c/probe.c"))
        .file(manifest_dir.join("c/probe_v3.c"))
        .include(&include)
        .warnings(false)
        .flag("-std=gnu11")
        .flag("-fvisibility=hidden")
        .flag("-fno-builtin-malloc")
        .flag_if_supported("-fno-semantic-interposition");
    build.flag(if local_dynamic_tls {
        "-ftls-model=local-dynamic"
    } else {
        "-ftls-model=initial-exec"
    });

    if debug {
        // as CMake's Debug build: assertions and checks, no optimisation, and (gcc) callers
        // of allocations recorded for the leak report
        build.define("MI_DEBUG", "2").opt_level(0).debug(true);
        if build.get_compiler().is_like_gnu() {
            build
                .define("MI_DEBUG_TRACE_CALLER", "1")
                .flag("-fno-omit-frame-pointer")
                .flag("-fno-toplevel-reorder")
                .flag("-fno-reorder-functions");
        }
    } else {
        build.define("NDEBUG", None).opt_level(3);
    }
    if secure {
        build.define("MI_SECURE", "1").define("MI_GUARDED", "0");
    }
    if override_malloc {
        build.define("MI_MALLOC_OVERRIDE", "1");
    }

    build.compile("mimalloc_compat");

    println!("cargo:rustc-link-lib=pthread");
    println!("cargo:rustc-link-lib=dl");

    // for dependents' build scripts (DEP_MIMALLOC_COMPAT_INCLUDE / _ROOT)
    println!("cargo:include={}", include.display());
    println!("cargo:root={}", root.display());

    println!("cargo:rerun-if-changed={}", root.join("src").display());
    println!("cargo:rerun-if-changed={}", include.display());
    println!("cargo:rerun-if-changed=c/probe.c");
    println!("cargo:rerun-if-changed=c/probe_v3.c");
    println!("cargo:rerun-if-changed=build.rs");
}
