//! Tool-level parity: every glob and grep call gives the same result object
//! (content, error, value, meta) on the native engine and on a real rg,
//! over the conformance fixture trees, with the default configuration and
//! with small caps that exercise previews, sampling, spill and the meta cap.
//!
//! Rerun one case: `DSH_SEARCH_CASE='<substring>' cargo test --test tests tools_parity`.

use std::sync::Arc;

use dsh_search::config::Config;
use dsh_search::spill::{SpillRef, SpillSource, SpillStore};
use dsh_search::tool::{CallContext, Tools};
use dsh_search::{NativeBackend, RgBackend};
use serde_json::{json, Value};

use crate::util::tree::{dir, file, fixture, mtime, Spec, Tree};

/// A store with a deterministic locator, so spilled results compare equal.
struct Fixed;

impl SpillStore for Fixed {
    fn save_text(
        &self,
        owner: &str,
        source: &SpillSource,
        name: &str,
        content: &str,
    ) -> std::io::Result<SpillRef> {
        Ok(SpillRef {
            locator: format!(
                "/spill/{owner}/{}/{name}/{}",
                source.tool_name,
                content.len()
            ),
            hint: "Hint.".to_string(),
        })
    }
}

fn configs() -> Vec<(&'static str, Config)> {
    let mut plain = Config::default();
    plain.spill.max_inline_bytes = None;
    let mut small = Config::default();
    small.search.glob_max_results = 3;
    small.search.grep_max_matches = 4;
    small.search.grep_max_line_bytes = 10;
    small.search.search_meta_max_bytes = 200;
    small.search.sample_over_cap_glob_results = true;
    small.spill.max_inline_bytes = Some(150);
    vec![("default", plain), ("small caps", small)]
}

fn check(name: &str, specs: &[Spec], calls: &[(&str, Value)]) {
    if crate::util::rg::env().is_none() {
        return;
    }
    let tree = Tree::build(specs);
    let mut failures = Vec::new();
    let mut count = 0;
    for (cname, config) in configs() {
        let native = Tools::new(config.clone(), Arc::new(NativeBackend::new()))
            .with_spill_store(Arc::new(Fixed));
        let rg =
            Tools::new(config, Arc::new(RgBackend::default())).with_spill_store(Arc::new(Fixed));
        for (tool, args) in calls {
            let root = tree.root().to_str().unwrap();
            let args: Value =
                serde_json::from_str(&args.to_string().replace("{root}", root)).unwrap();
            let label = format!("{name} [{cname}]: {tool} {args}");
            if !crate::util::selected(&label) {
                continue;
            }
            for nested in [false, true] {
                let mut ctx = CallContext::new(tree.root()).session("parity");
                ctx.direct = !nested;
                let a = native.call(tool, &args, &ctx);
                let b = rg.call(tool, &args, &ctx);
                count += 1;
                if a != b {
                    failures.push(format!(
                        "{label} nested={nested}\n  native: {}\n  rg:     {}",
                        serde_json::to_string(&a).unwrap(),
                        serde_json::to_string(&b).unwrap()
                    ));
                }
            }
        }
    }
    assert!(count > 0 || std::env::var_os("DSH_SEARCH_CASE").is_some());
    assert!(
        failures.is_empty(),
        "{} of {count} calls differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn basic_tree() -> Vec<Spec> {
    vec![
        file("src/a.rs", "fn main() { needle(); }\n"),
        file(
            "src/b.txt",
            "needle in b\nno match here\nneedle again needle\n",
        ),
        file("src/deep/c.rs", "// needle deep\n"),
        file("src/.hidden.rs", "needle hidden rs\n"),
        file(
            "docs/readme.md",
            "# needle docs with a line longer than ten bytes\n",
        ),
        file("notes.md", "notes needle\n"),
        file("top.txt", "top needle\nalpha\n"),
        file("-dash.txt", "-foo needle\n"),
        file("space name.txt", "needle with space\n"),
        file("ünï.txt", "needle ünï ö ünï ö ünï ö\n"),
        file(".git/HEAD", "ref: refs/heads/main needle\n"),
        file(".gitignore", "ignored.txt\nbuild/\n"),
        file("ignored.txt", "needle ignored\n"),
        file("build/out.txt", "needle build\n"),
        file("vendor/x/1.rs", "needle v1\n"),
        file("vendor/x/2.rs", "needle v2\n"),
        file("vendor/y/3.rs", "needle v3\n"),
        dir("emptydir"),
        mtime("top.txt", 100),
        mtime("src/a.rs", 100),
        mtime("vendor/x/1.rs", 50),
    ]
}

#[test]
fn basic() {
    let calls: Vec<(&str, Value)> = vec![
        ("glob", json!({"pattern": "*"})),
        ("glob", json!({"pattern": "**/*.rs"})),
        ("glob", json!({"pattern": "*.rs", "path": "vendor"})),
        ("glob", json!({"pattern": "*.rs", "path": "./vendor/"})),
        ("glob", json!({"pattern": "*", "path": "{root}"})),
        (
            "glob",
            json!({"pattern": "*", "path": "{root}/src/../vendor"}),
        ),
        ("glob", json!({"pattern": "*", "path": "."})),
        ("glob", json!({"pattern": "*", "path": ".git"})),
        ("glob", json!({"pattern": "*", "path": "missing"})),
        ("glob", json!({"pattern": "["})),
        ("glob", json!({"pattern": "*.none"})),
        ("glob", json!({"pattern": "*", "path": "-dash.txt"})),
        ("grep", json!({"pattern": "needle"})),
        ("grep", json!({"pattern": "needle", "path": "."})),
        ("grep", json!({"pattern": "needle", "path": "{root}"})),
        ("grep", json!({"pattern": "needle", "include": "*.txt"})),
        (
            "grep",
            json!({"pattern": "needle", "include": "ignored.txt"}),
        ),
        ("grep", json!({"pattern": "needle", "path": "src"})),
        ("grep", json!({"pattern": "-foo", "path": "-dash.txt"})),
        ("grep", json!({"pattern": "ö"})),
        ("grep", json!({"pattern": "(unclosed"})),
        ("grep", json!({"pattern": "x", "include": "{a"})),
        ("grep", json!({"pattern": "needle", "path": "missing"})),
        ("grep", json!({"pattern": "nothing matches this"})),
        ("grep", json!({"pattern": " "})),
    ];
    check("basic", &basic_tree(), &calls);
}

#[test]
fn odd_names_and_encodings() {
    let specs = vec![
        file(b"bad\xffname.txt", "needle nonutf8 name\n"),
        file("tab\tname.txt", "needle tab name\n"),
        file("q\"uote.txt", "needle quote name\n"),
        file(b"dir\xfe/inner.txt", "needle in non-utf8 dir\n"),
        file("lat.txt", b"needle \xe9t\xe9\n"),
        file("mixed.txt", b"needle ok\n\xff needle bad\n"),
        fixture("crlf.txt", "crlf.txt"),
        fixture("latin1.txt", "latin1.txt"),
        fixture("utf16le_bom.txt", "utf16le_bom.txt"),
        fixture("nul_early.bin", "nul_early.bin"),
    ];
    let calls: Vec<(&str, Value)> = vec![
        ("glob", json!({"pattern": "*"})),
        ("glob", json!({"pattern": "**/inner.txt"})),
        ("grep", json!({"pattern": "needle"})),
        ("grep", json!({"pattern": "(?-u:\\xff)"})),
        ("grep", json!({"pattern": "\\r"})),
        ("grep", json!({"pattern": "$"})),
        ("grep", json!({"pattern": "needle", "path": "crlf.txt"})),
        ("grep", json!({"pattern": "é"})),
    ];
    check("odd_names", &specs, &calls);
}
