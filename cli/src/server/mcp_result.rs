//! A tool's result as an MCP `tools/call` result (`contract.md` §12,
//! `docs/servers.md`, "What a result carries").
//!
//! The text is the tool's, within its caps (a search's spill keeps it
//! within `maxInlineBytes`). Everything else is small by default whatever
//! the tree, because a client may show the model any of it: some show
//! `structuredContent` instead of the text, some append it, some append
//! `_meta`. So:
//!
//! - `structuredContent` is absent by default; `--structured-content
//!   meta` gives glob's and grep's counts ([`counts`]), `full` the tool's
//!   whole canonical value (every path, every match: megabytes on a large
//!   tree), for hosts that keep it out of the model's context;
//! - `_meta["dsh-search/error"]` is the error's name and code, never its
//!   message (the text has it);
//! - `_meta["dsh-search/meta"]` is the presentation meta's counts, or with
//!   `--meta-page` the whole presentation meta, its page of paths or
//!   matches held to `searchMetaMaxBytes` ([`bounded_meta`]).
//!
//! So a result's JSON is at most its text's plus 1 KiB, plus
//! `searchMetaMaxBytes` with `--meta-page`, unbounded with `full`.

use dsh_search::tool::ToolResult;
use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use serde_json::{json, Map, Value};

use crate::setup::StructuredContent;

/// How the server turns a [`ToolResult`] into a [`CallToolResult`]: what
/// `structuredContent` carries, whether `_meta` carries the presentation
/// meta's page, and the cap on it (`searchMetaMaxBytes`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ResultShape {
    pub(crate) structured: StructuredContent,
    pub(crate) page: bool,
    pub(crate) meta_cap: u64,
}

impl ResultShape {
    /// `result` as an MCP tool result: the text as one text block,
    /// `isError`, `structuredContent` as the mode says (success only), and
    /// `_meta`.
    pub(crate) fn result(self, result: ToolResult) -> CallToolResult {
        let block = vec![ContentBlock::text(result.content)];
        let mut out = if result.is_error {
            CallToolResult::error(block)
        } else {
            CallToolResult::success(block)
        };
        // The counts are the page's, whether the page goes or not: the
        // same `truncated` in every mode.
        let page = result.meta.map(|m| bounded_meta(m, self.meta_cap));
        let counts = page.as_ref().map(counts);
        if !result.is_error {
            out.structured_content = match self.structured {
                StructuredContent::None => None,
                // glob's and grep's (a meta with a shape) only.
                StructuredContent::Meta => counts.clone().filter(|c| c.get("shape").is_some()),
                // MCP's structuredContent is an object; every tool's value
                // is one.
                StructuredContent::Full => result.value.filter(Value::is_object),
            };
        }
        let mut meta = Map::new();
        if let Some(info) = result.error.and_then(|e| e.info) {
            meta.insert("dsh-search/error".into(), json!({ "info": info }));
        }
        if let Some(m) = if self.page { page } else { counts } {
            meta.insert("dsh-search/meta".into(), m);
        }
        if !meta.is_empty() {
            out.meta = Some(MetaObject(meta));
        }
        out
    }
}

/// The presentation meta without its page (`seed-reference.md` §3.8):
/// `shape`, `total` (every result, before any cap), `truncated` (the page
/// does not hold them all), and `index` where the workspace has one
/// (`docs/index.md`), those of them it has. Scalars and a short phrase: a
/// few dozen bytes.
fn counts(meta: &Value) -> Value {
    let kept = meta
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| matches!(k.as_str(), "shape" | "total" | "truncated" | "index"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Value::Object(kept)
}

/// The presentation meta with its JSON within `cap` bytes, the `index` key
/// aside (the library adds it outside the cap, `docs/index.md`).
///
/// The seed's cap drops trailing file groups (grep) or paths (glob) but
/// never the last one (`seed-reference.md` §3.8 and its note 27), so one
/// file's matches can make the meta any size: 250 lines of 2,000 bytes are
/// 500 KB. Here the cap goes on one level down: the last group's trailing
/// matches, keeping one, then, while one match or one path alone is over,
/// the whole list. `truncated` is then true, and a reader of the meta
/// (§3.8) still finds it well-formed.
fn bounded_meta(mut meta: Value, cap: u64) -> Value {
    let Some(obj) = meta.as_object_mut() else {
        return meta;
    };
    let cap = usize::try_from(cap).unwrap_or(usize::MAX);
    let index = obj.remove("index");
    let mut len = json_len(&*obj);
    if len > cap {
        if let Some(truncated @ Value::Bool(false)) = obj.get_mut("truncated") {
            *truncated = Value::Bool(true);
            len -= "false".len() - "true".len();
        }
        let list = match obj.get("shape").and_then(Value::as_str) {
            Some("matches") => "files",
            Some("paths") => "paths",
            _ => "",
        };
        if let Some(Value::Array(items)) = obj.get_mut(list) {
            len = drop_trailing(items, len, cap);
            if list == "files" {
                let group = items.last_mut().and_then(|g| g.get_mut("matches"));
                if let Some(Value::Array(matches)) = group {
                    len = drop_trailing(matches, len, cap);
                }
            }
            if len > cap {
                len -= json_len(&*items) - "[]".len();
                items.clear();
            }
        }
        if len > cap {
            // Not a meta of the seed's shapes: its counts alone.
            obj.retain(|k, _| matches!(k.as_str(), "shape" | "total" | "truncated"));
        }
    }
    if let Some(index) = index {
        obj.insert("index".into(), index);
    }
    meta
}

/// Drop trailing `items` while `len`, the JSON length of the whole they
/// are part of, is over `cap`, keeping the first; the whole's new length.
fn drop_trailing(items: &mut Vec<Value>, mut len: usize, cap: usize) -> usize {
    while len > cap && items.len() > 1 {
        if let Some(item) = items.pop() {
            // The item and the comma before it.
            len -= json_len(&item) + 1;
        }
    }
    len
}

/// The length of `v`'s compact JSON, counted as it is written (a meta of
/// megabytes is not copied to be measured).
fn json_len(v: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a writer that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, v);
    count.0
}

#[cfg(test)]
mod tests {
    use super::{bounded_meta, counts, json_len, ResultShape};
    use crate::setup::StructuredContent;
    use dsh_search::tool::{ToolError, ToolResult};
    use serde_json::{json, Value};

    fn grep_meta(files: &[(&str, usize, usize)], truncated: bool) -> Value {
        let files: Vec<Value> = files
            .iter()
            .map(|&(path, n, width)| {
                let matches: Vec<Value> = (1..=n)
                    .map(|k| json!({"lineNumber": k, "line": "m".repeat(width)}))
                    .collect();
                json!({"path": path, "matches": matches})
            })
            .collect();
        let total = files
            .iter()
            .map(|f| f["matches"].as_array().unwrap().len())
            .sum::<usize>();
        json!({"shape": "matches", "files": files, "truncated": truncated, "total": total})
    }

    #[test]
    fn a_meta_within_the_cap_is_untouched() {
        let meta = grep_meta(&[("a", 3, 10), ("b", 2, 10)], false);
        let cap = json_len(&meta) as u64;
        assert_eq!(bounded_meta(meta.clone(), cap), meta);
    }

    #[test]
    fn one_group_over_the_cap_loses_its_trailing_matches() {
        let meta = grep_meta(&[("wide", 250, 1_000)], false);
        for cap in [65_536u64, 5_000, 1_200] {
            let got = bounded_meta(meta.clone(), cap);
            assert!(
                json_len(&got) as u64 <= cap,
                "cap {cap}: {}",
                json_len(&got)
            );
            let kept = got["files"][0]["matches"].as_array().unwrap();
            assert!(!kept.is_empty() && kept.len() < 250, "cap {cap}");
            // The most that fits: one more would be over.
            let mut more = got.clone();
            more["files"][0]["matches"]
                .as_array_mut()
                .unwrap()
                .push(meta["files"][0]["matches"][kept.len()].clone());
            assert!(json_len(&more) as u64 > cap, "cap {cap}");
            assert_eq!(got["truncated"], true);
            assert_eq!(got["total"], 250);
        }
    }

    #[test]
    fn a_single_item_over_the_cap_leaves_an_empty_list() {
        let meta = grep_meta(&[("wide", 1, 5_000)], false);
        let got = bounded_meta(meta, 1_000);
        assert_eq!(
            got,
            json!({"shape": "matches", "files": [], "truncated": true, "total": 1})
        );
        let paths =
            json!({"shape": "paths", "paths": ["p".repeat(3_000)], "truncated": false, "total": 1});
        let got = bounded_meta(paths, 1_000);
        assert_eq!(
            got,
            json!({"shape": "paths", "paths": [], "truncated": true, "total": 1})
        );
    }

    #[test]
    fn the_index_key_is_outside_the_cap() {
        let mut meta = grep_meta(&[("a", 2, 10)], false);
        let cap = json_len(&meta) as u64;
        meta["index"] = json!("scan: the index is building");
        assert_eq!(bounded_meta(meta.clone(), cap), meta);
    }

    #[test]
    fn counts_are_the_scalars_of_a_presentation_meta() {
        let mut meta = grep_meta(&[("a", 2, 10)], true);
        meta["index"] = json!("mirror");
        assert_eq!(
            counts(&meta),
            json!({"shape": "matches", "total": 2, "truncated": true, "index": "mirror"})
        );
        assert_eq!(counts(&json!({"index": "none"})), json!({"index": "none"}));
    }

    #[test]
    fn structured_content_and_meta_by_mode() {
        let page = json!({"shape": "paths", "paths": ["f1"], "truncated": false, "total": 1});
        let counted = json!({"shape": "paths", "truncated": false, "total": 1});
        let mut ok = ToolResult::ok("f1".into(), json!({"root": ".", "paths": ["f1"]}));
        ok.meta = Some(page.clone());
        let shape = |structured, page| ResultShape {
            structured,
            page,
            meta_cap: 65_536,
        };
        let of = |mode, page| {
            let out = shape(mode, page).result(ok.clone());
            let meta = serde_json::to_value(out.meta.unwrap()).unwrap();
            (out.structured_content, meta["dsh-search/meta"].clone())
        };
        assert_eq!(of(StructuredContent::None, false), (None, counted.clone()));
        assert_eq!(
            of(StructuredContent::Meta, false),
            (Some(counted.clone()), counted.clone())
        );
        assert_eq!(of(StructuredContent::Full, true), (ok.value.clone(), page));
        // read's result has no meta: no counts either.
        let read = ToolResult::ok("1: a".into(), json!({"path": "/a", "lines": []}));
        let out = shape(StructuredContent::Meta, true).result(read);
        assert_eq!((out.structured_content, out.meta), (None, None));
        let err = ToolResult::error(ToolError::coded("SearchError", "SEARCH_FAILED", "boom"));
        let out = shape(StructuredContent::Full, true).result(err);
        assert_eq!(out.structured_content, None);
        let meta = serde_json::to_value(out.meta.unwrap()).unwrap();
        assert_eq!(
            meta,
            json!({"dsh-search/error": {"info": {"name": "SearchError", "code": "SEARCH_FAILED"}}})
        );
        let plain =
            shape(StructuredContent::None, false).result(ToolResult::error(ToolError::plain("no")));
        assert!(plain.meta.is_none(), "a plain error has no name or code");
    }
}
