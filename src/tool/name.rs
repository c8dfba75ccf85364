//! [`ToolName`]: the closed set of tools, parsed once from the name a call
//! arrives with (`contract.md` §5) and carried as a value from there on.
//!
//! What differs between the tools by name alone lives here (the argument
//! naming the path, whether the tool searches, whether it changes files);
//! what a tool does lives with the tool. A sixth tool is a variant here, its
//! definition (`definitions`), its arm in the dispatch and the code that
//! runs it.

use std::fmt;
use std::str::FromStr;

/// One of the five tools, by the name the model calls it by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ToolName {
    /// `read`: a text file's lines, numbered.
    Read,
    /// `write`: create or replace a text file.
    Write,
    /// `edit`: replace literal text in a text file.
    Edit,
    /// `glob`: list files by path pattern (`rg --files`).
    Glob,
    /// `grep`: search contents (`rg --json`).
    Grep,
}

impl ToolName {
    /// Every tool, in system-prompt order (`seed-reference.md` §5): read,
    /// write, edit, glob, grep.
    pub const ALL: [ToolName; 5] = [
        ToolName::Read,
        ToolName::Write,
        ToolName::Edit,
        ToolName::Glob,
        ToolName::Grep,
    ];

    /// The name on the wire: `read`, `write`, `edit`, `glob`, `grep`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ToolName::Read => "read",
            ToolName::Write => "write",
            ToolName::Edit => "edit",
            ToolName::Glob => "glob",
            ToolName::Grep => "grep",
        }
    }

    /// The tool called `name`, spelled exactly (names are case-sensitive:
    /// `Grep` is no tool).
    pub fn parse(name: &str) -> Option<ToolName> {
        ToolName::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// Whether the tool runs a search on the backend (glob, grep).
    pub const fn is_search(self) -> bool {
        matches!(self, ToolName::Glob | ToolName::Grep)
    }

    /// Whether the tool never changes a file (glob, grep, read): what an
    /// MCP client is told as `readOnlyHint`.
    pub const fn is_read_only(self) -> bool {
        !matches!(self, ToolName::Write | ToolName::Edit)
    }

    /// The argument that names the tool's path: `path` for a search,
    /// `file_path` for a file tool (`seed-reference.md` §5).
    pub const fn path_argument(self) -> &'static str {
        if self.is_search() {
            "path"
        } else {
            "file_path"
        }
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is none of the five tools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownTool(pub String);

impl fmt::Display for UnknownTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown tool {:?}", self.0)
    }
}

impl std::error::Error for UnknownTool {}

impl FromStr for ToolName {
    type Err = UnknownTool;
    fn from_str(s: &str) -> Result<ToolName, UnknownTool> {
        ToolName::parse(s).ok_or_else(|| UnknownTool(s.to_string()))
    }
}

impl PartialEq<str> for ToolName {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ToolName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_to_its_tool() {
        for tool in ToolName::ALL {
            assert_eq!(ToolName::parse(tool.as_str()), Some(tool));
            assert_eq!(tool.to_string().parse::<ToolName>(), Ok(tool));
        }
    }

    #[test]
    fn other_names_are_no_tool() {
        for name in ["", "Grep", "GLOB", " read", "read ", "bash", "read_image"] {
            assert_eq!(ToolName::parse(name), None, "{name:?}");
            assert_eq!(name.parse::<ToolName>(), Err(UnknownTool(name.to_string())));
        }
    }

    #[test]
    fn what_the_name_alone_decides() {
        let table = [
            (ToolName::Read, false, true, "file_path"),
            (ToolName::Write, false, false, "file_path"),
            (ToolName::Edit, false, false, "file_path"),
            (ToolName::Glob, true, true, "path"),
            (ToolName::Grep, true, true, "path"),
        ];
        for (tool, search, read_only, arg) in table {
            assert_eq!(tool.is_search(), search, "{tool}");
            assert_eq!(tool.is_read_only(), read_only, "{tool}");
            assert_eq!(tool.path_argument(), arg, "{tool}");
        }
    }
}
