//! `rg --files --glob=<p> --sort=modified --no-ignore --hidden <VCS
//! excludes> [-- <path>]` (`main.rs: files`, `hiargs.rs: sort`).

use crate::fs::FsHints;
use crate::outcome::{GlobResults, Outcome, Status};
use crate::request::GlobRequest;

use super::messages::{dir_error, Messages};
use super::overrides::GlobFilter;
use super::parallel_walk;
use super::paths::Root;
use super::{canonical_workdir, exit_code, nul_launch_failure, Budget, Engine};

/// One walk, whatever the root: walkdir stats a root following links
/// (`DirEntry::from_path` with `follow_root_links`), reports an error
/// there as `IO error for operation on <root>`, yields a root that is not a
/// directory as the one entry (never filtered at depth 0), and walks a
/// directory (`parallel_walk`).
pub(crate) fn run<F: FsHints>(fs: &F, engine: &Engine, req: &GlobRequest) -> Outcome<GlobResults> {
    let fail = |why: String| Outcome {
        status: Status::LaunchFailed(why),
        stderr: Vec::new(),
        results: GlobResults::default(),
    };
    if let Some(name) = req.nul_argument() {
        return fail(nul_launch_failure(name));
    }
    let real_workdir = match canonical_workdir(fs, &req.workdir) {
        Ok(real_workdir) => real_workdir,
        Err(why) => return fail(why),
    };
    let budget = Budget::new(req.raw_budget, req.cancel.clone());
    let mut msgs = Messages::default();
    let root = Root::new(&real_workdir, req.path.as_deref());
    let filter = match GlobFilter::new(&real_workdir, &req.pattern, &root) {
        Ok(f) => f,
        Err(e) => {
            // `rg: {err:#}` for an argument error, exit 2, nothing listed.
            msgs.error(&e);
            return Outcome {
                status: Status::Exited(2),
                stderr: msgs.lines,
                results: GlobResults::default(),
            };
        }
    };
    let files = match super::stat_root(fs, &root) {
        Err(e) => {
            msgs.io_error(&e, || dir_error(&root, root.walk_path(), &e));
            Vec::new()
        }
        Ok(m) if m.kind.is_dir() => {
            let (files, errors) = parallel_walk::walk(fs, engine.pool(), &root, &filter, &budget);
            for (e, unavailable) in &errors {
                if *unavailable {
                    msgs.unavailable(e);
                } else {
                    msgs.error(e);
                }
            }
            files.into_iter().map(|l| l.printed).collect()
        }
        Ok(_) => {
            let printed = root.display(root.walk_path());
            if budget.spend(printed.len() as u64 + 1) {
                vec![printed]
            } else {
                Vec::new()
            }
        }
    };
    let matched = !files.is_empty();
    Outcome {
        status: budget.status(exit_code(matched, msgs.errored)),
        stderr: msgs.into_lines(),
        results: GlobResults { files },
    }
}
