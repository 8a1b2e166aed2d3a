//! Checks the hand-written declarations of `src/lib.rs` against the C headers: every function
//! that `include/mimalloc.h` and `include/mimalloc-stats.h` export (`mi_decl_export`) must be
//! declared here with the same parameter count and the same types (C types mapped to Rust
//! ones), and nothing else may be declared; likewise the callback typedefs, the option
//! enumeration and the options this implementation defines beyond it (`#define mi_option_*`
//! from `MI_OPTION_EXT_FIRST` on).

use std::collections::BTreeMap;
use std::path::PathBuf;

fn include_dir() -> PathBuf {
    let root = match std::env::var_os("MIMALLOC_COMPAT_ROOT") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.."),
    };
    root.join("include")
}

/// Headers that are parts of `mimalloc.h`, never included on their own: `mimalloc.h` includes
/// `mimalloc-v3.h` in v3 mode. (`mimalloc-stats.h` includes `mimalloc.h`, but is read beside it.)
const PART_HEADERS: [&str; 1] = ["mimalloc-v3.h"];

/// The text of a header of `include/`, with each `#include` of a part header replaced by that
/// header's text, as the preprocessor does; the mode filters below then keep or drop it with
/// the `#if` around the `#include`.
fn read_header(name: &str) -> String {
    let path = include_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut out = String::new();
    for line in text.lines() {
        let included = line.trim_start().strip_prefix('#').map(str::trim_start)
            .and_then(|d| d.strip_prefix("include")).map(str::trim)
            .and_then(|f| f.strip_prefix('"')).and_then(|f| f.strip_suffix('"'));
        match included {
            Some(file) if PART_HEADERS.contains(&file) => out += &read_header(file),
            _ => out += line,
        }
        out.push('\n');
    }
    out
}

#[test]
fn read_header_splices_the_v3_header() {
    let v2 = v2_mode(&read_header("mimalloc.h"));
    let v3 = v3_mode(&read_header("mimalloc.h"));
    assert!(!v2.contains("#define MIMALLOC_V3_H") && v3.contains("#define MIMALLOC_V3_H"));
    assert!(v3.contains("mi_heap_theap(") && !v2.contains("mi_heap_theap("));
}

/// The header as a program without `MI_V3_API` sees it, the mode the crate root binds: the
/// lines of the branches only v3 mode compiles are dropped (`#if defined(MI_V3_API)` up to
/// its `#else` or `#endif`, and the `#else` branch of `#if !defined(MI_V3_API)`); the
/// conditional lines themselves stay (they are preprocessor lines, which the parsers skip).
fn v2_mode(text: &str) -> String {
    header_mode(text, false)
}

/// The header as a program that defines `MI_V3_API` sees it, the mode of `src/v3.rs`.
fn v3_mode(text: &str) -> String {
    header_mode(text, true)
}

fn header_mode(text: &str, v3_mode: bool) -> String {
    // one entry per open conditional: Some(true) while in a branch only v3 mode compiles,
    // Some(false) in one only v2 mode compiles, None for a condition on anything else
    let mut open: Vec<Option<bool>> = Vec::new();
    let mut out = String::new();
    for line in text.lines() {
        let directive = line.trim_start().strip_prefix('#').map(str::trim_start);
        let conditional = match directive {
            Some(d) if d.starts_with("if") => {
                let negated = d.starts_with("ifndef") || d.contains('!');
                open.push(if d.contains("MI_V3_API") { Some(!negated) } else { None });
                true
            }
            Some(d) if d.starts_with("else") => {
                if let Some(Some(v3)) = open.last_mut() {
                    *v3 = !*v3;
                }
                true
            }
            Some(d) if d.starts_with("endif") => {
                open.pop();
                true
            }
            _ => false,
        };
        if conditional || !open.contains(&Some(!v3_mode)) {
            out += line;
            out.push('\n');
        }
    }
    out
}

#[test]
fn v2_mode_drops_the_v3_branches() {
    let text = "a\n#if defined(MI_V3_API)\nb\n#else\nc\n#endif\n#if !defined(MI_V3_API)\nd\n#else\ne\n#endif\n#ifndef X\nf\n#endif\n";
    let v2 = v2_mode(text);
    let kept: Vec<&str> = v2.lines().filter(|l| !l.starts_with('#')).map(str::trim).collect();
    assert_eq!(kept, ["a", "c", "d", "f"]);
    let v3 = v3_mode(text);
    let kept: Vec<&str> = v3.lines().filter(|l| !l.starts_with('#')).map(str::trim).collect();
    assert_eq!(kept, ["a", "b", "e", "f"]);
}

/// Header text (v2 mode) without comments and preprocessor lines, whitespace collapsed.
fn c_source() -> String {
    c_source_of(v2_mode)
}

/// Header text (v3 mode) without comments and preprocessor lines, whitespace collapsed.
fn c_source_v3() -> String {
    c_source_of(v3_mode)
}

fn c_source_of(mode: fn(&str) -> String) -> String {
    let mut text = String::new();
    for name in ["mimalloc.h", "mimalloc-stats.h"] {
        text += &mode(&read_header(name));
        text.push('\n');
    }
    // block comments
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(start) = rest.find("/*") {
        out += &rest[..start];
        let end = rest[start..].find("*/").expect("unterminated comment") + start + 2;
        out.push(' ');
        rest = &rest[end..];
    }
    out += rest;
    // line comments and preprocessor lines (the headers continue no directive that matters
    // here over a backslash-newline except macro bodies, which are dropped line by line)
    let mut lines = Vec::new();
    let mut in_macro = false;
    for line in out.lines() {
        let trimmed = line.trim();
        let continued = trimmed.ends_with('\\');
        if in_macro || trimmed.starts_with('#') {
            in_macro = continued;
            continue;
        }
        lines.push(match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        });
    }
    lines.join(" ").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Rust source of the crate root, doc and line comments removed, whitespace collapsed.
fn rust_source() -> String {
    strip_rust(include_str!("../src/lib.rs"))
}

/// Rust source of the `v3` module (read as text, so checked also without the `v3` feature).
fn rust_source_v3() -> String {
    strip_rust(include_str!("../src/v3.rs"))
}

fn strip_rust(src: &str) -> String {
    src.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A C type as written in the header, normalised: `const char *` -> `const char*`.
fn norm_c(ty: &str) -> String {
    let ty = ty.split_whitespace().collect::<Vec<_>>().join(" ");
    ty.replace(" *", "*").replace("* ", "*")
}

/// The C spelling of a Rust FFI type.
fn rust_to_c(ty: &str) -> String {
    let ty = ty.trim();
    if let Some(rest) = ty.strip_prefix("*mut ") {
        return format!("{}*", rust_to_c(rest));
    }
    if let Some(rest) = ty.strip_prefix("*const ") {
        return format!("const {}*", rust_to_c(rest));
    }
    if let Some(inner) = ty.strip_prefix("Option<").and_then(|t| t.strip_suffix('>')) {
        // nullable function pointer: `mi_output_fun*` in C
        return format!("{}*", rust_to_c(inner));
    }
    match ty {
        "usize" => "size_t",
        "c_int" => "int",
        "c_long" => "long",
        "c_char" => "char",
        "c_uchar" => "unsigned char",
        "c_ulonglong" => "unsigned long long",
        "c_void" => "void",
        "f64" => "double",
        "i64" => "int64_t",
        other => other,
    }
    .to_string()
}

/// Splits `a, b, c` at the top level (no nested commas occur in these signatures).
fn split_params(params: &str) -> Vec<&str> {
    let params = params.trim();
    if params.is_empty() || params == "void" {
        return Vec::new();
    }
    params.split(',').map(str::trim).collect()
}

#[derive(Debug, PartialEq)]
struct Sig {
    ret: String,
    params: Vec<String>,
}

/// The exported functions of the headers: name -> signature in normalised C types.
fn c_functions(src: &str) -> BTreeMap<String, Sig> {
    let mut map = BTreeMap::new();
    for stmt in src.split(';') {
        if !stmt.contains("mi_decl_export") {
            continue;
        }
        // drop whatever precedes the declaration (a closing brace, `extern "C" {`)
        let stmt = stmt.rsplit(['{', '}']).next().unwrap();
        // remove the declaration macros (`mi_decl_x`, `mi_cdecl`) and the attribute macros
        // (`mi_attr_x`, with their argument list when they have one)
        let mut decl = String::new();
        let mut chars = stmt.chars().peekable();
        while let Some(c) = chars.next() {
            if !(c.is_alphanumeric() || c == '_') {
                decl.push(c);
                continue;
            }
            let mut token = String::from(c);
            while let Some(&d) = chars.peek() {
                if !(d.is_alphanumeric() || d == '_') {
                    break;
                }
                token.push(d);
                chars.next();
            }
            if token.starts_with("mi_attr_") {
                if chars.peek() == Some(&'(') {
                    for d in chars.by_ref() {
                        if d == ')' {
                            break;
                        }
                    }
                }
            } else if !(token.starts_with("mi_decl_") || token == "mi_cdecl") {
                decl += &token;
            }
        }
        let decl = decl.trim();
        let open = decl.find('(').unwrap_or_else(|| panic!("no parameter list in `{decl}`"));
        let close = decl.rfind(')').unwrap();
        let head = decl[..open].trim();
        let name_start = head.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
        let name = head[name_start..].to_string();
        let ret = norm_c(&head[..name_start]);
        let params = split_params(&decl[open + 1..close])
            .into_iter()
            .map(|p| {
                // the parameter's type is everything before its name
                let cut = p.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).expect(p);
                norm_c(&p[..=cut])
            })
            .collect();
        assert!(map.insert(name.clone(), Sig { ret, params }).is_none(), "{name} declared twice");
    }
    map
}

/// The functions declared in the crate's main `extern "C"` block.
fn rust_functions(src: &str) -> BTreeMap<String, Sig> {
    let mut map = BTreeMap::new();
    for stmt in src.split(';') {
        let Some(at) = stmt.find("pub fn mi_") else { continue };
        let decl = &stmt[at + "pub fn ".len()..];
        let open = decl.find('(').unwrap();
        let close = decl.rfind(')').unwrap();
        let name = decl[..open].trim().to_string();
        if name.starts_with("mi_compat_") {
            continue; // the layout probe, not part of the headers
        }
        let ret = match decl[close + 1..].trim().strip_prefix("->") {
            Some(r) => rust_to_c(r),
            None => "void".to_string(),
        };
        let params = split_params(&decl[open + 1..close])
            .into_iter()
            .map(|p| rust_to_c(p.split_once(':').expect(p).1))
            .collect();
        assert!(map.insert(name.clone(), Sig { ret, params }).is_none(), "{name} declared twice");
    }
    map
}

#[test]
fn every_exported_function_is_declared_with_the_same_signature() {
    let c = c_functions(&c_source());
    let rust = rust_functions(&rust_source());
    assert!(c.len() > 150, "header parse found only {} functions", c.len());
    let mut problems = Vec::new();
    for (name, sig) in &c {
        match rust.get(name) {
            None => problems.push(format!("{name}: not declared in src/lib.rs")),
            Some(r) if r.params.len() != sig.params.len() => problems.push(format!(
                "{name}: {} parameters in the header, {} in Rust",
                sig.params.len(),
                r.params.len()
            )),
            Some(r) if r != sig => {
                problems.push(format!("{name}: header {sig:?}, Rust (as C) {r:?}"))
            }
            Some(_) => {}
        }
    }
    for name in rust.keys() {
        if !c.contains_key(name) {
            problems.push(format!("{name}: declared in Rust, not exported by the headers"));
        }
    }
    assert!(problems.is_empty(), "{} mismatches:\n{}", problems.len(), problems.join("\n"));
    eprintln!("{} functions checked", c.len());
}

/// Every callback typedef of `c_src` declared in `rust_src` with the same types; the count.
fn check_callbacks(c_src: &str, rust_src: &str) -> usize {
    let mut checked = 0;
    for stmt in c_src.split(';') {
        let stmt = stmt.trim();
        let Some(body) = stmt.strip_prefix("typedef ") else { continue };
        let Some(open_name) = body.find("(mi_cdecl ") else { continue };
        let ret = norm_c(&body[..open_name]);
        let after = &body[open_name + "(mi_cdecl ".len()..];
        let name_end = after.find(')').unwrap();
        let name = after[..name_end].trim();
        let params: Vec<String> = split_params(after[name_end + 1..].trim().trim_start_matches('(').trim_end_matches(')'))
            .into_iter()
            .map(|p| {
                let cut = p.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap();
                norm_c(&p[..=cut])
            })
            .collect();
        // Rust: `pub type NAME = unsafe extern "C" fn(a: T, ...) -> R`
        let key = format!("pub type {name} = unsafe extern \"C\" fn(");
        let at = rust_src.find(&key).unwrap_or_else(|| panic!("callback type {name} not declared"));
        let decl = &rust_src[at + key.len()..];
        let decl = &decl[..decl.find(';').unwrap()];
        let close = decl.rfind(')').unwrap();
        let rparams: Vec<String> = split_params(decl[..close].trim().trim_end_matches(','))
            .into_iter()
            .map(|p| rust_to_c(p.split_once(':').unwrap().1))
            .collect();
        let rret = match decl[close + 1..].trim().strip_prefix("->") {
            Some(r) => rust_to_c(r),
            None => "void".into(),
        };
        assert_eq!((&ret, &params), (&rret, &rparams), "callback type {name}");
        checked += 1;
    }
    checked
}

#[test]
fn callback_typedefs_match() {
    let checked = check_callbacks(&c_source(), &rust_source());
    assert_eq!(checked, 4, "expected the four callback typedefs of mimalloc.h");
}

/// v3 mode's callback typedefs: those `src/v3.rs` declares (v3's block visitor, the heap
/// visitor) with v3's types, the others as at the crate root.
#[test]
fn v3_callback_typedefs_match() {
    let rust = rust_source_v3() + " " + &rust_source(); // src/v3.rs's first
    let checked = check_callbacks(&c_source_v3(), &rust);
    assert_eq!(checked, 6, "expected the six callback typedefs of v3 mode");
}

/// Names of the `mi_option_e` enumeration, in order, as in the header.
fn c_option_names(src: &str) -> Vec<String> {
    let start = src.find("typedef enum mi_option_e {").expect("mi_option_e not found");
    let body = &src[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find('}').unwrap()];
    body.split(',')
        .map(|e| e.split('=').next().unwrap().trim().to_string())
        .filter(|e| !e.is_empty())
        .collect()
}

#[test]
fn every_option_is_declared_and_probed() {
    let names = c_option_names(&c_source());
    assert!(names.len() > 40, "{names:?}");
    let rust_src = rust_source();
    let probed = probe_names();
    for name in &names {
        assert!(
            rust_src.contains(&format!("pub const {name}: mi_option_t =")),
            "option {name} is not declared in src/lib.rs"
        );
        assert!(probed.contains(name), "option {name} is missing from c/probe.c");
    }
}

/// The options this implementation adds beyond mimalloc's enumeration: the header's
/// `#define mi_option_<name> ((mi_option_t)<number>)` lines, `(name, number)`, and the value
/// of `MI_OPTION_EXT_FIRST`.
fn c_extension_options() -> (Vec<(String, i64)>, i64) {
    let text = v2_mode(&read_header("mimalloc.h"));
    let mut options = Vec::new();
    let mut ext_first = None;
    for line in text.lines() {
        let Some(def) = line.trim().strip_prefix("#define ") else { continue };
        let def = def.split("/*").next().unwrap();
        let Some((name, value)) = def.trim().split_once(char::is_whitespace) else { continue };
        let value = value.split_whitespace().collect::<String>();
        if name == "MI_OPTION_EXT_FIRST" {
            ext_first = Some(value.parse::<i64>().unwrap_or_else(|_| panic!("MI_OPTION_EXT_FIRST is `{value}`")));
        } else if name.starts_with("mi_option_") {
            let number = value
                .strip_prefix("((mi_option_t)")
                .and_then(|v| v.strip_suffix(')'))
                .and_then(|v| v.parse::<i64>().ok())
                .unwrap_or_else(|| panic!("option {name} is defined as `{value}`, not ((mi_option_t)<number>)"));
            options.push((name.to_string(), number));
        }
    }
    (options, ext_first.expect("MI_OPTION_EXT_FIRST not defined in mimalloc.h"))
}

#[test]
fn every_extension_option_is_declared_and_probed() {
    let (options, ext_first) = c_extension_options();
    assert!(options.len() >= 2, "expected at least mi_option_live and mi_option_live_interval: {options:?}");
    let rust_src = rust_source();
    let probed = probe_values();
    assert!(rust_src.contains("pub const MI_OPTION_EXT_FIRST: c_int ="), "MI_OPTION_EXT_FIRST is not declared in src/lib.rs");
    assert_eq!(probed.get("MI_OPTION_EXT_FIRST"), Some(&ext_first), "MI_OPTION_EXT_FIRST in c/probe.c");
    let last = c_option_names(&c_source()).iter().position(|n| n == "_mi_option_last").unwrap() as i64;
    assert!(ext_first > last, "MI_OPTION_EXT_FIRST {ext_first} within mimalloc's numbers (0..{last})");
    for (i, (name, number)) in options.iter().enumerate() {
        // consecutive from MI_OPTION_EXT_FIRST (MiOption::from_raw relies on it)
        assert_eq!(*number, ext_first + i as i64, "option {name}");
        assert!(
            rust_src.contains(&format!("pub const {name}: mi_option_t =")),
            "option {name} is not declared in src/lib.rs"
        );
        // the value itself is compared with the Rust constant by tests/layout.rs
        assert_eq!(probed.get(name), Some(number), "option {name} in c/probe.c");
    }
}

fn probe_values() -> BTreeMap<String, i64> {
    let mut count = 0usize;
    let table = unsafe { mimalloc_compat_sys::probe::mi_compat_probe_table(&mut count) };
    let rows = unsafe { std::slice::from_raw_parts(table, count) };
    rows.iter()
        .map(|r| (unsafe { std::ffi::CStr::from_ptr(r.name) }.to_str().unwrap().to_string(), r.value))
        .collect()
}

fn probe_names() -> Vec<String> {
    probe_values().into_keys().collect()
}

// ---- v3 mode: src/v3.rs against the header with MI_V3_API -----------------------------------

/// The names v3 mode maps onto other symbols (`#define mi_heap_new mi_heap_new_shared`, in
/// the header's section 4b): name -> symbol.
fn c_v3_renames() -> BTreeMap<String, String> {
    let text = read_header("mimalloc.h");
    let v2: Vec<String> = v2_mode(&text).lines().map(str::to_string).collect();
    let is_ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_');
    let mut map = BTreeMap::new();
    for line in v3_mode(&text).lines() {
        let Some(def) = line.trim().strip_prefix("#define ") else { continue };
        let def = def.split("/*").next().unwrap();
        let mut words = def.split_whitespace();
        let (Some(name), Some(target), None) = (words.next(), words.next(), words.next()) else { continue };
        if name.starts_with("mi_") && target.starts_with("mi_") && is_ident(name) && is_ident(target)
            && !v2.iter().any(|l| l == line)
        {
            map.insert(name.to_string(), target.to_string());
        }
    }
    map
}

/// The symbol of each function of `src/v3.rs`: its `#[link_name]`, else its own name.
fn rust_v3_symbols(src: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for stmt in src.split(';') {
        let Some(at) = stmt.find("pub fn mi_") else { continue };
        let decl = &stmt[at + "pub fn ".len()..];
        let name = decl[..decl.find('(').unwrap()].trim().to_string();
        let symbol = match stmt[..at].rfind("#[link_name = \"") {
            Some(l) => {
                let rest = &stmt[l + "#[link_name = \"".len()..];
                rest[..rest.find('"').unwrap()].to_string()
            }
            None => name.clone(),
        };
        map.insert(name, symbol);
    }
    map
}

#[test]
fn v3_renames_are_found() {
    let renames = c_v3_renames();
    assert_eq!(renames.get("mi_heap_new").map(String::as_str), Some("mi_heap_new_shared"), "{renames:?}");
    assert_eq!(renames.get("mi_option_get").map(String::as_str), Some("mi_v3_option_get"), "{renames:?}");
    assert!(renames.len() >= 20, "{renames:?}");
}

/// Every function whose v3-mode declaration differs from v2 mode's (another symbol, other
/// types, or none in v2 mode) is declared in `src/v3.rs` with v3's types and the symbol the
/// header maps it to; every function there is one of v3 mode's, with those types and symbol.
#[test]
fn v3_module_declares_what_v3_mode_changes() {
    let c2 = c_functions(&c_source());
    let c3 = c_functions(&c_source_v3());
    let renames = c_v3_renames();
    let src = rust_source_v3();
    let rust = rust_functions(&src);
    let symbols = rust_v3_symbols(&src);
    assert!(c3.len() > 150, "header parse (v3 mode) found only {} functions", c3.len());
    let mut problems = Vec::new();
    let mut changed = 0;
    for (name, sig) in &c3 {
        let symbol = renames.get(name).unwrap_or(name);
        let same_as_v2 = symbol == name && c2.get(name) == Some(sig);
        if !same_as_v2 {
            changed += 1;
        }
        match rust.get(name) {
            None if same_as_v2 => {}
            None => problems.push(format!("{name}: changed in v3 mode, not declared in src/v3.rs")),
            Some(r) if r != sig => problems.push(format!("{name}: header (v3 mode) {sig:?}, src/v3.rs (as C) {r:?}")),
            Some(_) if symbols.get(name) != Some(symbol) => problems.push(format!(
                "{name}: the header maps it to {symbol}, src/v3.rs links {:?}",
                symbols.get(name)
            )),
            Some(_) => {}
        }
    }
    for name in rust.keys() {
        if !c3.contains_key(name) {
            problems.push(format!("{name}: declared in src/v3.rs, not in the header's v3 mode"));
        }
    }
    assert!(problems.is_empty(), "{} mismatches:\n{}", problems.len(), problems.join("\n"));
    assert!(changed >= 40, "only {changed} functions differ in v3 mode");
    eprintln!("{changed} v3-mode functions checked");
}

/// v3 mode's option enumeration: every name with its number (its place in the enumeration,
/// or the name it aliases), as `src/v3.rs` must declare it.
#[test]
fn v3_options_have_v3_numbers() {
    let src = c_source_v3();
    let start = src.find("typedef enum mi_option_e {").expect("mi_option_e not found");
    let body = &src[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find('}').unwrap()];
    let rust = rust_source_v3();
    let mut checked = 0;
    for (i, entry) in body.split(',').map(str::trim).filter(|e| !e.is_empty()).enumerate() {
        let expected = match entry.split_once('=') {
            Some((name, alias)) => format!("pub const {}: mi_option_t = {};", name.trim(), alias.trim()),
            None => format!("pub const {entry}: mi_option_t = {i};"),
        };
        assert!(rust.contains(&expected), "src/v3.rs lacks `{expected}`");
        checked += 1;
    }
    let last = body.split(',').map(str::trim).position(|e| e == "_mi_option_last").unwrap();
    assert_eq!(last, 47, "v3's _mi_option_last");
    assert!(checked > 50, "{checked}");
    // nothing declared beyond the header's enumeration and the re-exported extension options
    let declared = rust.matches(": mi_option_t =").count();
    assert_eq!(declared, checked, "src/v3.rs declares {declared} options, the header {checked}");
}
