//! The architecture invariants of ARCHITECTURE.md, checked on the source itself.

use std::fs;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

fn src(sub: &str) -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(sub);
    rust_files(&root)
        .into_iter()
        .map(|p| {
            let text = fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

/// Lines of `files` (outside comments) that contain `needle`, as `path:line`.
fn find(files: &[(PathBuf, String)], needle: &str) -> Vec<String> {
    let mut hits = Vec::new();
    for (path, text) in files {
        for (i, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            if code.contains(needle) {
                hits.push(format!("{}:{}", path.display(), i + 1));
            }
        }
    }
    hits
}

#[test]
fn domain_imports_nothing_else_of_the_crate() {
    let domain = src("domain");
    assert!(domain.len() >= 8, "the domain module is where it should be");
    let hits = find(&domain, "crate::");
    assert!(
        hits.is_empty(),
        "src/domain reaches into the crate: {hits:?}"
    );
}

#[test]
fn store_and_brain_do_not_import_each_other() {
    let store_hits = find(&src("store"), "crate::brain");
    assert!(store_hits.is_empty(), "store imports brain: {store_hits:?}");
    let brain_hits = find(&src("brain"), "crate::store");
    assert!(brain_hits.is_empty(), "brain imports store: {brain_hits:?}");
    // store depends on domain only (plus its own modules)
    for forbidden in [
        "crate::worker",
        "crate::api",
        "crate::tools",
        "crate::config",
    ] {
        let hits = find(&src("store"), forbidden);
        assert!(hits.is_empty(), "store imports {forbidden}: {hits:?}");
    }
}

/// No Rust file writes a status: every status write is a named statement of `src/store/sql/`.
#[test]
fn no_rust_file_writes_a_status() {
    let all = src("");
    let writers: Vec<String> = find(&all, "SET status")
        .into_iter()
        .chain(find(&all, ", status ="))
        .collect();
    assert!(
        writers.is_empty(),
        "a status is written in Rust: {writers:?}"
    );
}

/// The statements of `src/store/sql/`: (name as its path says, text).
fn statements() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "sql") {
                out.push(p);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store/sql");
    let mut files = Vec::new();
    walk(&root, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p
                .strip_prefix(&root)
                .unwrap()
                .with_extension("")
                .to_string_lossy()
                .into_owned();
            (name, fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// The status literals of every `status IN ('a', 'b')` (any alias), as sets.
fn status_lists(sql: &str) -> Vec<std::collections::BTreeSet<String>> {
    let mut out = Vec::new();
    let mut rest = sql;
    while let Some(at) = rest.find("status IN (") {
        let after = &rest[at + "status IN (".len()..];
        let end = after.find(')').unwrap();
        out.push(
            after[..end]
                .split(',')
                .map(|s| s.trim().trim_matches('\'').to_string())
                .collect(),
        );
        rest = &after[end..];
    }
    out
}

/// Every move with its sources and target: ("StepMove::Claim", from, to).
fn moves() -> Vec<(String, std::collections::BTreeSet<String>, String)> {
    use trellis::domain::transitions::{DecisionMove, DeliveryMove, StepMove, TaskMove, WaitMove};
    let mut out = Vec::new();
    for m in TaskMove::ALL {
        let from = m.from().iter().map(|s| s.to_string()).collect();
        out.push((format!("TaskMove::{m:?}"), from, m.to().to_string()));
    }
    for m in StepMove::ALL {
        let from = m.from().iter().map(|s| s.to_string()).collect();
        out.push((format!("StepMove::{m:?}"), from, m.to().to_string()));
    }
    for m in DecisionMove::ALL {
        let from = m.from().iter().map(|s| s.to_string()).collect();
        out.push((format!("DecisionMove::{m:?}"), from, m.to().to_string()));
    }
    for m in DeliveryMove::ALL {
        let from = m.from().iter().map(|s| s.to_string()).collect();
        out.push((format!("DeliveryMove::{m:?}"), from, m.to().to_string()));
    }
    for m in WaitMove::ALL {
        let from = m.from().iter().map(|s| s.to_string()).collect();
        out.push((format!("WaitMove::{m:?}"), from, m.to().to_string()));
    }
    out
}

/// Diagram ⇔ transition table ⇔ SQL: every statement is named (`-- name:` its path; a part
/// `_x` says `-- part:`), every status write declares its move and sets exactly the move's
/// target from exactly its sources, every statement that only filters by a move's sources
/// (`-- from:`) lists exactly those, and every move is declared by a statement. (The diagrams
/// are checked against the moves by `domain::transitions`' own test.)
#[test]
fn every_statement_is_named_and_every_status_write_declares_its_move() {
    let stmts = statements();
    assert!(stmts.len() >= 60, "{} statements", stmts.len());
    let moves = moves();
    let mut declared = std::collections::BTreeSet::new();
    for (name, sql) in &stmts {
        let first = sql.lines().next().unwrap_or_default();
        let file = name.rsplit('/').next().unwrap();
        let head = if file.starts_with('_') {
            "-- part: "
        } else {
            "-- name: "
        };
        assert!(
            first.starts_with(&format!("{head}{name}")),
            "{name}.sql starts with {first:?}, not {head}{name}"
        );
        let sets: Vec<&str> = sql
            .match_indices("SET status = '")
            .map(|(i, _)| {
                let v = &sql[i + "SET status = '".len()..];
                &v[..v.find('\'').unwrap()]
            })
            .collect();
        let decl = sql.lines().find_map(|l| {
            l.strip_prefix("-- move: ")
                .map(|m| (m.split_whitespace().next().unwrap().to_string(), true))
                .or_else(|| {
                    l.strip_prefix("-- from: ")
                        .map(|m| (m.trim().to_string(), false))
                })
        });
        if sets.is_empty() && decl.as_ref().is_none_or(|(_, writes)| !writes) {
            if let Some((m, _)) = decl {
                let (_, from, _) = moves
                    .iter()
                    .find(|(n, ..)| *n == m)
                    .unwrap_or_else(|| panic!("{name}.sql names {m}, which is no move"));
                assert!(
                    status_lists(sql).contains(from),
                    "{name}.sql lists the sources of {m} ({from:?}) nowhere: {:?}",
                    status_lists(sql)
                );
            }
            continue;
        }
        let (m, _) =
            decl.unwrap_or_else(|| panic!("{name}.sql writes a status and declares no move"));
        let (_, from, to) = moves
            .iter()
            .find(|(n, ..)| *n == m)
            .unwrap_or_else(|| panic!("{name}.sql declares {m}, which is no move"));
        declared.insert(m.clone());
        if sets.is_empty() {
            // the part that writes is elsewhere (the statement says where)
            continue;
        }
        for s in &sets {
            assert_eq!(s, to, "{name}.sql sets status {s:?}; {m} ends in {to:?}");
        }
        assert!(
            status_lists(sql).contains(from),
            "{name}.sql does not match exactly the sources of {m} ({from:?}): {:?}",
            status_lists(sql)
        );
    }
    for (m, ..) in &moves {
        assert!(declared.contains(m), "no statement declares {m}");
    }
}

/// SQL string literals in Rust: (where, lines, writes). A literal is SQL when it starts with a
/// statement keyword.
fn sql_literals() -> Vec<(String, usize, bool)> {
    fn walk(ts: proc_macro2::TokenStream, path: &str, out: &mut Vec<(String, usize, bool)>) {
        for tt in ts {
            match tt {
                proc_macro2::TokenTree::Group(g) => walk(g.stream(), path, out),
                proc_macro2::TokenTree::Literal(l) => {
                    let text = l.to_string();
                    let body = text
                        .trim_start_matches('r')
                        .trim_start_matches('#')
                        .trim_start_matches('"');
                    let head = body.trim_start().to_ascii_uppercase();
                    let sql = ["SELECT ", "WITH ", "INSERT ", "UPDATE ", "DELETE "]
                        .iter()
                        .any(|k| head.starts_with(k));
                    if sql {
                        let lines = body.trim().lines().count();
                        let writes = head.contains("INSERT INTO")
                            || head.contains("DELETE FROM")
                            || (head.contains("UPDATE ") && head.contains(" SET "));
                        let at = format!("{path}:{}", l.span().start().line);
                        out.push((at, lines, writes));
                    }
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    for (path, text) in src("") {
        let ts: proc_macro2::TokenStream = text.parse().unwrap();
        walk(ts, &path.display().to_string(), &mut out);
    }
    out
}

/// Every statement that writes, or spans more than three lines, is a named `.sql` file.
#[test]
fn no_long_or_writing_statement_is_inline_in_rust() {
    let found = sql_literals();
    assert!(!found.is_empty(), "the scan finds the short reads");
    let inline: Vec<&(String, usize, bool)> = found
        .iter()
        .filter(|(_, lines, writes)| *lines > 3 || *writes)
        .collect();
    assert!(
        inline.is_empty(),
        "inline statements that should be named files: {inline:?}"
    );
}

/// Every transaction starts in the `in_tx!` macro of `src/store/mod.rs`.
#[test]
fn only_in_tx_begins_a_transaction() {
    for begin in [".begin()", ".begin_with("] {
        let hits = find(&src(""), begin);
        assert_eq!(hits.len(), 1, "transactions begin at: {hits:?}");
        assert!(
            hits[0].contains("store/mod.rs"),
            "a transaction begins outside in_tx!: {hits:?}"
        );
    }
}

/// Functions (and methods) longer than `max` lines, outside `#[cfg(test)]` modules.
struct Long {
    file: String,
    max: usize,
    found: Vec<String>,
}

impl Long {
    fn check(&mut self, name: &syn::Ident, block: &syn::Block, span_of: proc_macro2::Span) {
        use syn::spanned::Spanned;
        let start = span_of.start().line;
        let end = block.span().end().line;
        let lines = end - start + 1;
        if lines > self.max {
            self.found
                .push(format!("{}:{start} {name} ({lines} lines)", self.file));
        }
    }
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

impl<'ast> Visit<'ast> for Long {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_cfg_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        use syn::spanned::Spanned;
        self.check(&f.sig.ident, &f.block, f.sig.span());
        syn::visit::visit_item_fn(self, f);
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        use syn::spanned::Spanned;
        self.check(&f.sig.ident, &f.block, f.sig.span());
        syn::visit::visit_impl_item_fn(self, f);
    }
}

fn long_functions(files: &[(PathBuf, String)], max: usize) -> Vec<String> {
    let mut v = Long {
        file: String::new(),
        max,
        found: vec![],
    };
    for (path, text) in files {
        v.file = path.display().to_string();
        let file = syn::parse_file(text).unwrap_or_else(|e| panic!("{}: {e}", v.file));
        v.visit_file(&file);
    }
    v.found
}

#[test]
fn no_function_in_src_exceeds_100_lines() {
    let long = long_functions(&src(""), 100);
    assert!(long.is_empty(), "functions over 100 lines: {long:#?}");
    // the check can fail: a smaller limit finds the longest ones
    assert!(!long_functions(&src(""), 40).is_empty());
}

/// Functions stay under 80 lines: at most five in `src/` are longer (the ones left say in
/// ARCHITECTURE.md why they read better whole).
#[test]
fn at_most_five_functions_in_src_exceed_80_lines() {
    let long = long_functions(&src(""), 80);
    assert!(
        long.len() <= 5,
        "{} functions over 80 lines: {long:#?}",
        long.len()
    );
}

/// The store module a file belongs to (`store/apply/step.rs` → `apply`), if any.
fn store_module(path: &Path) -> Option<String> {
    let parts: Vec<String> = path
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let at = parts.iter().rposition(|p| p == "store")?;
    let next = parts.get(at + 1)?;
    let name = next.trim_end_matches(".rs").to_string();
    (name != "mod").then_some(name)
}

/// Store modules each store module imports (`super::x`, `crate::store::x`).
fn store_imports() -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let mut graph: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        Default::default();
    for (path, text) in src("store") {
        let Some(module) = store_module(&path) else {
            continue;
        };
        let nested = path.parent().is_some_and(|p| !p.ends_with("store"));
        let entry = graph.entry(module.clone()).or_default();
        for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
            let mut prefixes = vec!["crate::store::"];
            prefixes.push(if nested { "super::super::" } else { "super::" });
            for prefix in prefixes {
                for (i, _) in line.match_indices(prefix) {
                    let rest = &line[i + prefix.len()..];
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    let is_module = rest[name.len()..].starts_with("::");
                    if is_module && name != module {
                        entry.insert(name);
                    }
                }
            }
        }
    }
    graph
}

#[test]
fn store_modules_form_no_import_cycle() {
    let graph = store_imports();
    assert!(
        graph
            .get("step_queue")
            .is_some_and(|d| d.contains("claim_queue") && d.contains("decision_queue"))
    );
    // depth-first search for a back edge
    fn visit(
        n: &str,
        graph: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut std::collections::BTreeSet<String>,
    ) {
        if let Some(at) = path.iter().position(|p| p == n) {
            panic!("import cycle between store modules: {:?}", &path[at..]);
        }
        if done.contains(n) {
            return;
        }
        path.push(n.to_string());
        for next in graph.get(n).into_iter().flatten() {
            visit(next, graph, path, done);
        }
        path.pop();
        done.insert(n.to_string());
    }
    let mut done = Default::default();
    for n in graph.keys() {
        visit(n, &graph, &mut vec![], &mut done);
    }
}

/// `docs/events.md`: (kind, its fields) in page order.
fn documented() -> Vec<(String, std::collections::BTreeSet<String>)> {
    let doc = include_str!("../../docs/events.md");
    let mut out: Vec<(String, std::collections::BTreeSet<String>)> = Vec::new();
    for line in doc.lines() {
        if let Some(kind) = line.strip_prefix("### `").and_then(|l| l.strip_suffix('`')) {
            out.push((kind.to_string(), std::collections::BTreeSet::new()));
        } else if let Some(field) = line.strip_prefix("| `").and_then(|l| l.split('`').next()) {
            out.last_mut()
                .expect("a field under a kind")
                .1
                .insert(field.to_string());
        }
    }
    out
}

/// Events as a typed contract: `docs/events.md` lists exactly the kinds of
/// `domain::event::Event`, in order, each with exactly its fields.
#[test]
fn the_event_docs_list_every_kind_with_its_fields() {
    let documented = documented();
    let kinds: Vec<&str> = documented.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        trellis::domain::event::Event::KINDS,
        "the kinds of docs/events.md, in order"
    );
    for (e, (kind, fields)) in trellis::domain::event::Event::examples()
        .iter()
        .zip(&documented)
    {
        let payload = e.payload();
        let keys: std::collections::BTreeSet<String> =
            payload.as_object().unwrap().keys().cloned().collect();
        assert_eq!(&keys, fields, "the fields of {kind}");
    }
}

/// The paths a doc names (in backticks, or as a link's target) that do not exist: a path is
/// written from the workspace, from the doc's own folder, or from the module a paragraph maps
/// (`sql/…` is under `src/store/`). Returns (paths checked, missing ones).
fn missing_paths(doc_path: &Path) -> (usize, Vec<String>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = fs::read_to_string(doc_path).unwrap();
    let dir = doc_path.parent().unwrap();
    let mut tokens: Vec<&str> = doc
        .split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, t)| t)
        .collect();
    // link targets: `](path)` and `](path#anchor)`
    for part in doc.split("](").skip(1) {
        if let Some(end) = part.find(')') {
            let target = part[..end].split('#').next().unwrap_or_default();
            if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
                tokens.push(target);
            }
        }
    }
    let (mut checked, mut missing) = (0, Vec::new());
    for token in tokens {
        let path_like = (token.contains('/') || token.ends_with(".md"))
            && !token.contains(['<', ' ', '*', ':', '$', '{', '?', '='])
            && [
                ".rs", ".sql", ".md", ".js", ".mjs", ".toml", ".sh", ".yml", ".json", "/",
            ]
            .iter()
            .any(|e| token.ends_with(e));
        // `target/…` is what a build or a test run writes, not a path of the repository
        if !path_like || token.starts_with('/') || token.starts_with("target/") {
            continue;
        }
        let bases = [
            root.to_path_buf(),
            dir.to_path_buf(),
            root.join("src"),
            root.join("src/store"),
            root.join("src/api"),
            root.join("src/store/step_queue"),
        ];
        let found = bases.iter().any(|b| b.join(token).exists())
            || token.starts_with("../shared/")
            || token.starts_with("../../shared/");
        if !found {
            missing.push(token.to_string());
        }
        checked += 1;
    }
    (checked, missing)
}

/// README.md, ARCHITECTURE.md, BENCHMARKS.md and every doc under `docs/` name only paths that
/// exist (files and links).
#[test]
fn every_path_the_docs_name_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs: Vec<std::path::PathBuf> = ["README.md", "ARCHITECTURE.md", "BENCHMARKS.md"]
        .iter()
        .map(|d| root.join(d))
        .collect();
    for e in fs::read_dir(root.join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            docs.push(p);
        }
    }
    let mut total = 0;
    let mut missing = Vec::new();
    for d in &docs {
        let (checked, gone) = missing_paths(d);
        total += checked;
        let name = d.strip_prefix(root).unwrap().display().to_string();
        missing.extend(gone.into_iter().map(|g| format!("{name}: {g}")));
    }
    assert!(
        missing.is_empty(),
        "docs name paths that do not exist: {missing:#?}"
    );
    assert!(total >= 100, "only {total} paths found");
}

/// Every `.rs` file under `src/`, as its path from `src/` (`store/maps.rs`).
fn modules() -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out: Vec<String> = rust_files(&src)
        .iter()
        .map(|p| p.strip_prefix(&src).unwrap().display().to_string())
        .collect();
    out.sort();
    out
}

/// ARCHITECTURE.md's code map names every module of `src/`: a file in the paragraph of its
/// folder (the one that names `src/<folder>/`) by its file name, a folder's `mod.rs` by the
/// folder, a file of `src/` itself by its path.
#[test]
fn the_code_map_names_every_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let start = doc.find("\n## Code map").expect("a code map");
    let map = &doc[start + 1..];
    let map = &map[..map[3..].find("\n## ").map_or(map.len(), |e| e + 3)];
    let paragraphs: Vec<&str> = map.split("\n\n").collect();
    let mut missing = Vec::new();
    for m in modules() {
        let (folder, file) = match m.rsplit_once('/') {
            Some((d, f)) => (format!("src/{d}/"), f.to_string()),
            None => {
                if !map.contains(&format!("`src/{m}`")) {
                    missing.push(m);
                }
                continue;
            }
        };
        let mut own = paragraphs
            .iter()
            .filter(|p| p.contains(&format!("`{folder}`")));
        let named = if file == "mod.rs" {
            own.next().is_some()
        } else {
            own.any(|p| p.contains(&format!("`{file}`")))
        };
        if !named {
            missing.push(m);
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's code map does not name {missing:?}"
    );
}

/// Every module's parent names it in its header (`//!`): `lib.rs` its modules, a folder's
/// `mod.rs` (or the file beside the folder) the files in it.
#[test]
fn every_module_is_named_in_its_parents_header() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut missing = Vec::new();
    let mut parents = 0;
    for m in modules() {
        let text = fs::read_to_string(src.join(&m)).unwrap();
        let header: String = text
            .lines()
            .take_while(|l| l.starts_with("//!") || l.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        let children: Vec<&str> = text
            .lines()
            .filter_map(|l| {
                let l = l.trim();
                let rest = l
                    .strip_prefix("pub mod ")
                    .or_else(|| l.strip_prefix("pub(crate) mod "))
                    .or_else(|| l.strip_prefix("mod "))?;
                rest.strip_suffix(';')
            })
            .collect();
        if children.is_empty() {
            continue;
        }
        parents += 1;
        for c in children {
            if !header.contains(&format!("`{c}`")) {
                missing.push(format!("{m}: {c}"));
            }
        }
    }
    assert!(parents >= 9, "only {parents} parent modules");
    assert!(
        missing.is_empty(),
        "modules their parent's header does not name: {missing:#?}"
    );
}

/// The modules of `src/<folder>/` (its files, not `mod.rs`) each imports, read from
/// `super::x`, `super::{x, y}` and `crate::<folder>::x` outside comments.
fn sibling_imports(
    folder: &str,
) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let files = src(folder);
    let names: std::collections::BTreeSet<String> = files
        .iter()
        .filter(|(p, _)| p.parent().is_some_and(|d| d.ends_with(folder)))
        .filter_map(|(p, _)| Some(p.file_stem()?.to_str()?.to_string()))
        .filter(|n| n != "mod")
        .collect();
    let mut graph: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        Default::default();
    for (path, text) in &files {
        let Some(module) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if !names.contains(module) || !path.parent().is_some_and(|d| d.ends_with(folder)) {
            continue;
        }
        let code: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let entry = graph.entry(module.to_string()).or_default();
        let absolute = format!("crate::{folder}::");
        for prefix in ["super::", absolute.as_str()] {
            for (i, _) in code.match_indices(prefix) {
                let rest = &code[i + prefix.len()..];
                let named: Vec<String> = match rest.strip_prefix('{') {
                    Some(group) => group[..group.find('}').unwrap_or(group.len())]
                        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .map(str::to_string)
                        .collect(),
                    None => vec![
                        rest.chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect(),
                    ],
                };
                for n in named {
                    if names.contains(&n) && n != module {
                        entry.insert(n);
                    }
                }
            }
        }
    }
    graph
}

/// A depth-first search of `graph` for a cycle; panics naming it.
fn assert_no_cycle(
    what: &str,
    graph: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
) {
    fn visit(
        what: &str,
        n: &str,
        graph: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut std::collections::BTreeSet<String>,
    ) {
        if let Some(at) = path.iter().position(|p| p == n) {
            panic!("import cycle between {what} modules: {:?}", &path[at..]);
        }
        if done.contains(n) {
            return;
        }
        path.push(n.to_string());
        for next in graph.get(n).into_iter().flatten() {
            visit(what, next, graph, path, done);
        }
        path.pop();
        done.insert(n.to_string());
    }
    let mut done = Default::default();
    for n in graph.keys() {
        visit(what, n, graph, &mut vec![], &mut done);
    }
}

/// The API's modules form no import cycle: the document (`openapi`) imports the resources,
/// the resources import the shared leaves (`schemas`, `rules`, `views`, `auth`, `input`).
#[test]
fn api_modules_form_no_import_cycle() {
    let graph = sibling_imports("api");
    assert!(
        graph.get("openapi").is_some_and(|d| d.contains("tasks"))
            && graph.get("tasks").is_some_and(|d| d.contains("schemas")),
        "the import graph was not read: {graph:?}"
    );
    assert_no_cycle("api", &graph);
}

/// The domain's modules form no import cycle (`plan` and `params` both read `placeholder`).
#[test]
fn domain_modules_form_no_import_cycle() {
    let graph = sibling_imports("domain");
    assert!(
        graph
            .get("params")
            .is_some_and(|d| d.contains("placeholder")),
        "the import graph was not read: {graph:?}"
    );
    assert_no_cycle("domain", &graph);
}

/// The worker's modules form no import cycle: `execute` runs a step on `call` (one tool call),
/// which `waits`, `maps` and `cancel` use too; the loops of `maintenance` and `webhooks` run on
/// `sweep`.
#[test]
fn worker_modules_form_no_import_cycle() {
    let graph = sibling_imports("worker");
    assert!(
        graph.get("execute").is_some_and(|d| d.contains("call")),
        "the import graph was not read: {graph:?}"
    );
    assert_no_cycle("worker", &graph);
}

/// Every function of `src/store` (outside `#[cfg(test)]`): (file, name, its source text).
struct Functions {
    file: String,
    lines: Vec<String>,
    found: Vec<(String, String, String)>,
}

impl Functions {
    fn add(&mut self, name: &syn::Ident, block: &syn::Block, span_of: proc_macro2::Span) {
        use syn::spanned::Spanned;
        let (start, end) = (span_of.start().line, block.span().end().line);
        let body = self.lines[start - 1..end].join("\n");
        self.found.push((self.file.clone(), name.to_string(), body));
    }
}

impl<'ast> Visit<'ast> for Functions {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_cfg_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        use syn::spanned::Spanned;
        self.add(&f.sig.ident, &f.block, f.sig.span());
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        use syn::spanned::Spanned;
        self.add(&f.sig.ident, &f.block, f.sig.span());
    }
}

/// The write context owns the chores: the claim queue's sync, the events' insert and the
/// notifies are run from `store/write.rs` only, no function passes events around by hand, and
/// every function that runs a `-- move:` statement of a move that changes what is claimable
/// says it to its write context (`tx.moved(` that move), so the context syncs the task at
/// commit.
#[test]
fn every_move_says_what_it_touches_to_the_write_context() {
    use trellis::domain::transitions::{Claimable, StepMove, TaskMove};
    let files = src("");
    for needle in [
        "claim_queue::sync(",
        "append_events(",
        "queue/notify_ready",
        "queue/notify_decisions",
    ] {
        let hits: Vec<String> = find(&files, needle)
            .into_iter()
            .filter(|h| !h.contains("store/write.rs"))
            .collect();
        assert!(hits.is_empty(), "{needle} outside store/write.rs: {hits:?}");
    }
    let by_hand = find(&files, &["&mut Vec<", "NewEvent>"].concat());
    assert!(by_hand.is_empty(), "events passed by hand: {by_hand:?}");

    let claimable: std::collections::BTreeMap<String, bool> = StepMove::ALL
        .iter()
        .map(|m| (format!("StepMove::{m:?}"), m.changes_claimable()))
        .chain(
            TaskMove::ALL
                .iter()
                .map(|m| (format!("TaskMove::{m:?}"), m.changes_claimable())),
        )
        .collect();
    // statement name → its move, for the moves that change what is claimable
    let mut touching = std::collections::BTreeMap::new();
    for (name, sql) in statements() {
        let Some(line) = sql.lines().find(|l| l.starts_with("-- move: ")) else {
            continue;
        };
        let m = line["-- move: ".len()..]
            .split_whitespace()
            .next()
            .unwrap()
            .to_string();
        if claimable.get(&m) == Some(&true) {
            touching.insert(name, m);
        }
    }
    assert!(!touching.is_empty(), "no move statement found");
    // where the function itself does not say it, and why
    let exempt = [
        // the table of one task's statements: `move_task` runs them and says the move
        "one",
        // the completion cycle touches the tasks its promotion reports ready (the hot path
        // syncs no more than those)
        "complete_running",
        "promote_and_count",
        // the plan probe's list of hot statements (feature `testing`)
        "probe_statements",
    ];
    let mut v = Functions {
        file: String::new(),
        lines: vec![],
        found: vec![],
    };
    for (path, text) in src("store") {
        v.file = path.display().to_string();
        v.lines = text.lines().map(str::to_string).collect();
        let file = syn::parse_file(&text).unwrap();
        v.visit_file(&file);
    }
    let mut silent = Vec::new();
    let mut checked = 0;
    for (file, name, body) in &v.found {
        for (stmt, m) in &touching {
            if !body.contains(&format!("sql!(\"{stmt}\")")) {
                continue;
            }
            checked += 1;
            let said = body.contains(&format!("tx.moved({m}"))
                || body.contains("tx.moved(m,")
                || body.contains("tx.moved(f.step_move,");
            if !said && !exempt.contains(&name.as_str()) {
                silent.push(format!("{file} {name}: {stmt} ({m})"));
            }
        }
    }
    assert!(
        checked > 10,
        "only {checked} move statements found in functions"
    );
    assert!(
        silent.is_empty(),
        "functions that run a move changing what is claimable without saying it: {silent:?}"
    );
}
