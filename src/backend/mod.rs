//! The seam between a request and its results: [`SearchBackend`], with the
//! in-process [`NativeBackend`] and the [`RgBackend`] that spawns a real `rg`.
//!
//! Both answer the same question the same way: what would
//! `rg <the argv of contract.md §2>`, run in the request's workdir with stdin
//! `/dev/null`, print and exit with. Anything above this layer (the tools, the
//! CLI, the conformance suite) holds a `&dyn SearchBackend` and cannot tell the
//! two apart.

mod native;
pub mod rg;

use std::path::Path;

use crate::outcome::{GlobResults, GrepResults, Outcome};
use crate::request::{GlobRequest, GrepRequest};

pub use native::{
    set_helper_delay, set_search_threads, set_search_threads_from_env, Engine, EngineBuilder,
    NativeBackend,
};
pub use rg::RgBackend;
// The index plans its prefilter from the tree the matcher is built from.
pub(crate) use native::parse_pattern;
pub(crate) use native::{grep_kept, Keeper, Outside, Walked};

/// Runs the two fixed invocations. Object safe: tools hold `&dyn SearchBackend`.
pub trait SearchBackend: Send + Sync {
    /// A short name for logs and test labels: `native`, `rg` or `index`.
    /// Nothing routes on it: what a caller must know is a method of its
    /// own ([`SearchBackend::searches_local_disk`]).
    fn name(&self) -> &'static str;

    /// Whether this backend searches the local disk whatever the
    /// workspace, as a process run on the host does (the rg backend). The
    /// spill store keeps its texts on the local disk: the tools grep one
    /// with this backend when it does, and with an engine of their own on
    /// the local disk when it searches a filesystem it was built over (the
    /// native engine, the index).
    fn searches_local_disk(&self) -> bool {
        true
    }

    /// List files as `rg --files … --sort=modified` would (`contract.md` §2).
    fn glob(&self, req: &GlobRequest) -> Outcome<GlobResults>;

    /// Search contents as `rg --json --regexp=…` would (`contract.md` §2).
    fn grep(&self, req: &GrepRequest) -> Outcome<GrepResults>;
}

/// The closed set of backends the CLI and the tools can be asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackendKind {
    /// The in-process engine (the default; needs no `rg` binary).
    #[default]
    Native,
    /// A real `rg` process.
    Rg,
}

/// The backend for `kind`: [`NativeBackend::new`], or an [`RgBackend`]
/// that runs `rg` (the binary at that path; `None`: the first on `PATH`).
pub fn make_backend(kind: BackendKind, rg: Option<&Path>) -> std::sync::Arc<dyn SearchBackend> {
    match (kind, rg) {
        (BackendKind::Native, _) => std::sync::Arc::new(NativeBackend::new()),
        (BackendKind::Rg, Some(path)) => std::sync::Arc::new(RgBackend::with_path(path)),
        (BackendKind::Rg, None) => std::sync::Arc::new(RgBackend::new()),
    }
}

#[cfg(test)]
mod tests {
    /// The index is a layer above the backend (`docs/engine.md`, the
    /// layers): it searches through the backend's engine, and the backend
    /// names nothing of it, not even the type that says which path
    /// answered (`index::Answer`, which the tools ask the index's backend
    /// for). Until the layers are crates, this reading of the sources
    /// keeps the arrow one way.
    #[test]
    fn the_backend_names_nothing_of_the_index() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/backend");
        let mut files = vec![dir.clone()];
        let mut read = 0;
        // Built, so that this test's own text does not hold them.
        let mut names: Vec<String> = ["crate::", "super::", "dsh_search::"]
            .iter()
            .flat_map(|m| ["index", "Index"].map(|i| format!("{m}{i}")))
            .collect();
        names.push(["Ans", "wer"].concat());
        while let Some(p) = files.pop() {
            if p.is_dir() {
                files.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            read += 1;
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for name in &names {
                    assert!(
                        !code.contains(name.as_str()),
                        "{}:{}: the backend names the index: {line}",
                        p.display(),
                        n + 1
                    );
                }
            }
        }
        assert!(read >= 3, "read {read} files under {}", dir.display());
    }

    /// The trait holds what every backend answers, and nothing that only
    /// one layer above it needs: which path of a live index answered is
    /// asked of the index's own backend (`IndexedBackend::glob_answered`),
    /// not of the trait every backend implements. A method added here is
    /// a change of the layers (`docs/engine.md`), and this list with it.
    #[test]
    fn the_trait_holds_only_what_every_backend_answers() {
        let text = include_str!("mod.rs");
        let start = text.find("pub trait SearchBackend").expect("the trait");
        let body = &text[start..];
        let body = &body[..body.find("\n}\n").expect("the trait's end")];
        let methods: Vec<&str> = body
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("fn "))
            .map(|l| l.split(['(', '<']).next().unwrap_or(l))
            .collect();
        assert_eq!(methods, ["name", "searches_local_disk", "glob", "grep"]);
    }
}
