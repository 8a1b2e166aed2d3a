// SPDX-License-Identifier: MIT
/**
Checks the D declarations (mimalloc.capi) against the C headers:
$(OL
  $(LI values: every constant, every mi_option_t value, the size and alignment of every
       public type and the offset and size of every field, as the C compiler sees them
       (c/probe.c, compiled with the headers into the package's archive), against the same
       names built from the D declarations by reflection, in both directions;)
  $(LI signatures: every function declared `mi_decl_export` and every callback typedef in
       include/mimalloc.h and include/mimalloc-stats.h, parsed from the header text,
       against the D declaration's linkage, return type and parameter types, in both
       directions (a D function the headers do not declare fails too);)
  $(LI the options this implementation adds beyond mimalloc's enumeration: every
       `#define mi_option_<name> ((mi_option_t)<number>)` of mimalloc.h, and
       `MI_OPTION_EXT_FIRST`, parsed from the header text, against the D value.)
)
*/
module mimalloc_tests.headercheck;

import std.algorithm : sort, canFind;
import std.array : array, join, split;
import std.conv : to;
import std.file : readText, exists;
import std.format : format;
import std.path : buildNormalizedPath, dirName;
import std.regex : regex, matchAll, matchFirst, replaceAll;
import std.string : strip, fromStringz;
import std.traits : functionLinkage, Parameters, ReturnType;

import mimalloc.capi;
static import mimalloc.capi;

// ---- the C probe ------------------------------------------------------------------------

extern (C) struct ProbeEntry
{
    const(char)* name;
    long value;
}

extern (C) const(ProbeEntry)* mimalloc_d_probe_table(size_t* count) nothrow @nogc;
extern (C) const(char)* mimalloc_d_probe_variant() nothrow @nogc;

long[string] cValues()
{
    size_t n;
    auto t = mimalloc_d_probe_table(&n);
    long[string] r;
    foreach (e; t[0 .. n])
    {
        const name = e.name.fromStringz.idup;
        assert(name !in r, "probe lists " ~ name ~ " twice");
        r[name] = e.value;
    }
    return r;
}

/// The C name of a D field (`version_` is `version` in C).
string cFieldName(string d)
{
    return d == "version_" ? "version" : d;
}

long[string] dValues()
{
    long[string] t;
    t["MI_MALLOC_VERSION"] = MI_MALLOC_VERSION;
    t["MI_SMALL_WSIZE_MAX"] = MI_SMALL_WSIZE_MAX;
    t["MI_SMALL_SIZE_MAX"] = MI_SMALL_SIZE_MAX;
    t["MI_STAT_VERSION"] = MI_STAT_VERSION;
    t["MI_BIN_HUGE"] = MI_BIN_HUGE;
    t["MI_OPTION_EXT_FIRST"] = MI_OPTION_EXT_FIRST;

    void type(T)(string name)
    {
        t[name ~ ".sizeof"] = T.sizeof;
        t[name ~ ".alignof"] = T.alignof;
    }

    void fields(T)(string name)
    {
        type!T(name);
        static foreach (i; 0 .. T.tupleof.length)
        {
            {
                enum f = cFieldName(__traits(identifier, T.tupleof[i]));
                t[name ~ "." ~ f ~ ".offsetof"] = T.tupleof[i].offsetof;
                t[name ~ "." ~ f ~ ".sizeof"] = typeof(T.tupleof[i]).sizeof;
            }
        }
    }

    import core.stdc.config : c_long;
    import core.stdc.stddef : wchar_t;

    type!mi_arena_id_t("mi_arena_id_t");
    type!mi_subproc_id_t("mi_subproc_id_t");
    type!mi_option_t("mi_option_t");
    type!bool("bool");
    type!c_long("long");
    type!size_t("size_t");
    type!wchar_t("wchar_t");
    fields!mi_heap_area_t("mi_heap_area_t");
    fields!mi_stat_count_t("mi_stat_count_t");
    fields!mi_stat_counter_t("mi_stat_counter_t");
    fields!mi_stats_t("mi_stats_t");
    static foreach (m; __traits(allMembers, mi_option_t))
        t["mi_option_t." ~ m] = __traits(getMember, mi_option_t, m);
    return t;
}

/// The differences between the two tables, one line each.
string[] compareTables(long[string] c, long[string] d)
{
    string[] bad;
    foreach (k, v; c)
    {
        if (k !in d)
            bad ~= format!"%s = %s in C, missing in D"(k, v);
        else if (d[k] != v)
            bad ~= format!"%s = %s in C, %s in D"(k, v, d[k]);
    }
    foreach (k, v; d)
        if (k !in c)
            bad ~= format!"%s = %s in D, not in the C headers (or the probe)"(k, v);
    return bad.sort.array;
}

unittest // layout, constants and enum values against the C probe
{
    auto c = cValues();
    auto d = dValues();
    auto bad = compareTables(c, d);
    assert(bad.length == 0, "D declarations differ from the C headers:\n  " ~ bad.join("\n  "));
    // every option number 0 .. _mi_option_last-1 has a name (no value forgotten by the probe)
    foreach (i; 0 .. c["mi_option_t._mi_option_last"])
    {
        bool found;
        foreach (k, v; c)
            if (k.length > 12 && k[0 .. 12] == "mi_option_t." && v == i)
                found = true;
        assert(found, format!"option number %s has no name in the probe"(i));
    }
    assert(c.length > 150, "probe table too small");
}

unittest // the comparison itself reports a changed, a missing and an extra entry
{
    auto c = ["a": 1L, "b": 2L, "c": 3L];
    auto d = ["a": 1L, "b": 5L, "x": 3L];
    assert(compareTables(c, d) == [
        "b = 2 in C, 5 in D",
        "c = 3 in C, missing in D",
        "x = 3 in D, not in the C headers (or the probe)",
    ]);
}

// ---- signatures from the header text ----------------------------------------------------

/// Directory of the repository's C headers (../../include from the package).
string includeDir()
{
    // this file is bindings/d/tests/mimalloc_tests/headercheck.d
    auto dir = buildNormalizedPath(__FILE_FULL_PATH__.dirName, "..", "..", "..", "..", "include");
    assert(exists(buildNormalizedPath(dir, "mimalloc.h")), "C headers not found at " ~ dir);
    return dir;
}

/// Headers that are parts of mimalloc.h, never included on their own: mimalloc.h includes
/// mimalloc-v3.h in v3 mode. (mimalloc-stats.h includes mimalloc.h, but is read beside it.)
immutable partHeaders = ["mimalloc-v3.h"];

/// The text of a header of include/, with each `#include` of a part header replaced by that
/// header's text, as the preprocessor does; v2Mode and v3Mode then keep or drop it with the
/// `#if` around the `#include`.
string readHeader(string name)
{
    const dir = includeDir();
    string[] lines;
    foreach (line; readText(buildNormalizedPath(dir, name)).split("\n"))
    {
        auto m = matchFirst(line, regex(`^\s*#\s*include\s*"([^"]+)"`));
        lines ~= (!m.empty && partHeaders.canFind(m[1])) ? readHeader(m[1]) : line;
    }
    return lines.join("\n");
}

unittest // readHeader splices mimalloc-v3.h where v3 mode includes it
{
    const v2 = v2Mode(readHeader("mimalloc.h")), v3 = v3Mode(readHeader("mimalloc.h"));
    assert(!v2.canFind("#define MIMALLOC_V3_H") && v3.canFind("#define MIMALLOC_V3_H"));
    assert(v3.canFind("mi_heap_theap(") && !v2.canFind("mi_heap_theap("));
}

struct CDecl
{
    string name;
    string ret;
    string[] params; // C types, normalised
}

string normType(string t)
{
    t = replaceAll(t, regex(`\s+`), " ").strip;
    t = replaceAll(t, regex(`\s*\*\s*`), "*");
    return t;
}

/// Split "type name" into the type (the parameter's name is the last identifier).
string paramType(string p)
{
    p = p.strip;
    auto m = matchFirst(p, regex(`^(.*[\s*])([A-Za-z_]\w*)$`, "s"));
    assert(!m.empty, "cannot parse parameter '" ~ p ~ "'");
    return normType(m[1]);
}

/// The C text without comments, preprocessor lines and line continuations.
/// The header as a program without `MI_V3_API` sees it, the mode this package binds: the lines
/// of the branches only v3 mode compiles are dropped (`#if defined(MI_V3_API)` up to its
/// `#else` or `#endif`, and the `#else` branch of `#if !defined(MI_V3_API)`); the conditional
/// lines themselves stay (cleanHeader drops every preprocessor line).
string v2Mode(string text)
{
    return headerMode(text, false);
}

/// The header as a program that defines `MI_V3_API` sees it, the mode of `mimalloc.v3`.
string v3Mode(string text)
{
    return headerMode(text, true);
}

string headerMode(string text, bool v3)
{
    const dropped = v3 ? -1 : 1;   // the branches the other mode compiles
    // one entry per open conditional: 1 while in a branch only v3 mode compiles, -1 in one
    // only v2 mode compiles, 0 for a condition on anything else
    int[] open;
    string[] kept;
    foreach (line; text.split("\n"))
    {
        const t = line.strip;
        const d = (t.length > 0 && t[0] == '#') ? t[1 .. $].strip : "";
        bool conditional = true;
        if (d.length >= 2 && d[0 .. 2] == "if")
        {
            const negated = (d.length >= 6 && d[0 .. 6] == "ifndef") || d.canFind('!');
            open ~= d.canFind("MI_V3_API") ? (negated ? -1 : 1) : 0;
        }
        else if (d.length >= 4 && d[0 .. 4] == "else")
        {
            if (open.length > 0)
                open[$ - 1] = -open[$ - 1];
        }
        else if (d.length >= 5 && d[0 .. 5] == "endif")
        {
            if (open.length > 0)
                open = open[0 .. $ - 1];
        }
        else
            conditional = false;
        if (conditional || !open.canFind(dropped))
            kept ~= line;
    }
    return kept.join("\n");
}

unittest // v2Mode keeps the v2 branches and everything outside the v3 conditionals
{
    const text = "a\n#if defined(MI_V3_API)\nb\n#else\nc\n#endif\n#if !defined(MI_V3_API)\nd\n#else\ne\n#endif\n#ifndef X\nf\n#endif";
    string[] kept;
    foreach (line; v2Mode(text).split("\n"))
        if (line.length > 0 && line[0] != '#')
            kept ~= line;
    assert(kept == ["a", "c", "d", "f"], format!"%s"(kept));
    kept = null;
    foreach (line; v3Mode(text).split("\n"))
        if (line.length > 0 && line[0] != '#')
            kept ~= line;
    assert(kept == ["a", "b", "e", "f"], format!"%s"(kept));
}

string cleanHeader(string text)
{
    text = replaceAll(text, regex(`/\*.*?\*/`, "s"), " ");
    text = replaceAll(text, regex(`//[^\n]*`), " ");
    text = replaceAll(text, regex(`\\\n`), " ");
    text = replaceAll(text, regex(`^[ \t]*#[^\n]*`, "m"), " ");
    return text;
}

CDecl[] parseFunctions(string text)
{
    CDecl[] r;
    foreach (m; matchAll(text, regex(`mi_decl_export([^;{}]*);`)))
    {
        string s = m[1];
        s = replaceAll(s, regex(`\bmi_(attr_alloc_size2?|attr_alloc_align)\s*\([^)]*\)`), " ");
        s = replaceAll(s, regex(`\b(mi_decl_restrict|mi_cdecl|mi_attr_noexcept|mi_attr_malloc)\b`), " ");
        auto d = matchFirst(s, regex(`^(.*?)\b(mi_\w+)\s*\((.*)\)\s*$`, "s"));
        assert(!d.empty, "cannot parse declaration '" ~ s ~ "'");
        CDecl c;
        c.ret = normType(d[1]);
        c.name = d[2];
        const ps = d[3].strip;
        if (ps != "void" && ps != "")
            foreach (p; ps.split(","))
                c.params ~= paramType(p);
        r ~= c;
    }
    return r;
}

CDecl[] parseCallbacks(string text)
{
    CDecl[] r;
    foreach (m; matchAll(text, regex(`typedef\s+([^;()]*?)\(\s*mi_cdecl\s+(mi_\w+)\s*\)\s*\(([^)]*)\)\s*;`)))
    {
        CDecl c;
        c.ret = normType(m[1]);
        c.name = m[2];
        foreach (p; m[3].split(","))
            c.params ~= paramType(p);
        r ~= c;
    }
    return r;
}

/// The D type (as `.stringof` prints it) that a C type of the headers must have.
string dTypeOf(string c)
{
    string[string] map = [
        "void": "void", "void*": "void*", "const void*": "const(void)*", "void**": "void**",
        "size_t": "ulong", "size_t*": "ulong*", "int": "int", "bool": "bool", "bool*": "bool*",
        "double": "double", "long": "long", "unsigned long long": "ulong",
        "char*": "char*", "const char*": "const(char)*", "char**": "char**",
        "unsigned char*": "ubyte*", "const unsigned char*": "const(ubyte)*",
        "wchar_t*": "dchar*", "const wchar_t*": "const(dchar)*", "wchar_t**": "dchar**",
        "mi_heap_t*": "mi_heap_s*", "const mi_heap_t*": "const(mi_heap_s)*",
        "const mi_heap_area_t*": "const(mi_heap_area_s)*",
        "mi_arena_id_t": "int", "mi_arena_id_t*": "int*", "mi_subproc_id_t": "void*",
        "mi_option_t": "mi_option_t", "mi_stats_t*": "mi_stats_s*",
    ];
    switch (c)
    {
    // the callback parameters must have the type of the D alias
    case "mi_block_visit_fun*": return stripNames(mi_block_visit_fun.stringof);
    case "mi_output_fun*": return stripNames(mi_output_fun.stringof);
    case "mi_error_fun*": return stripNames(mi_error_fun.stringof);
    case "mi_deferred_free_fun*": return stripNames(mi_deferred_free_fun.stringof);
    default:
        return map.get(c, "<no D type known for C type '" ~ c ~ "'>");
    }
}

/// A function pointer type as `.stringof` prints it, without parameter names (the alias
/// shows them, the type of a parameter declared with the alias does not).
string stripNames(string t)
{
    return replaceAll(t, regex(`(\S)\s+[A-Za-z_]\w*(?=[,)])`), "$1");
}

struct DDecl
{
    string linkage;
    string ret;
    string[] params;
}

string[] paramStrings(F)()
{
    string[] r;
    static foreach (P; Parameters!F)
        r ~= P.stringof;
    return r;
}

/// Every function of mimalloc.capi with C linkage (aliases of other names left out).
DDecl[string] dFunctions()
{
    DDecl[string] r;
    static foreach (m; __traits(allMembers, mimalloc.capi))
    {
        static if (is(typeof(__traits(getMember, mimalloc.capi, m)) == function)
                   && __traits(identifier, __traits(getMember, mimalloc.capi, m)) == m)
        {
            {
                alias f = __traits(getMember, mimalloc.capi, m);
                static if (functionLinkage!f == "C")
                    r[m] = DDecl(functionLinkage!f, ReturnType!f.stringof, paramStrings!(typeof(f)));
            }
        }
    }
    return r;
}

DDecl[string] dCallbacks()
{
    DDecl[string] r;
    static foreach (name; ["mi_block_visit_fun", "mi_output_fun", "mi_error_fun", "mi_deferred_free_fun"])
    {
        {
            alias F = __traits(getMember, mimalloc.capi, name);
            r[name] = DDecl(functionLinkage!F, ReturnType!F.stringof, paramStrings!F);
        }
    }
    return r;
}

string[] compareDecls(string what, CDecl[] cs, DDecl[string] ds)
{
    string[] bad;
    bool[string] seen;
    foreach (c; cs)
    {
        seen[c.name] = true;
        auto d = c.name in ds;
        if (d is null)
        {
            bad ~= what ~ " " ~ c.name ~ " is in the C headers, not declared in D";
            continue;
        }
        if (d.linkage != "C")
            bad ~= format!"%s %s: linkage extern(%s), not extern(C)"(what, c.name, d.linkage);
        if (dTypeOf(c.ret) != d.ret)
            bad ~= format!"%s %s: returns %s in D, C has %s (D type %s)"(what, c.name, d.ret, c.ret, dTypeOf(c.ret));
        if (c.params.length != d.params.length)
            bad ~= format!"%s %s: %s parameters in D, %s in C"(what, c.name, d.params.length, c.params.length);
        else
            foreach (i, p; c.params)
                if (dTypeOf(p) != d.params[i])
                    bad ~= format!"%s %s: parameter %s is %s in D, C has %s (D type %s)"(what, c.name, i + 1, d.params[i], p, dTypeOf(p));
    }
    foreach (name, _; ds)
        if (name !in seen)
            bad ~= what ~ " " ~ name ~ " is declared in D, not in the C headers";
    return bad.sort.array;
}

string headersText()
{
    return cleanHeader(v2Mode(readHeader("mimalloc.h")))
         ~ cleanHeader(v2Mode(readHeader("mimalloc-stats.h")));
}

unittest // every function and callback: linkage, return and parameter types
{
    const text = headersText();
    auto fs = parseFunctions(text);
    auto cbs = parseCallbacks(text);
    assert(fs.length >= 150, format!"parsed only %s functions from the headers"(fs.length));
    assert(cbs.length == 4, format!"parsed %s callback typedefs, expected 4"(cbs.length));
    auto bad = compareDecls("function", fs, dFunctions()) ~ compareDecls("callback", cbs, dCallbacks());
    assert(bad.length == 0, "D declarations differ from the C headers:\n  " ~ bad.join("\n  "));
}

unittest // the signature comparison catches a changed parameter, a missing and an extra function
{
    auto cs = parseFunctions(cleanHeader(
        "mi_decl_nodiscard mi_decl_export size_t mi_a(const void* p, size_t n) mi_attr_noexcept;\n"
      ~ "/* x */ mi_decl_export void mi_b(void);\n"));
    assert(cs.length == 2 && cs[0].params == ["const void*", "size_t"] && cs[1].params.length == 0);
    auto ds = ["mi_a": DDecl("C", "ulong", ["void*", "ulong"]), "mi_c": DDecl("C", "void", [])];
    assert(compareDecls("function", cs, ds) == [
        "function mi_a: parameter 1 is void* in D, C has const void* (D type const(void)*)",
        "function mi_b is in the C headers, not declared in D",
        "function mi_c is declared in D, not in the C headers",
    ]);
}

// ---- the extension options from the header text ----------------------------------------

/// The `#define`s of mimalloc.h for this implementation's own options, in the header's order:
/// `mi_option_<name>` -> number, and `MI_OPTION_EXT_FIRST`.
struct ExtOptions
{
    string[] names;
    long[string] numbers;
    long first = -1;
}

ExtOptions parseExtOptions(string text)
{
    ExtOptions r;
    auto first = matchFirst(text, regex(`^[ \t]*#[ \t]*define[ \t]+MI_OPTION_EXT_FIRST[ \t]+(\d+)\b`, "m"));
    if (!first.empty)
        r.first = first[1].to!long;
    foreach (m; matchAll(text, regex(`^[ \t]*#[ \t]*define[ \t]+(mi_option_\w+)[ \t]+([^\n]*?)[ \t]*(/\*[^\n]*)?$`, "m")))
    {
        auto v = matchFirst(m[2], regex(`^\(\s*\(\s*mi_option_t\s*\)\s*(\d+)\s*\)$`));
        assert(!v.empty, "option " ~ m[1] ~ " is defined as '" ~ m[2] ~ "', not ((mi_option_t)<number>)");
        r.names ~= m[1];
        r.numbers[m[1]] = v[1].to!long;
    }
    return r;
}

unittest // the extension options of the header: declared in D with the header's numbers
{
    const text = v2Mode(readHeader("mimalloc.h"));
    auto ext = parseExtOptions(text);
    assert(ext.first >= 0, "MI_OPTION_EXT_FIRST not found in mimalloc.h");
    assert(ext.names.length >= 2, format!"expected mi_option_live and mi_option_live_interval, found %s"(ext.names));
    auto d = dValues();
    string[] bad;
    if (d["MI_OPTION_EXT_FIRST"] != ext.first)
        bad ~= format!"MI_OPTION_EXT_FIRST = %s in the header, %s in D"(ext.first, d["MI_OPTION_EXT_FIRST"]);
    assert(ext.first > d["mi_option_t._mi_option_last"], "MI_OPTION_EXT_FIRST within mimalloc's numbers");
    foreach (i, name; ext.names)
    {
        const n = ext.numbers[name];
        if (n != ext.first + cast(long) i)
            bad ~= format!"%s = %s in the header: not consecutive from MI_OPTION_EXT_FIRST"(name, n);
        auto dv = ("mi_option_t." ~ name) in d;
        if (dv is null)
            bad ~= format!"%s = %s in the header, not a member of mi_option_t in D"(name, n);
        else if (*dv != n)
            bad ~= format!"%s = %s in the header, %s in D"(name, n, *dv);
    }
    // and no D member beyond mimalloc's numbers that the header does not define
    foreach (k, v; d)
        if (k.length > 12 && k[0 .. 12] == "mi_option_t." && v >= ext.first && k[12 .. $] !in ext.numbers)
            bad ~= format!"%s = %s in D, not defined in the header"(k, v);
    assert(bad.length == 0, "D declarations differ from the C headers:\n  " ~ bad.sort.array.join("\n  "));
}

unittest // the define parser: numbers, comments, and a define that is no option number
{
    auto e = parseExtOptions("#define MI_OPTION_EXT_FIRST 7\n"
        ~ "#define mi_option_a  ((mi_option_t)7)   /* a */\n"
        ~ "  #define mi_option_b ( (mi_option_t) 8 )\n"
        ~ "#define mi_other 3\n");
    assert(e.first == 7 && e.names == ["mi_option_a", "mi_option_b"]);
    assert(e.numbers["mi_option_a"] == 7 && e.numbers["mi_option_b"] == 8);
}

/// The names of every C function declared in D (for the every-function test).
string[] allDFunctionNames()
{
    return dFunctions().keys.sort.array;
}

// ---- v3 mode: mimalloc.v3 against the header with MI_V3_API --------------------------------

static import mimalloc.v3;

/// The names v3 mode maps onto other symbols (`#define mi_heap_new mi_heap_new_shared`, the
/// header's section 4b): name -> symbol.
string[string] v3Renames(string header)
{
    bool[string] v2Lines;
    foreach (line; v2Mode(header).split("\n"))
        v2Lines[line] = true;
    string[string] r;
    foreach (line; v3Mode(header).split("\n"))
    {
        if (line in v2Lines)
            continue;
        auto m = matchFirst(line, regex(`^[ \t]*#[ \t]*define[ \t]+(mi_\w+)[ \t]+(mi_\w+)[ \t]*$`));
        if (!m.empty)
            r[m[1]] = m[2];
    }
    return r;
}

/// The D type (`.stringof`) a C type of the header's v3 mode must have in mimalloc.v3.
string dTypeOfV3(string c)
{
    switch (c)
    {
    case "mi_theap_t*": return "mi_theap_s*";
    case "const mi_theap_t*": return "const(mi_theap_s)*";
    case "mi_arena_id_t": return "void*";
    case "mi_arena_id_t*": return "void**";
    case "mi_subproc_id_t": return "mi_subproc_id_t";
    case "mi_block_visit_fun*": return stripNames(mimalloc.v3.mi_block_visit_fun.stringof);
    case "mi_heap_visit_fun*": return stripNames(mimalloc.v3.mi_heap_visit_fun.stringof);
    case "mi_commit_fun_t*": return stripNames(mimalloc.v3.mi_commit_fun_t.stringof);
    default: return dTypeOf(c);
    }
}

struct DDeclV3
{
    string linkage;
    string symbol;
    string ret;
    string[] params;
}

/// Every function of mimalloc.v3 with its symbol (`pragma(mangle)`, else its name).
DDeclV3[string] dV3Functions()
{
    DDeclV3[string] r;
    static foreach (m; __traits(allMembers, mimalloc.v3))
    {
        static if (is(typeof(__traits(getMember, mimalloc.v3, m)) == function))
        {
            {
                alias f = __traits(getMember, mimalloc.v3, m);
                r[m] = DDeclV3(functionLinkage!f, f.mangleof, ReturnType!f.stringof, paramStrings!(typeof(f)));
            }
        }
    }
    return r;
}

/// What is wrong with mimalloc.v3: every function whose v3-mode declaration differs from v2
/// mode's (another symbol, other types, or none in v2 mode) must be declared there with v3's
/// types and the header's symbol; every function there must be one of v3 mode's.
string[] compareV3(CDecl[] v2, CDecl[] v3, string[string] renames, DDeclV3[string] ds, out size_t changed)
{
    string[] bad;
    CDecl[string] byName;
    foreach (c; v2)
        byName[c.name] = c;
    bool[string] seen;
    foreach (c; v3)
    {
        seen[c.name] = true;
        const symbol = renames.get(c.name, c.name);
        auto old = c.name in byName;
        const same = symbol == c.name && old !is null && old.ret == c.ret && old.params == c.params;
        if (!same)
            changed++;
        auto d = c.name in ds;
        if (d is null)
        {
            if (!same)
                bad ~= "function " ~ c.name ~ " changes in v3 mode, not declared in mimalloc.v3";
            continue;
        }
        if (d.linkage != "C")
            bad ~= format!"function %s: linkage extern(%s), not extern(C)"(c.name, d.linkage);
        if (d.symbol != symbol)
            bad ~= format!"function %s: the header maps it to %s, mimalloc.v3 links %s"(c.name, symbol, d.symbol);
        if (dTypeOfV3(c.ret) != d.ret)
            bad ~= format!"function %s: returns %s in D, C has %s (D type %s)"(c.name, d.ret, c.ret, dTypeOfV3(c.ret));
        if (c.params.length != d.params.length)
            bad ~= format!"function %s: %s parameters in D, %s in C"(c.name, d.params.length, c.params.length);
        else
            foreach (i, p; c.params)
                if (dTypeOfV3(p) != d.params[i])
                    bad ~= format!"function %s: parameter %s is %s in D, C has %s (D type %s)"(c.name, i + 1, d.params[i], p, dTypeOfV3(p));
    }
    foreach (name, _; ds)
        if (name !in seen)
            bad ~= "function " ~ name ~ " is declared in mimalloc.v3, not in the header's v3 mode";
    return bad.sort.array;
}

unittest // mimalloc.v3 against the header's v3 mode: functions, types, symbols
{
    const h = readHeader("mimalloc.h");
    const stats = readHeader("mimalloc-stats.h");
    auto v2 = parseFunctions(cleanHeader(v2Mode(h)) ~ cleanHeader(v2Mode(stats)));
    auto v3 = parseFunctions(cleanHeader(v3Mode(h)) ~ cleanHeader(v3Mode(stats)));
    auto renames = v3Renames(h);
    assert(renames.get("mi_heap_new", "") == "mi_heap_new_shared", format!"%s"(renames));
    assert(renames.get("mi_option_get", "") == "mi_v3_option_get", format!"%s"(renames));
    size_t changed;
    auto bad = compareV3(v2, v3, renames, dV3Functions(), changed);
    assert(bad.length == 0, "mimalloc.v3 differs from the header's v3 mode:\n  " ~ bad.join("\n  "));
    assert(changed >= 40, format!"only %s functions differ in v3 mode"(changed));
}

unittest // the v3 comparison catches a wrong symbol, a wrong type, a missing and an extra function
{
    auto v2 = parseFunctions(cleanHeader("mi_decl_export void mi_a(int x);\n"));
    auto v3 = parseFunctions(cleanHeader("mi_decl_export void mi_a(int x);\nmi_decl_export void mi_b(mi_theap_t* t);\nmi_decl_export int mi_c(void);\n"));
    auto ds = ["mi_a": DDeclV3("C", "mi_a", "void", ["int"]), "mi_b": DDeclV3("C", "mi_b", "void", ["mi_heap_s*"]),
               "mi_d": DDeclV3("C", "mi_d", "void", [])];
    size_t changed;
    auto bad = compareV3(v2, v3, ["mi_a": "mi_v3_a"], ds, changed);
    assert(changed == 3);
    assert(bad == [
        "function mi_a: the header maps it to mi_v3_a, mimalloc.v3 links mi_a",
        "function mi_b: parameter 1 is mi_heap_s* in D, C has mi_theap_t* (D type mi_theap_s*)",
        "function mi_c changes in v3 mode, not declared in mimalloc.v3",
        "function mi_d is declared in mimalloc.v3, not in the header's v3 mode",
    ], format!"%s"(bad));
}

unittest // v3 mode's option numbers: every name of the header's enumeration at its number
{
    const text = cleanHeader(v3Mode(readHeader("mimalloc.h")));
    auto m = matchFirst(text, regex(`typedef enum mi_option_e \{([^}]*)\}`));
    assert(!m.empty, "v3 mode's mi_option_e not found");
    long[string] c;
    long next = 0;
    foreach (e; m[1].split(","))
    {
        e = e.strip;
        if (e.length == 0)
            continue;
        auto parts = e.split("=");
        const name = parts[0].strip;
        c[name] = parts.length == 1 ? next++ : c[parts[1].strip];
    }
    assert(c["_mi_option_last"] == 47 && c["mi_option_allow_thp"] == 43, format!"%s"(c));
    long[string] d;
    static foreach (mem; __traits(allMembers, mimalloc.v3.mi_option_t))
        d[mem] = __traits(getMember, mimalloc.v3.mi_option_t, mem);
    string[] bad;
    foreach (name, v; c)
        if (name !in d)
            bad ~= format!"%s = %s in the header (v3 mode), missing in mimalloc.v3"(name, v);
        else if (d[name] != v)
            bad ~= format!"%s = %s in the header (v3 mode), %s in mimalloc.v3"(name, v, d[name]);
    foreach (name, v; d)
        if (name !in c && v < 1000)
            bad ~= format!"%s = %s in mimalloc.v3, not in the header's v3 enumeration"(name, v);
    // this implementation's own options: the same numbers as in v2 mode
    foreach (name, v; d)
        if (v >= 1000)
            static foreach (mem; __traits(allMembers, mimalloc.capi.mi_option_t))
                if (mem == name && __traits(getMember, mimalloc.capi.mi_option_t, mem) != v)
                    bad ~= name ~ ": another number than mimalloc.capi's";
    assert(bad.length == 0, "mimalloc.v3's options differ:\n  " ~ bad.sort.array.join("\n  "));
}

unittest // v3's types have the header's layout (same sizes as v2 mode's, a pointer id)
{
    static assert(mimalloc.v3.mi_heap_area_t.sizeof == mimalloc.capi.mi_heap_area_t.sizeof);
    static assert(mimalloc.v3.mi_heap_area_t.reserved1.offsetof == mimalloc.capi.mi_heap_area_t.heap_tag.offsetof);
    static assert(mimalloc.v3.mi_subproc_id_t.sizeof == (void*).sizeof);
    static assert(mimalloc.v3.mi_arena_id_t.sizeof == (void*).sizeof);
}

extern (C) const(ProbeEntry)* mimalloc_d_probe_v3_table(size_t* count) nothrow @nogc;

unittest // mimalloc.v3's types and option values against the C compiler's view of v3 mode (c/probe_v3.c)
{
    size_t n;
    auto t = mimalloc_d_probe_v3_table(&n);
    long[string] c;
    foreach (e; t[0 .. n])
        c[e.name.fromStringz.idup] = e.value;
    assert(c.length == n, "probe_v3 lists a name twice");

    long[string] d;
    void type(T)(string name)
    {
        d[name ~ ".sizeof"] = T.sizeof;
        d[name ~ ".alignof"] = T.alignof;
    }
    void fields(T)(string name)
    {
        type!T(name);
        static foreach (i; 0 .. T.tupleof.length)
        {
            d[name ~ "." ~ __traits(identifier, T.tupleof[i]) ~ ".offsetof"] = T.tupleof[i].offsetof;
            d[name ~ "." ~ __traits(identifier, T.tupleof[i]) ~ ".sizeof"] = typeof(T.tupleof[i]).sizeof;
        }
    }
    type!(mimalloc.v3.mi_arena_id_t)("mi_arena_id_t");
    type!(mimalloc.v3.mi_option_t)("mi_option_t");
    fields!(mimalloc.v3.mi_subproc_id_t)("mi_subproc_id_t");
    fields!(mimalloc.v3.mi_heap_area_t)("mi_heap_area_t");
    static foreach (m; __traits(allMembers, mimalloc.v3.mi_option_t))
        d["mi_option_t." ~ m] = __traits(getMember, mimalloc.v3.mi_option_t, m);
    auto bad = compareTables(c, d);
    assert(bad.length == 0, "mimalloc.v3 differs from the C headers' v3 mode:\n  " ~ bad.join("\n  "));
    assert(c.length > 70, "probe_v3 table too small");
}

unittest // v3 mode's callback typedefs: the three of mimalloc.v3 with v3's types, the others as in mimalloc.capi
{
    auto cbs = parseCallbacks(cleanHeader(v3Mode(readHeader("mimalloc.h"))));
    assert(cbs.length == 6, format!"parsed %s callback typedefs of v3 mode, expected 6"(cbs.length));
    DDecl[string] ds = dCallbacks();
    static foreach (name; ["mi_block_visit_fun", "mi_heap_visit_fun", "mi_commit_fun_t"])
    {
        {
            alias F = __traits(getMember, mimalloc.v3, name);
            ds[name] = DDecl(functionLinkage!F, ReturnType!F.stringof, paramStrings!F);
        }
    }
    string[] bad;
    foreach (c; cbs)
    {
        auto d = c.name in ds;
        if (d is null)
        {
            bad ~= c.name ~ " is not declared";
            continue;
        }
        if (d.linkage != "C" || dTypeOfV3(c.ret) != d.ret || c.params.length != d.params.length)
            bad ~= format!"%s: %s in C, %s in D"(c.name, c, *d);
        else
            foreach (i, p; c.params)
                if (dTypeOfV3(p) != d.params[i])
                    bad ~= format!"%s: parameter %s is %s in D, C has %s"(c.name, i + 1, d.params[i], p);
    }
    assert(bad.length == 0, "v3 mode's callbacks differ:\n  " ~ bad.join("\n  "));
}
