//! `rg --files --glob=<p> --sort=modified --no-ignore --hidden <VCS
//! excludes> [-- <path>]` (`main.rs: files`, `hiargs.rs: sort` L762).

use std::cmp::Ordering;
use std::time::SystemTime;

use crate::outcome::{GlobResults, Outcome, Status};
use crate::request::GlobRequest;

use super::messages::{walk_error, Messages};
use super::parwalk;
use super::paths::Root;
use super::walk::{glob_walker, is_haystack, GlobFilter};
use super::{canonical_workdir, check_arg, exit_code, Budget};

pub(crate) fn run(req: &GlobRequest) -> Outcome<GlobResults> {
    let fail = |why: String| Outcome {
        status: Status::LaunchFailed(why),
        stderr: Vec::new(),
        results: GlobResults::default(),
    };
    if let Err(why) =
        check_arg("pattern", Some(&req.pattern)).and(check_arg("path", req.path.as_deref()))
    {
        return fail(why);
    }
    let wc = match canonical_workdir(&req.workdir) {
        Ok(wc) => wc,
        Err(why) => return fail(why),
    };
    let budget = Budget::new(req.raw_budget, req.cancel.clone());
    let mut msgs = Messages::default();
    let root = Root::new(&wc, req.path.as_deref());
    let filter = match GlobFilter::new(&wc, &req.pattern, root.walk_path()) {
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
    if let Some((files, errors)) = parwalk::walk(&root, &filter, &budget) {
        for e in &errors {
            msgs.error(e);
        }
        let matched = !files.is_empty();
        return Outcome {
            status: budget.status(exit_code(matched, msgs.errored)),
            stderr: msgs.lines,
            results: GlobResults {
                files: files.into_iter().map(|l| l.printed).collect(),
            },
        };
    }
    // The sort forces the sequential walker (`hiargs.rs` L168); used here
    // for a root that is not a readable directory.
    let walker = glob_walker(root.walk_path(), &wc, filter.into_full()).build();
    let mut listed: Vec<(Vec<u8>, Option<SystemTime>)> = Vec::new();
    for result in walker {
        if budget.stopped() {
            break;
        }
        let dent = match result {
            Ok(dent) => dent,
            Err(err) => {
                msgs.error(&walk_error(&err, &root));
                continue;
            }
        };
        if is_haystack(&dent).is_none() {
            continue;
        }
        let printed = root.display(dent.path());
        // `path().metadata()` follows symlinks; the walked path names the same
        // file as the printed one resolved against the workdir.
        let mtime = dent.path().metadata().and_then(|m| m.modified()).ok();
        if !budget.spend(printed.len() as u64 + 1) {
            break;
        }
        listed.push((printed, mtime));
    }
    // One global stable sort; unreadable metadata last (`hiargs.rs: sort`).
    listed.sort_by(|a, b| match (a.1, b.1) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    });
    let matched = !listed.is_empty();
    Outcome {
        status: budget.status(exit_code(matched, msgs.errored)),
        stderr: msgs.lines,
        results: GlobResults {
            files: listed.into_iter().map(|(p, _)| p).collect(),
        },
    }
}
