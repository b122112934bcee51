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

/// Every status write is in `src/store/transitions.rs`.
#[test]
fn only_transitions_writes_a_status() {
    let all = src("");
    let writers: Vec<String> = find(&all, "SET status")
        .into_iter()
        .chain(find(&all, ", status ="))
        .filter(|h| !h.contains("store/transitions.rs"))
        .collect();
    assert!(
        writers.is_empty(),
        "a status is written outside store/transitions.rs: {writers:?}"
    );
    let transitions: Vec<(PathBuf, String)> = all
        .iter()
        .filter(|(p, _)| p.ends_with("store/transitions.rs"))
        .cloned()
        .collect();
    assert!(find(&transitions, "SET status = {to}").len() >= 10);
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
            if !nested {
                prefixes.push("super::");
            }
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
            .is_some_and(|d| d.contains("transitions"))
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
