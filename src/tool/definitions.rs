//! The five tool definitions as data: name, description, parameter schema
//! and system-prompt section, with the exact texts of `seed-reference.md` §5.
//!
//! Schemas are written out by hand from `Param` lists rather than through
//! `serde_json::Value`, whose maps sort their keys: the seed's key order
//! (`type`, `properties`, `required`; `type`, `description`) is part of the
//! bytes the model receives.

use crate::config::Config;
use crate::tool::args::{JsonType, Param};
use crate::tool::ToolName;

/// A section of the system prompt contributed by a tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptSection {
    /// `tool:<name>`.
    pub name: String,
    /// Sections are assembled by ascending order (read 100 … grep 104).
    pub order: u32,
    /// The section's text.
    pub text: String,
}

/// One tool as the model is told about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolDefinition {
    /// The tool.
    pub name: ToolName,
    /// The description.
    pub description: String,
    /// The parameters, in declaration order.
    pub params: Vec<Param>,
    /// The tool timeout the definition declares (glob and grep only).
    pub timeout_ms: Option<u64>,
    /// The system-prompt section.
    pub prompt: PromptSection,
}

impl ToolDefinition {
    /// The parameter schema as JSON text, keys in the seed's order.
    pub fn schema_json(&self) -> String {
        let props: Vec<String> = self
            .params
            .iter()
            .map(|p| {
                format!(
                    "{}:{{\"type\":\"{}\",\"description\":{}}}",
                    json_str(p.name),
                    p.ty.keyword(),
                    json_str(&p.description)
                )
            })
            .collect();
        let required: Vec<String> = self
            .params
            .iter()
            .filter(|p| p.required)
            .map(|p| json_str(p.name))
            .collect();
        format!(
            "{{\"type\":\"object\",\"properties\":{{{}}},\"required\":[{}]}}",
            props.join(","),
            required.join(",")
        )
    }

    /// The whole definition as one JSON object: name, description,
    /// parameters, timeoutMs (when declared), prompt.
    pub fn to_json(&self) -> String {
        let timeout = match self.timeout_ms {
            Some(ms) => format!(",\"timeoutMs\":{ms}"),
            None => String::new(),
        };
        format!(
            "{{\"name\":{},\"description\":{},\"parameters\":{}{timeout},\"prompt\":{{\"name\":{},\"order\":{},\"text\":{}}}}}",
            json_str(self.name.as_str()),
            json_str(&self.description),
            self.schema_json(),
            json_str(&self.prompt.name),
            self.prompt.order,
            json_str(&self.prompt.text),
        )
    }
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("a string always serializes")
}

fn param(name: &'static str, ty: JsonType, required: bool, description: &str) -> Param {
    Param {
        name,
        ty,
        required,
        description: description.to_string(),
    }
}

fn section(name: ToolName, order: u32, text: &str) -> PromptSection {
    PromptSection {
        name: format!("tool:{name}"),
        order,
        text: text.to_string(),
    }
}

const GLOB_PROMPT_HEAD: &str = "Use the glob tool \u{2014} not shell find \u{2014} to discover files by path pattern. A pattern with no \"/\" matches basenames at any depth, so \"*\" matches every file in the tree rather than its top level. Results are files only, never directories, and include hidden and ignored files: a result that fits comes back in modification-time order, while a larger one ";

const GLOB_DESCRIPTION_HEAD: &str = "Find files whose paths match a glob pattern. Returns matching file paths \u{2014} never directories \u{2014} including hidden and ignored files (VCS metadata directories are excluded). Up to <M> paths come back in modification-time order; a larger result ";

/// glob's definition (`seed-reference.md` §5), for the sampling mode and
/// `globMaxResults` of `config`.
pub fn glob(config: &Config) -> ToolDefinition {
    let s = &config.search;
    let (prompt_tail, desc_tail) = if s.sample_over_cap_glob_results {
        (
            "is sampled across top-level entries, so it spans the tree instead of one subtree.",
            "instead returns <M> paths sampled across top-level entries, says so, and reports where the complete sorted list was saved. This tool does not enumerate directory entries.",
        )
    } else {
        (
            "keeps the modification-time-ordered head.",
            "returns the first <M> paths in modification-time order, says so, and reports where the complete sorted list was saved. This tool does not enumerate directory entries.",
        )
    };
    let m = s.glob_max_results.to_string();
    ToolDefinition {
        name: ToolName::Glob,
        description: format!("{GLOB_DESCRIPTION_HEAD}{desc_tail}").replace("<M>", &m),
        params: vec![
            param("pattern", JsonType::String, true, "Glob pattern to match file paths against (e.g. \"**/*.ts\", \"src/**/*.test.js\"). A pattern with no \"/\" matches the basename at any depth, so \"*\" and \"*.ts\" both search the whole tree; include a separator to anchor the depth."),
            param("path", JsonType::String, false, "Directory to search in. Defaults to the session workspace; a relative path resolves against it."),
        ],
        timeout_ms: Some(s.timeout_ms),
        prompt: section(ToolName::Glob, 103, &format!("{GLOB_PROMPT_HEAD}{prompt_tail}")),
    }
}

/// grep's definition, for `grepMaxMatches` of `config`.
pub fn grep(config: &Config) -> ToolDefinition {
    let s = &config.search;
    ToolDefinition {
        name: ToolName::Grep,
        description: format!(
            "Search file contents with a ripgrep regular expression. Returns matching lines with line numbers, grouped by file. Returns the first {} matches inline; a capped result reports where the complete match list was saved. Use read on a matched file for surrounding context.",
            s.grep_max_matches
        ),
        params: vec![
            param("pattern", JsonType::String, true, "Regular expression to search for (ripgrep syntax)."),
            param("path", JsonType::String, false, "File or directory to search. Defaults to the session workspace; a relative path resolves against it."),
            param("include", JsonType::String, false, "One glob filter for which files to search (e.g. \"*.ts\", \"*.{js,jsx}\"). Not a list; negation is not supported."),
        ],
        timeout_ms: Some(s.timeout_ms),
        prompt: section(ToolName::Grep, 104, "Use the grep tool \u{2014} not shell grep or rg \u{2014} to search file contents. Use read on a matched file when you need surrounding context."),
    }
}

/// read's definition, for `readLimit` of `config`.
pub fn read(config: &Config) -> ToolDefinition {
    ToolDefinition {
        name: ToolName::Read,
        description: "Read a UTF-8 text file and return line-numbered content.".to_string(),
        params: vec![
            param("file_path", JsonType::String, true, "Path to read, resolved by the filesystem backend."),
            param("offset", JsonType::Number, false, "1-based first line to return. Defaults to 1."),
            param("limit", JsonType::Number, false, &format!("Maximum number of lines to return. Defaults to {}.", config.fs.read_limit)),
        ],
        timeout_ms: None,
        prompt: section(ToolName::Read, 100, "Use the read tool \u{2014} not shell commands like cat \u{2014} to inspect text files. Results include line numbers. Use offset and limit to continue reading large files."),
    }
}

/// write's definition.
pub fn write(_config: &Config) -> ToolDefinition {
    ToolDefinition {
        name: ToolName::Write,
        description: "Create or fully replace a UTF-8 text file.".to_string(),
        params: vec![
            param("file_path", JsonType::String, true, "Path to write, resolved by the filesystem backend."),
            param("content", JsonType::String, true, "Full UTF-8 text content to write."),
        ],
        timeout_ms: None,
        prompt: section(ToolName::Write, 101, "Use the write tool to create files or completely replace file contents. Existing files are overwritten, so read an existing file first (the default fs-observation-policy requires it) and prefer edit for targeted changes."),
    }
}

/// edit's definition.
pub fn edit(_config: &Config) -> ToolDefinition {
    ToolDefinition {
        name: ToolName::Edit,
        description: "Edit an existing UTF-8 text file by replacing literal text.".to_string(),
        params: vec![
            param("file_path", JsonType::String, true, "Path to edit, resolved by the filesystem backend."),
            param("old_string", JsonType::String, true, "Literal text to replace. Must match exactly."),
            param("new_string", JsonType::String, true, "Literal replacement text. Use an empty string to delete the match."),
            param("replace_all", JsonType::Boolean, false, "Replace all matches. Defaults to false; when false, old_string must appear exactly once."),
        ],
        timeout_ms: None,
        prompt: section(ToolName::Edit, 102, "Use the edit tool for targeted changes to existing UTF-8 text files. It replaces literal old_string with new_string; by default old_string must appear exactly once. If old_string appears multiple times, provide a more specific old_string or set replace_all to true. Read the file first (the default fs-observation-policy requires it), unless you just created or edited it in this session."),
    }
}

/// `tool`'s definition for `config`.
pub fn of(tool: ToolName, config: &Config) -> ToolDefinition {
    match tool {
        ToolName::Read => read(config),
        ToolName::Write => write(config),
        ToolName::Edit => edit(config),
        ToolName::Glob => glob(config),
        ToolName::Grep => grep(config),
    }
}

/// All five definitions, in system-prompt order (read, write, edit, glob,
/// grep: [`ToolName::ALL`]).
pub fn all(config: &Config) -> Vec<ToolDefinition> {
    ToolName::ALL.iter().map(|&t| of(t, config)).collect()
}

/// The definition named `name`; `None` for a name that is no tool.
pub fn find(config: &Config, name: &str) -> Option<ToolDefinition> {
    ToolName::parse(name).map(|t| of(t, config))
}

/// The tools' system-prompt sections by ascending order, separated by a
/// blank line.
pub fn system_prompt(config: &Config) -> String {
    let mut defs = all(config);
    defs.sort_by_key(|d| d.prompt.order);
    defs.iter()
        .map(|d| d.prompt.text.as_str())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// `dsh-search definitions`: a JSON array, one definition per line.
pub fn to_json(config: &Config) -> String {
    let items: Vec<String> = all(config).iter().map(ToolDefinition::to_json).collect();
    format!("[\n{}\n]", items.join(",\n"))
}
