//! The test that keeps the layers of the crate's top-level documentation
//! true. It reads the numbered list under "# Layers" in `lib.rs`, then every
//! source file, and fails on a `crate::` path that reaches a module listed
//! later than the file's own, on a use of `engine` outside `worker`, and on
//! a top-level module the list does not place. Reading the source text keeps
//! the rule honest for paths written inline as well as in `use` lines, and
//! for each name of a `use crate::{a, b}` group.
//! Beside it, the test that keeps every function under 100 lines.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The modules in layer order, bottom first, as `lib.rs` lists them.
fn order(lib: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in lib.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            continue;
        };
        let doc = doc.trim();
        if doc.starts_with('#') {
            inside = doc == "# Layers";
            continue;
        }
        // Only a numbered item's first line names modules: "3. `engine`, ...".
        let numbered = doc
            .split_once(". ")
            .filter(|(n, _)| n.parse::<u32>().is_ok());
        if let (true, Some((_, rest))) = (inside, numbered) {
            let names = rest.split(':').next().unwrap_or("");
            out.extend(names.split('`').skip(1).step_by(2).map(str::to_string));
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to: `src/bench/run.rs` is `bench`,
/// `src/units.rs` is `units`; `lib.rs` and `main.rs` belong to none.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib" && name != "main").then(|| name.to_string())
}

/// The identifier `s` starts with ("" if none).
fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// Every module of this crate a source file names, with its line (from 1):
/// `crate::name` paths and each item of a `crate::{a, b::c}` group, which
/// may span lines. Comments and strings are left out ([`code_only`]).
fn crate_uses(text: &str) -> Vec<(usize, String)> {
    let code = code_only(text);
    let line_at = |i: usize| code[..i].matches('\n').count() + 1;
    let mut out = Vec::new();
    for (i, m) in code.match_indices("crate::") {
        if code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let at = i + m.len();
        let rest = &code[at..];
        if !rest.starts_with('{') {
            out.push((line_at(i), ident_at(rest).to_string()));
            continue;
        }
        // A group: the first name of each item at its top level.
        let mut depth = 0;
        let mut item_start = true;
        for (j, c) in rest.char_indices() {
            match c {
                '{' => {
                    depth += 1;
                    item_start = depth == 1;
                }
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                ',' if depth == 1 => item_start = true,
                c if item_start && depth == 1 && !c.is_whitespace() => {
                    item_start = false;
                    let name = ident_at(&rest[j..]);
                    if !name.is_empty() && name != "self" {
                        out.push((line_at(at + j), name.to_string()));
                    }
                }
                _ => {}
            }
        }
    }
    out
}

#[test]
fn no_module_reaches_up_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let order = order(&lib);
    assert!(order.len() > 10, "lib.rs lists the layers: {order:?}");
    let rank: HashMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), i))
        .collect();

    let declared: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod ")?.strip_suffix(';'))
        .collect();
    let unplaced: Vec<&&str> = declared
        .iter()
        .filter(|m| !rank.contains_key(**m))
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules missing from the layer list in lib.rs: {unplaced:?}"
    );

    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut wrong = Vec::new();
    for file in &files {
        let Some(module) = module_of(&src, file) else {
            continue;
        };
        let Some(&own) = rank.get(module.as_str()) else {
            continue; // `layers` itself, a test-only module
        };
        let text = std::fs::read_to_string(file).expect("source file");
        let lines: Vec<&str> = text.lines().collect();
        for (n, used) in crate_uses(&text) {
            let Some(&theirs) = rank.get(used.as_str()) else {
                continue;
            };
            let why = if theirs > own {
                "reaches up the layers"
            } else if used == "engine" && module != "engine" && module != "worker" {
                "uses the engine outside the worker process"
            } else {
                continue;
            };
            wrong.push(format!(
                "{}:{n}: {module} -> {used}: {why}: {}",
                file.strip_prefix(&src).unwrap_or(file).display(),
                lines.get(n - 1).map_or("", |l| l.trim())
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layer order in lib.rs:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_layer_reader_sees_paths_and_skips_comments() {
    let one = |name: &str| vec![(1, name.to_string())];
    assert_eq!(crate_uses("use crate::vocab::{A, B};"), one("vocab"));
    assert_eq!(
        crate_uses("let x = crate::units::human_bytes(1); // crate::cli"),
        one("units")
    );
    assert!(crate_uses("use llama_cpp_2::model; // not crate::x").is_empty());
    assert!(crate_uses("use some_crate::thing;").is_empty());
    let text = "use crate::{app, bench::x,\n    store::{a, b}, self};\nlet s = \"crate::cli\"; // crate::report\nuse crate::{\n    units,\n};\n";
    assert_eq!(
        crate_uses(text),
        [
            (1, "app".to_string()),
            (1, "bench".to_string()),
            (2, "store".to_string()),
            (5, "units".to_string())
        ]
    );
    let lib = "//! # Layers\n//!\n//! 1. `a`, `b`: the bottom. `c` is\n//!    named, not placed.\n//! 2. `d`: top.\n//! # Other\n//! 3. `e`: no.\n";
    assert_eq!(order(lib), ["a", "b", "d"]);
}

/// `text` with its comments, strings and character literals blanked
/// (newlines kept), so that braces and `fn` are only code's.
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < c.len() {
        let prev_ident = i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_');
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            while i < c.len() && !(c[i] == '*' && c.get(i + 1) == Some(&'/')) {
                out.push(blank(c[i]));
                i += 1;
            }
            out.push_str("  ");
            i += 2;
        } else if c[i] == 'r' && !prev_ident && matches!(c.get(i + 1), Some('"' | '#')) {
            // A raw string: r"…", r#"…"#, and so on.
            let hashes = c[i + 1..].iter().take_while(|&&h| h == '#').count();
            if c.get(i + 1 + hashes) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            let close: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            i += 2 + hashes;
            out.push_str(&" ".repeat(2 + hashes));
            while i < c.len() && !c[i..].starts_with(&close) {
                out.push(blank(c[i]));
                i += 1;
            }
            out.push_str(&" ".repeat(close.len()));
            i += close.len();
        } else if c[i] == '"' {
            out.push(' ');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < c.len() {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c[i] == '\'' && (c.get(i + 1) == Some(&'\\') || c.get(i + 2) == Some(&'\'')) {
            // A character literal ('{', '\n'); a lifetime ('a) stays.
            out.push(' ');
            i += 1;
            while i < c.len() && c[i] != '\'' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                out.push(' ');
                i += 1;
            }
            out.push(' ');
            i += 1;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// Each function's name, first line and length in lines, by matching its
/// braces in [`code_only`] text.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let code = code_only(text);
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let mut t = lines[i].trim_start();
        for p in [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "const ",
            "async ",
            "unsafe ",
        ] {
            t = t.strip_prefix(p).unwrap_or(t);
        }
        let Some(rest) = t.strip_prefix("fn ") else {
            i += 1;
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let (mut depth, mut opened, mut j) = (0i32, false, i);
        while j < lines.len() {
            for ch in lines[j].chars() {
                match ch {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if (opened && depth <= 0) || (!opened && lines[j].trim_end().ends_with(';')) {
                break;
            }
            j += 1;
        }
        if opened {
            out.push((name, i + 1, j - i + 1));
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// A file's module path: `src/bench/run.rs` is `bench::run`,
/// `src/bench/mod.rs` is `bench`, `src/lib.rs` the crate (empty).
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut path: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if path
        .last()
        .is_some_and(|l| matches!(l.as_str(), "mod" | "lib" | "main"))
    {
        path.pop();
    }
    path
}

/// The `::`-separated names `s` starts with (`a::b::c` of `a::b::c(x)`),
/// and the items of a group after the last `::` (`a::{b, c::d}`: `b` and
/// `c::d`), split at its top-level commas.
fn path_at(s: &str) -> (Vec<&str>, Vec<&str>) {
    let mut names = Vec::new();
    let mut rest = s;
    loop {
        let name = ident_at(rest);
        if name.is_empty() {
            let Some(group) = rest.strip_prefix('{') else {
                return (names, Vec::new());
            };
            let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        items.push(group[start..i].trim());
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        items.push(group[start..i].trim());
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            return (names, items);
        }
        names.push(name);
        match rest[name.len()..].strip_prefix("::") {
            Some(r) => rest = r,
            None => return (names, Vec::new()),
        }
    }
}

/// The module paths a file of module `me` names through `crate::` and
/// `super::` (each item of a group too), outside its `#[cfg(test)]` module,
/// as paths from the crate's root (not yet cut to a module that exists).
fn module_refs(text: &str, me: &[String]) -> Vec<Vec<String>> {
    let mut code = code_only(text);
    if let Some(i) = code.find("#[cfg(test)]\nmod tests") {
        code.truncate(i);
    }
    let mut out = Vec::new();
    for (i, _) in code
        .match_indices("crate::")
        .chain(code.match_indices("super::"))
    {
        // `$crate::` is a macro's; `super::super::` counts once, whole.
        if code[..i].ends_with(|c: char| c.is_alphanumeric() || matches!(c, '_' | '$' | ':')) {
            continue;
        }
        let (mut names, items) = path_at(&code[i..]);
        // `super` of module `a::b` is `a`; each further `super`, one up.
        let mut base: Vec<String> = Vec::new();
        if names[0] == "super" {
            base = me[..me.len().saturating_sub(1)].to_vec();
            while names.get(1) == Some(&"super") {
                names.remove(0);
                base.pop();
            }
        }
        names.remove(0);
        let prefix: Vec<String> = base
            .into_iter()
            .chain(names.iter().map(|n| n.to_string()))
            .collect();
        if items.is_empty() {
            out.push(prefix);
            continue;
        }
        for item in items {
            let (more, _) = path_at(item);
            if !more.is_empty() && more[0] != "self" {
                out.push(
                    prefix
                        .iter()
                        .cloned()
                        .chain(more.iter().map(|n| n.to_string()))
                        .collect(),
                );
            }
        }
    }
    out
}

/// No two modules of one folder import each other, directly or round a
/// longer loop ([S] 8): files in a circle cannot be understood, tested or
/// moved one at a time. Imports are `crate::` and `super::` paths, groups
/// included; test modules are left out.
#[test]
fn no_folder_has_an_import_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: std::collections::HashSet<Vec<String>> =
        files.iter().map(|f| module_path(&src, f)).collect();
    let mut edges: HashMap<Vec<String>, Vec<Vec<String>>> = HashMap::new();
    for f in &files {
        let me = module_path(&src, f);
        if me.is_empty() {
            continue; // lib.rs and main.rs: the crate's root has no folder
        }
        let text = std::fs::read_to_string(f).expect("source file");
        for r in module_refs(&text, &me) {
            // The longest prefix that is a module of this crate, if it is a
            // sibling of `me` (the same folder).
            let Some(target) = (1..=r.len())
                .rev()
                .map(|k| r[..k].to_vec())
                .find(|p| modules.contains(p))
            else {
                continue;
            };
            if target != me
                && target.len() == me.len()
                && target[..me.len() - 1] == me[..me.len() - 1]
            {
                edges.entry(me.clone()).or_default().push(target);
            }
        }
    }
    // A circle is an edge whose end reaches back to its start.
    let reaches = |from: &Vec<String>, to: &Vec<String>| {
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![from.clone()];
        while let Some(m) = stack.pop() {
            if &m == to {
                return true;
            }
            if seen.insert(m.clone()) {
                stack.extend(edges.get(&m).into_iter().flatten().cloned());
            }
        }
        false
    };
    let mut circles: Vec<String> = edges
        .iter()
        .flat_map(|(a, bs)| bs.iter().map(move |b| (a, b)))
        .filter(|(a, b)| reaches(b, a))
        .map(|(a, b)| format!("{} -> {}", a.join("::"), b.join("::")))
        .collect();
    circles.sort();
    circles.dedup();
    assert!(
        circles.is_empty(),
        "imports in a circle (each edge below lies on one):\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_circle_reader_resolves_super_crate_and_groups() {
    let me: Vec<String> = ["app", "hub"].map(String::from).to_vec();
    let text = "use super::models::memory;\nuse super::{settings, predict::x};\nuse crate::store::Store;\nfn f() { crate::units::human_bytes(1); }\n#[cfg(test)]\nmod tests {\n    use super::super::bench;\n}\n";
    let refs: Vec<String> = module_refs(text, &me)
        .iter()
        .map(|r| r.join("::"))
        .collect();
    assert_eq!(
        refs,
        [
            "store::Store",
            "units::human_bytes",
            "app::models::memory",
            "app::settings",
            "app::predict::x"
        ]
    );
}

/// No function in `src/` or `src-tauri/src` is over 100 lines ([S] 8): a
/// longer one is several steps that want names of their own.
#[test]
fn no_function_is_over_100_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("src-tauri/src"), &mut files);
    let mut long = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a source file");
        for (name, line, len) in functions(&text) {
            if len > 100 {
                long.push(format!("{}:{line} {name}: {len} lines", file.display()));
            }
        }
    }
    assert!(files.len() > 50, "the sources were found: {}", files.len());
    assert!(
        long.is_empty(),
        "functions over 100 lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_function_reader_skips_strings_comments_and_characters() {
    let text = "fn a() {\n    let s = \"}\"; // }\n    let c = '{';\n    let r = r#\"}\"#;\n}\nfn b(x: &'static str) -> usize {\n    x.len()\n}\nfn c();\n";
    assert_eq!(
        functions(text),
        [("a".to_string(), 1, 5), ("b".to_string(), 6, 3)]
    );
}

/// Every source file under `src/`, by its path there, with its text: what
/// the tests that look for a name read.
fn sources() -> Vec<(PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 50, "the sources were found: {}", files.len());
    files
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(&src).expect("under src").to_path_buf();
            (rel, std::fs::read_to_string(f).expect("a source file"))
        })
        .collect()
}

/// The command-line library is the CLI's ([S] 2): nothing below `cli/` names
/// clap, so the core's types carry no front end's derives, and the app's
/// forms reach the core without a command line being built and parsed again.
#[test]
fn clap_is_named_only_in_the_cli() {
    let mut found = Vec::new();
    for (rel, raw) in &sources() {
        if rel.starts_with("cli") || rel == Path::new("main.rs") {
            continue;
        }
        let text = code_only(raw);
        for (n, line) in text.lines().enumerate() {
            let named = line.match_indices("clap").any(|(at, _)| {
                let before = line[..at].chars().next_back();
                let after = line[at + 4..].chars().next();
                let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                !ident(before) && !ident(after)
            });
            if named {
                found.push(format!("{}:{}: {}", rel.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "clap outside src/cli/:\n{}",
        found.join("\n")
    );
}

/// ts-rs, the UI's TypeScript twins, is the app's concern: the core's types
/// carry its derive and attributes only behind the `ts` feature, which the
/// app turns on, so the core (and the CLI) builds without it.
#[test]
fn ts_rs_is_named_in_the_core_only_behind_the_ts_feature() {
    let mut found = Vec::new();
    for (rel, raw) in &sources() {
        // Comments blanked (a doc may name ts-rs); the raw line is read
        // for the feature's name, which is a string.
        let text = code_only(raw);
        // Inside an item gated as a whole (`#[cfg(feature = "ts")]`), from
        // the attribute to the end of the item: its braces closed, or its `;`.
        let mut gated: Option<(i64, bool)> = None;
        let mut depth: i64 = 0;
        for (n, (line, raw)) in text.lines().zip(raw.lines()).enumerate() {
            let t = line.trim();
            let ungated_attr = t.starts_with("#[ts(");
            let names_it = t.contains("ts_rs::");
            let behind = raw.trim().starts_with("#[cfg_attr(feature = \"ts\",") || gated.is_some();
            if (ungated_attr || names_it) && !behind {
                found.push(format!("{}:{}: {t}", rel.display(), n + 1));
            }
            if raw.trim() == "#[cfg(feature = \"ts\")]" {
                gated = Some((depth, false));
            }
            for c in t.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        if let Some((_, opened)) = gated.as_mut() {
                            *opened = true;
                        }
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if let Some((at, opened)) = gated {
                let closed = opened && depth == at;
                let statement = !opened && t.ends_with(';');
                if closed || statement {
                    gated = None;
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "ts-rs named in the core outside #[cfg_attr(feature = \"ts\", …)] or #[cfg(feature = \"ts\")]:\n{}",
        found.join("\n")
    );
}
