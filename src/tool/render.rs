//! The text the model sees for a glob or grep value (`seed-reference.md`
//! §3.2–§3.5), and the presentation meta of a direct call (§3.8).

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::{json, Value};

use crate::config::SearchConfig;
use crate::quoting::shown;
use crate::spill::SpillRef;
use crate::tool::display::preview_line;
use crate::tool::search::{GlobValue, GrepValue};
use crate::tool::ToolName;

/// The unsaved recovery texts (`seed-reference.md` §3.2, §3.4, literal).
const GREP_UNSAVED: &str =
    "The complete result could not be saved; narrow pattern, path, or include to see more.";
const GLOB_UNSAVED: &str =
    "The complete result could not be saved; narrow pattern or path to see more.";

fn usize_cap(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// The first `n` matches (at most) with their lines previewed to
/// `grepMaxLineBytes`, in value order; a line within the cap is borrowed.
fn previewed<'a>(value: &'a GrepValue, config: &SearchConfig, n: usize) -> Vec<Previewed<'a>> {
    let max = usize_cap(config.grep_max_line_bytes);
    value
        .matches
        .iter()
        .take(n)
        .map(|m| Previewed {
            path: &m.path,
            line_number: m.line_number,
            line: if m.line.len() <= max {
                Cow::Borrowed(m.line.as_str())
            } else {
                Cow::Owned(preview_line(&m.line, max))
            },
        })
        .collect()
}

/// A match as shown: its line previewed.
struct Previewed<'a> {
    path: &'a str,
    line_number: u64,
    line: Cow<'a, str>,
}

/// Groups of consecutive-or-not matches by path, in first-seen order, each
/// keeping its matches' order.
fn group_by_path<'m, T>(
    matches: &'m [T],
    path: impl Fn(&'m T) -> &'m str,
) -> Vec<(&'m str, Vec<&'m T>)> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut groups: Vec<(&str, Vec<&T>)> = Vec::new();
    for m in matches {
        let p = path(m);
        let i = *index.entry(p).or_insert_with(|| {
            groups.push((p, Vec::new()));
            groups.len() - 1
        });
        groups[i].1.push(m);
    }
    groups
}

fn format_previewed(matches: &[Previewed<'_>]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    for (i, (path, ms)) in group_by_path(matches, |m| m.path).iter().enumerate() {
        if i > 0 {
            s.push_str("\n\n");
        }
        // A name that could forge text is shown escaped (D6).
        s.push_str(&shown(path));
        for m in ms {
            let _ = write!(s, "\nLine {}: ", m.line_number);
            s.push_str(&m.line);
        }
    }
    s
}

/// Whether a grep value is over the inline cap (and so spills on a direct
/// call).
fn grep_over_cap(value: &GrepValue, config: &SearchConfig) -> bool {
    value.matches.len() as u64 > config.grep_max_matches
}

/// Whether a glob value is over the inline cap.
fn glob_over_cap(value: &GlobValue, config: &SearchConfig) -> bool {
    value.paths.len() as u64 > config.glob_max_results
}

/// The complete grep artifact a direct call spills: every match previewed,
/// under `Found <N> matches` (always plural: N is at least 2 here).
fn grep_artifact(value: &GrepValue, config: &SearchConfig) -> String {
    let all = previewed(value, config, usize::MAX);
    format!("Found {} matches\n\n{}", all.len(), format_previewed(&all))
}

/// The complete glob artifact: every path in full order, no footer.
fn glob_artifact(value: &GlobValue) -> String {
    shown_lines(value.paths.iter().map(String::as_str))
}

/// Paths one per line, each [`shown`] (D6).
fn shown_lines<'a>(paths: impl IntoIterator<Item = &'a str> + Clone) -> String {
    let len: usize = paths.clone().into_iter().map(|p| p.len() + 1).sum();
    let mut out = String::with_capacity(len);
    for (i, p) in paths.into_iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&shown(p));
    }
    out
}

/// What the dispatcher does with a search's value, the same steps for glob
/// and grep (§3.2–§3.4, §3.8): spill the complete result when a direct
/// call is over the inline cap, render the text, build the direct call's
/// presentation meta, hand the value on as JSON.
pub(crate) trait Shown {
    /// The tool's name, as the spill store files it.
    const TOOL: ToolName;
    /// The spilled artifact's file name.
    const ARTIFACT: &'static str;
    fn over_cap(&self, config: &SearchConfig) -> bool;
    fn artifact(&self, config: &SearchConfig) -> String;
    fn render(&self, config: &SearchConfig, spill: Option<&SpillRef>) -> String;
    fn meta(&self, config: &SearchConfig) -> Value;
    fn is_empty(&self) -> bool;
    fn into_json(self) -> Value;
}

impl Shown for GlobValue {
    const TOOL: ToolName = ToolName::Glob;
    const ARTIFACT: &'static str = "glob-results.txt";
    fn over_cap(&self, config: &SearchConfig) -> bool {
        glob_over_cap(self, config)
    }
    fn artifact(&self, _config: &SearchConfig) -> String {
        glob_artifact(self)
    }
    fn render(&self, config: &SearchConfig, spill: Option<&SpillRef>) -> String {
        render_glob(self, config, spill)
    }
    fn meta(&self, config: &SearchConfig) -> Value {
        glob_meta(self, config)
    }
    fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }
    fn into_json(self) -> Value {
        GlobValue::into_json(self)
    }
}

impl Shown for GrepValue {
    const TOOL: ToolName = ToolName::Grep;
    const ARTIFACT: &'static str = "grep-results.txt";
    fn over_cap(&self, config: &SearchConfig) -> bool {
        grep_over_cap(self, config)
    }
    fn artifact(&self, config: &SearchConfig) -> String {
        grep_artifact(self, config)
    }
    fn render(&self, config: &SearchConfig, spill: Option<&SpillRef>) -> String {
        render_grep(self, config, spill)
    }
    fn meta(&self, config: &SearchConfig) -> Value {
        grep_meta(self, config)
    }
    fn is_empty(&self) -> bool {
        self.matches.is_empty()
    }
    fn into_json(self) -> Value {
        GrepValue::into_json(self)
    }
}

/// grep's text (§3.2). `spill` is where the complete result went, if it
/// was saved.
fn render_grep(value: &GrepValue, config: &SearchConfig, spill: Option<&SpillRef>) -> String {
    let seen = value.matches.len();
    if seen == 0 {
        return "No matches found".to_string();
    }
    let kept = previewed(value, config, usize_cap(config.grep_max_matches));
    let body = format_previewed(&kept);
    if kept.len() == seen {
        let noun = if seen == 1 { "match" } else { "matches" };
        return format!("Found {seen} {noun}\n\n{body}");
    }
    let recovery = match spill {
        Some(r) => format!("Full grep result stored at: {}. {}", r.locator, r.hint),
        None => GREP_UNSAVED.to_string(),
    };
    format!(
        "Found {} of {seen} matches\n\n{body}\n\n({recovery})",
        kept.len()
    )
}

/// A sample of an over-cap glob result (§3.5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Sample<'a> {
    /// The taken paths, group by group.
    pub items: Vec<&'a str>,
    /// Groups that got at least one slot.
    pub shown: usize,
    /// Distinct groups in the whole result.
    pub total: usize,
}

/// The top-level entry a path belongs to, relative to the search root
/// (§3.5 "grouping key"). `/` is the only separator.
fn group_key<'a>(path: &'a str, root: &str) -> &'a str {
    let rel = if root == "." {
        path.strip_prefix("./").unwrap_or(path)
    } else {
        let r = root.trim_end_matches('/');
        if r.is_empty() {
            path.trim_start_matches('/')
        } else if path == r {
            ""
        } else {
            match path.strip_prefix(r).and_then(|rest| rest.strip_prefix('/')) {
                Some(rest) => rest,
                None => path,
            }
        }
    };
    let rel = rel.trim_start_matches('/');
    rel.split('/').next().unwrap_or("")
}

/// `sampleAcrossTopLevel`: round-robin over top-level groups (in first-seen
/// order) until `max_items` paths are taken; exhausted groups leave the
/// rotation, so the work is linear in the input.
pub(crate) fn sample_across_top_level<'a>(
    paths: &'a [String],
    max_items: usize,
    root: &str,
) -> Sample<'a> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut groups: Vec<Vec<&'a str>> = Vec::new();
    for p in paths {
        let key = group_key(p, root);
        let i = *index.entry(key).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[i].push(p);
    }
    let mut taken = vec![0usize; groups.len()];
    let mut active: Vec<usize> = (0..groups.len()).collect();
    let mut count = 0;
    'rounds: while count < max_items && !active.is_empty() {
        let mut next = Vec::with_capacity(active.len());
        for &g in &active {
            if count == max_items {
                break 'rounds;
            }
            taken[g] += 1;
            count += 1;
            if taken[g] < groups[g].len() {
                next.push(g);
            }
        }
        active = next;
    }
    let items = groups
        .iter()
        .zip(&taken)
        .flat_map(|(g, &n)| g[..n].iter().copied())
        .collect();
    Sample {
        items,
        shown: taken.iter().filter(|&&n| n > 0).count(),
        total: groups.len(),
    }
}

/// The page of an over-cap glob result and the footer's basis: the head
/// (basis `.`) or the sample (§3.4).
fn glob_page<'a>(value: &'a GlobValue, config: &SearchConfig) -> (Vec<&'a str>, String) {
    let cap = usize_cap(config.glob_max_results);
    let n = value.paths.len();
    if n <= cap {
        return (value.paths.iter().map(String::as_str).collect(), ".".into());
    }
    if !config.sample_over_cap_glob_results {
        let head = value.paths[..cap].iter().map(String::as_str).collect();
        return (head, ".".into());
    }
    let s = sample_across_top_level(&value.paths, cap, &value.root);
    let basis = if s.total == n {
        ".".to_string()
    } else {
        let mut b = format!(
            ", sampled across {} of the {} top-level entries this pattern matched instead of taken in modification-time order.",
            s.shown, s.total
        );
        if s.shown < s.total {
            b.push_str(" Narrow path to inspect a specific subtree.");
        }
        b
    };
    (s.items, basis)
}

/// glob's text (§3.4).
fn render_glob(value: &GlobValue, config: &SearchConfig, spill: Option<&SpillRef>) -> String {
    let n = value.paths.len();
    if n == 0 {
        return "No files found".to_string();
    }
    if !glob_over_cap(value, config) {
        return shown_lines(value.paths.iter().map(String::as_str));
    }
    let (page, basis) = glob_page(value, config);
    let recovery = match spill {
        Some(r) => format!("Full sorted result stored at: {}. {}", r.locator, r.hint),
        None => GLOB_UNSAVED.to_string(),
    };
    format!(
        "{}\n\n(Showing {} of {n} paths{basis} {recovery})",
        shown_lines(page.iter().copied()),
        page.len()
    )
}

fn json_len(v: &Value) -> usize {
    serde_json::to_vec(v).map(|b| b.len()).unwrap_or(0)
}

/// The serialized size of `{"shape":…,"<key>":[items],"truncated":…,"total":…}`
/// from the items' sizes (key order does not change the size).
fn meta_len(shape: &str, key: &str, item_lens: &[usize], truncated: bool, total: usize) -> usize {
    let fixed =
        json_len(&json!({ "shape": shape, key: [], "truncated": truncated, "total": total }));
    fixed + item_lens.iter().sum::<usize>() + item_lens.len().saturating_sub(1)
}

/// Drop trailing items while the meta is over `cap` bytes, never the last
/// one; returns whether anything was dropped.
fn cap_items(
    shape: &str,
    key: &str,
    items: &mut Vec<Value>,
    truncated: bool,
    total: usize,
    cap: u64,
) -> bool {
    let mut lens: Vec<usize> = items.iter().map(json_len).collect();
    let mut dropped = false;
    while lens.len() > 1 && meta_len(shape, key, &lens, truncated || dropped, total) as u64 > cap {
        lens.pop();
        items.pop();
        dropped = true;
    }
    dropped
}

/// grep's presentation meta (§3.8), from the previewed and capped matches.
fn grep_meta(value: &GrepValue, config: &SearchConfig) -> Value {
    let total = value.matches.len();
    let kept = previewed(value, config, usize_cap(config.grep_max_matches));
    let mut files: Vec<Value> = group_by_path(&kept, |m| m.path)
        .iter()
        .map(|(path, ms)| {
            let matches: Vec<Value> = ms
                .iter()
                .map(|m| json!({ "lineNumber": m.line_number, "line": m.line.as_ref() }))
                .collect();
            json!({ "path": path, "matches": matches })
        })
        .collect();
    let truncated = kept.len() < total;
    let dropped = cap_items(
        "matches",
        "files",
        &mut files,
        truncated,
        total,
        config.search_meta_max_bytes,
    );
    json!({ "shape": "matches", "files": files, "truncated": truncated || dropped, "total": total })
}

/// glob's presentation meta (§3.8): the same page the text shows.
fn glob_meta(value: &GlobValue, config: &SearchConfig) -> Value {
    let total = value.paths.len();
    let (page, _) = glob_page(value, config);
    let mut paths: Vec<Value> = page.iter().map(|p| json!(p)).collect();
    let truncated = glob_over_cap(value, config);
    let dropped = cap_items(
        "paths",
        "paths",
        &mut paths,
        truncated,
        total,
        config.search_meta_max_bytes,
    );
    json!({ "shape": "paths", "paths": paths, "truncated": truncated || dropped, "total": total })
}

/// The call title a UI shows for a search call (§3.8):
/// `Glob <pattern>[ in <path>]`, `Grep <pattern>[ in <path>][ (<include>)]`.
/// `None` for other tools or arguments without a string pattern.
pub fn call_title(tool: ToolName, args: &Value) -> Option<String> {
    let s = |k: &str| args.get(k).and_then(Value::as_str);
    let pattern = s("pattern")?;
    let mut title = match tool {
        ToolName::Glob => format!("Glob {pattern}"),
        ToolName::Grep => format!("Grep {pattern}"),
        ToolName::Read | ToolName::Write | ToolName::Edit => return None,
    };
    if let Some(path) = s("path") {
        title.push_str(&format!(" in {path}"));
    }
    if tool == ToolName::Grep {
        if let Some(include) = s("include") {
            title.push_str(&format!(" ({include})"));
        }
    }
    Some(title)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::GrepMatch;

    fn strs(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn sampling_table() {
        // (input, max, root, items, shown, total)
        type Case<'a> = (&'a [&'a str], usize, &'a str, &'a [&'a str], usize, usize);
        let cases: &[Case] = &[
            (
                &["v/a", "v/b", "v/c", "v/d", "src/e", "guide/f"],
                3,
                ".",
                &["v/a", "src/e", "guide/f"],
                3,
                3,
            ),
            (
                &["v/a", "v/b", "v/c", "v/d", "src/e", "guide/f"],
                5,
                ".",
                &["v/a", "v/b", "v/c", "src/e", "guide/f"],
                3,
                3,
            ),
            (
                &["solo/a", "many/b", "many/c", "many/d"],
                3,
                ".",
                &["solo/a", "many/b", "many/c"],
                2,
                2,
            ),
            (&["a/1", "b/1", "c/1", "d/1"], 2, ".", &["a/1", "b/1"], 2, 4),
            (
                &["/out/a", "/out/b", "/away/c", "/away/d"],
                2,
                ".",
                &["/out/a", "/away/c"],
                2,
                2,
            ),
            (&["a.ts", "b.ts", "c.ts"], 2, ".", &["a.ts", "b.ts"], 2, 3),
            (
                &[
                    "workspace/vendor/a.ts",
                    "workspace/vendor/b.ts",
                    "workspace/source/c.ts",
                    "workspace/guides/d.md",
                ],
                3,
                "workspace",
                &[
                    "workspace/vendor/a.ts",
                    "workspace/source/c.ts",
                    "workspace/guides/d.md",
                ],
                3,
                3,
            ),
            (
                &["/vendor/a.ts", "/src/b.ts"],
                2,
                "/",
                &["/vendor/a.ts", "/src/b.ts"],
                2,
                2,
            ),
            (
                &["old\\one", "old\\two", "src/a"],
                2,
                ".",
                &["old\\one", "old\\two"],
                2,
                3,
            ),
            (
                &["./x/a", "./x/b", "./y/c"],
                2,
                ".",
                &["./x/a", "./y/c"],
                2,
                2,
            ),
            (
                &["other/a.ts", "src", "src/b"],
                2,
                "src",
                &["other/a.ts", "src"],
                2,
                3,
            ),
        ];
        for (input, max, root, want, shown, total) in cases {
            let paths = strs(input);
            let s = sample_across_top_level(&paths, *max, root);
            assert_eq!(s.items, want.to_vec(), "{input:?} max {max}");
            assert_eq!((s.shown, s.total), (*shown, *total), "{input:?} max {max}");
        }
    }

    #[test]
    fn sampling_scales_linearly() {
        // 125,000 singleton groups.
        let paths: Vec<String> = (0..125_000).map(|i| format!("g{i}/f")).collect();
        let s = sample_across_top_level(&paths, 100, ".");
        assert_eq!(s.items.len(), 100);
        assert_eq!((s.shown, s.total), (100, 125_000));
        // 12,500 singletons, then one group holding 200,000 paths: the big
        // group fills the page after the singletons run out.
        let mut paths: Vec<String> = (0..12_500).map(|i| format!("s{i}/f")).collect();
        paths.extend((0..200_000).map(|i| format!("big/{i}")));
        let s = sample_across_top_level(&paths, 100_000, ".");
        assert_eq!(s.items.len(), 100_000);
        assert_eq!(s.items[12_500], "big/0");
        assert_eq!(s.items[99_999], "big/87499");
        assert_eq!((s.shown, s.total), (12_501, 12_501));
    }

    #[test]
    fn titles() {
        let t = |tool: &str, v: Value| call_title(tool.parse().unwrap(), &v);
        assert_eq!(t("glob", json!({"pattern": "*.ts"})).unwrap(), "Glob *.ts");
        assert_eq!(
            t("glob", json!({"pattern": "*", "path": "src"})).unwrap(),
            "Glob * in src"
        );
        assert_eq!(
            t(
                "grep",
                json!({"pattern": "x", "path": "src", "include": "*.rs"})
            )
            .unwrap(),
            "Grep x in src (*.rs)"
        );
        assert_eq!(
            t("grep", json!({"pattern": "x", "include": "*.rs"})).unwrap(),
            "Grep x (*.rs)"
        );
        assert_eq!(t("read", json!({"pattern": "x"})), None);
        assert_eq!(t("grep", json!({})), None);
    }

    /// `formatGrepMatches`: each file on its own line, then `Line N: <line>`
    /// per match; groups separated by a blank line.
    fn format_grep_matches(matches: &[GrepMatch]) -> String {
        let shown: Vec<Previewed<'_>> = matches
            .iter()
            .map(|m| Previewed {
                path: &m.path,
                line_number: m.line_number,
                line: Cow::Borrowed(m.line.as_str()),
            })
            .collect();
        format_previewed(&shown)
    }

    #[test]
    fn format_keeps_first_seen_order() {
        let m = |p: &str, n, l: &str| GrepMatch {
            path: p.into(),
            line_number: n,
            line: l.into(),
        };
        let ms = [m("b.ts", 2, "x"), m("a.ts", 1, "y"), m("b.ts", 5, "z")];
        assert_eq!(
            format_grep_matches(&ms),
            "b.ts\nLine 2: x\nLine 5: z\n\na.ts\nLine 1: y"
        );
    }
}
