//! The benchmark workloads: the same calls on both backends.

use std::path::{Path, PathBuf};

use crate::bench::corpus;

/// One call of a workload, in tool terms.
#[derive(Clone, Debug)]
pub(crate) enum Call {
    /// `glob {pattern, path?}`.
    Glob {
        /// The glob.
        pattern: String,
        /// The search path, relative to the tree.
        path: Option<String>,
    },
    /// `grep {pattern, path?, include?}`.
    Grep {
        /// The regex.
        pattern: String,
        /// The search path, relative to the tree.
        path: Option<String>,
        /// The include glob.
        include: Option<String>,
    },
}

impl Call {
    /// The tool's JSON arguments.
    pub(crate) fn args(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        let (pattern, path, include) = match self {
            Call::Glob { pattern, path } => (pattern, path, &None),
            Call::Grep {
                pattern,
                path,
                include,
            } => (pattern, path, include),
        };
        m.insert("pattern".into(), pattern.clone().into());
        if let Some(p) = path {
            m.insert("path".into(), p.clone().into());
        }
        if let Some(i) = include {
            m.insert("include".into(), i.clone().into());
        }
        serde_json::Value::Object(m)
    }

    /// `glob` or `grep`.
    pub(crate) fn tool(&self) -> &'static str {
        match self {
            Call::Glob { .. } => "glob",
            Call::Grep { .. } => "grep",
        }
    }
}

/// A named call on a tree.
#[derive(Clone, Debug)]
pub(crate) struct Workload {
    /// Short label for tables and the chart.
    pub(crate) name: String,
    /// The tree (the workdir of every call).
    pub(crate) tree: PathBuf,
    /// The call.
    pub(crate) call: Call,
}

impl Workload {
    /// Whether this is the tiny-workspace workload (the same call on every
    /// tree, so measured once).
    pub(crate) fn is_tiny(&self) -> bool {
        self.name.starts_with(TINY)
    }
}

const TINY: &str = "grep tiny workspace";

/// The standard workloads on `tree`, and the tiny-workspace one on `tiny`.
///
/// `generated` says the tree comes from [`corpus::generate`], whose word
/// frequencies are known; for other trees (the Linux tree) the words are
/// chosen for similar match counts there.
pub(crate) fn standard(tree: &Path, tiny: &Path, generated: bool) -> Vec<Workload> {
    let sub = subpath(tree);
    let (common, classes) = if generated {
        ("queue_lock", r"0x[0-9a-f]{4}\)")
    } else {
        ("EXPORT_SYMBOL_GPL", r"[A-Z]{3,}_[0-9]+\(")
    };
    let over = "return";
    let glob = |pattern: &str, path: Option<&str>| Call::Glob {
        pattern: pattern.into(),
        path: path.map(Into::into),
    };
    let grep = |pattern: &str, include: Option<&str>| Call::Grep {
        pattern: pattern.into(),
        path: None,
        include: include.map(Into::into),
    };
    let w = |name: &str, tree: &Path, call: Call| Workload {
        name: name.into(),
        tree: tree.into(),
        call,
    };
    vec![
        w("glob *", tree, glob("*", None)),
        w("glob *.c", tree, glob("*.c", None)),
        w(
            &format!("glob **/*.h in {sub}"),
            tree,
            glob("**/*.h", Some(&sub)),
        ),
        w("grep rare literal", tree, grep(corpus::RARE_LITERAL, None)),
        w(
            &format!("grep common word ({common})"),
            tree,
            grep(common, None),
        ),
        w("grep regex with classes", tree, grep(classes, None)),
        w("grep with include *.h", tree, grep(r"\bint\b", Some("*.h"))),
        w("grep over the raw budget (return)", tree, grep(over, None)),
        w(
            &format!("{TINY} (100 files, {})", corpus::IDENTIFIER),
            tiny,
            grep(corpus::IDENTIFIER, None),
        ),
    ]
}

/// `include` when the tree has it (the Linux tree), else its first
/// subdirectory by name.
fn subpath(tree: &Path) -> String {
    if tree.join("include").is_dir() {
        return "include".into();
    }
    let mut dirs: Vec<String> = std::fs::read_dir(tree)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    dirs.sort();
    dirs.into_iter().next().unwrap_or_else(|| ".".into())
}
