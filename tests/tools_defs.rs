//! The tool definitions against the literal texts of `seed-reference.md` §5,
//! copied from the spec, not produced by the code.

use dsh_search::config::Config;
use dsh_search::tool::definitions;

const SCHEMAS: &[(&str, &str)] = &[
    (
        "glob",
        r#"{"type":"object","properties":{"pattern":{"type":"string","description":"Glob pattern to match file paths against (e.g. \"**/*.ts\", \"src/**/*.test.js\"). A pattern with no \"/\" matches the basename at any depth, so \"*\" and \"*.ts\" both search the whole tree; include a separator to anchor the depth."},"path":{"type":"string","description":"Directory to search in. Defaults to the session workspace; a relative path resolves against it."}},"required":["pattern"]}"#,
    ),
    (
        "grep",
        r#"{"type":"object","properties":{"pattern":{"type":"string","description":"Regular expression to search for (ripgrep syntax)."},"path":{"type":"string","description":"File or directory to search. Defaults to the session workspace; a relative path resolves against it."},"include":{"type":"string","description":"One glob filter for which files to search (e.g. \"*.ts\", \"*.{js,jsx}\"). Not a list; negation is not supported."}},"required":["pattern"]}"#,
    ),
    (
        "read",
        r#"{"type":"object","properties":{"file_path":{"type":"string","description":"Path to read, resolved by the filesystem backend."},"offset":{"type":"number","description":"1-based first line to return. Defaults to 1."},"limit":{"type":"number","description":"Maximum number of lines to return. Defaults to <L>."}},"required":["file_path"]}"#,
    ),
    (
        "write",
        r#"{"type":"object","properties":{"file_path":{"type":"string","description":"Path to write, resolved by the filesystem backend."},"content":{"type":"string","description":"Full UTF-8 text content to write."}},"required":["file_path","content"]}"#,
    ),
    (
        "edit",
        r#"{"type":"object","properties":{"file_path":{"type":"string","description":"Path to edit, resolved by the filesystem backend."},"old_string":{"type":"string","description":"Literal text to replace. Must match exactly."},"new_string":{"type":"string","description":"Literal replacement text. Use an empty string to delete the match."},"replace_all":{"type":"boolean","description":"Replace all matches. Defaults to false; when false, old_string must appear exactly once."}},"required":["file_path","old_string","new_string"]}"#,
    ),
];
const GLOB_PROMPT_SAMPLED: &str = r#"Use the glob tool — not shell find — to discover files by path pattern. A pattern with no "/" matches basenames at any depth, so "*" matches every file in the tree rather than its top level. Results are files only, never directories, and include hidden and ignored files: a result that fits comes back in modification-time order, while a larger one is sampled across top-level entries, so it spans the tree instead of one subtree."#;
const GLOB_PROMPT_HEAD: &str = r#"Use the glob tool — not shell find — to discover files by path pattern. A pattern with no "/" matches basenames at any depth, so "*" matches every file in the tree rather than its top level. Results are files only, never directories, and include hidden and ignored files: a result that fits comes back in modification-time order, while a larger one keeps the modification-time-ordered head."#;
const GREP_PROMPT: &str = r#"Use the grep tool — not shell grep or rg — to search file contents. Use read on a matched file when you need surrounding context."#;
const READ_PROMPT: &str = r#"Use the read tool — not shell commands like cat — to inspect text files. Results include line numbers. Use offset and limit to continue reading large files."#;
const WRITE_PROMPT: &str = r#"Use the write tool to create files or completely replace file contents. Existing files are overwritten, so read an existing file first (the default fs-observation-policy requires it) and prefer edit for targeted changes."#;
const EDIT_PROMPT: &str = r#"Use the edit tool for targeted changes to existing UTF-8 text files. It replaces literal old_string with new_string; by default old_string must appear exactly once. If old_string appears multiple times, provide a more specific old_string or set replace_all to true. Read the file first (the default fs-observation-policy requires it), unless you just created or edited it in this session."#;
const DESC0: &str = r#"Find files whose paths match a glob pattern. Returns matching file paths — never directories — including hidden and ignored files (VCS metadata directories are excluded). Up to <M> paths come back in modification-time order; a larger result instead returns <M> paths sampled across top-level entries, says so, and reports where the complete sorted list was saved. This tool does not enumerate directory entries."#;
const DESC1: &str = r#"Find files whose paths match a glob pattern. Returns matching file paths — never directories — including hidden and ignored files (VCS metadata directories are excluded). Up to <M> paths come back in modification-time order; a larger result returns the first <M> paths in modification-time order, says so, and reports where the complete sorted list was saved. This tool does not enumerate directory entries."#;
const DESC2: &str = r#"Search file contents with a ripgrep regular expression. Returns matching lines with line numbers, grouped by file. Returns the first <K> matches inline; a capped result reports where the complete match list was saved. Use read on a matched file for surrounding context."#;

fn config(sample: bool) -> Config {
    let mut c = Config::default();
    c.search.sample_over_cap_glob_results = sample;
    c
}

#[test]
fn schemas_are_byte_exact() {
    let c = config(false);
    for (name, want) in SCHEMAS {
        let def = definitions::find(&c, name).unwrap();
        // The read schema's `<L>` is readLimit.
        let want = want.replace("<L>", "2000");
        assert_eq!(def.schema_json(), want, "{name}");
    }
    let mut c = config(false);
    c.fs.read_limit = 77;
    assert!(definitions::read(&c)
        .schema_json()
        .contains("Defaults to 77."));
}

#[test]
fn descriptions_interpolate_the_caps() {
    let mut c = config(true);
    c.search.glob_max_results = 100;
    c.search.grep_max_matches = 250;
    assert_eq!(
        definitions::glob(&c).description,
        DESC0.replace("<M>", "100")
    );
    assert!(definitions::glob(&c)
        .description
        .contains("sampled across top-level entries"));
    let c = config(false);
    assert_eq!(
        definitions::glob(&c).description,
        DESC1.replace("<M>", "100")
    );
    assert!(definitions::glob(&c)
        .description
        .contains("a larger result returns the first 100 paths in modification-time order"));
    assert_eq!(
        definitions::grep(&c).description,
        DESC2.replace("<K>", "250")
    );
    assert_eq!(
        definitions::read(&c).description,
        "Read a UTF-8 text file and return line-numbered content."
    );
    assert_eq!(
        definitions::write(&c).description,
        "Create or fully replace a UTF-8 text file."
    );
    assert_eq!(
        definitions::edit(&c).description,
        "Edit an existing UTF-8 text file by replacing literal text."
    );
}

#[test]
fn prompt_sections() {
    let sampled = config(true);
    let head = config(false);
    assert_eq!(definitions::glob(&sampled).prompt.text, GLOB_PROMPT_SAMPLED);
    assert_eq!(definitions::glob(&head).prompt.text, GLOB_PROMPT_HEAD);
    assert!(GLOB_PROMPT_HEAD.contains("a larger one keeps the modification-time-ordered head"));
    let want = [
        READ_PROMPT,
        WRITE_PROMPT,
        EDIT_PROMPT,
        GLOB_PROMPT_SAMPLED,
        GREP_PROMPT,
    ]
    .join("\n\n");
    assert_eq!(definitions::system_prompt(&sampled), want);
    let prompt = definitions::system_prompt(&sampled);
    assert!(prompt.contains("Use the glob tool") && prompt.contains("Use the grep tool"));
    assert!(!prompt.contains("sampled across top-level directories"));
    let orders: Vec<(String, u32)> = definitions::all(&head)
        .into_iter()
        .map(|d| (d.prompt.name, d.prompt.order))
        .collect();
    assert_eq!(
        orders,
        [
            ("tool:read", 100),
            ("tool:write", 101),
            ("tool:edit", 102),
            ("tool:glob", 103),
            ("tool:grep", 104)
        ]
        .map(|(n, o)| (n.to_string(), o))
    );
}

#[test]
fn timeouts_on_the_search_tools_only() {
    let mut c = config(false);
    assert_eq!(definitions::glob(&c).timeout_ms, Some(30_000));
    c.search.timeout_ms = 5000;
    assert_eq!(definitions::glob(&c).timeout_ms, Some(5000));
    assert_eq!(definitions::grep(&c).timeout_ms, Some(5000));
    assert_eq!(definitions::read(&c).timeout_ms, None);
}

#[test]
fn definitions_json_parses_and_keeps_schema_order() {
    let text = definitions::to_json(&config(false));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read", "write", "edit", "glob", "grep"]);
    assert!(text.contains(&format!("\"parameters\":{}", SCHEMAS[0].1)));
}
