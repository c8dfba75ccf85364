//! `dsh-search --overlay DIR changes [--diff]` (`contract.md` §10): the
//! files an overlay directory changed, as `A path` / `M path` lines with
//! paths relative to the workdir (escaped as the tools show names), sorted,
//! or as a unified diff against the workdir. Exit status 0, or 2 when the overlay cannot be read.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use dsh_search::fs::{Change, LocalFs, OverlayFs};

use super::ChangesArgs;
use crate::setup::{fail, Common};

/// `dsh-search changes`.
pub(crate) fn run(common: &Common, args: &ChangesArgs) -> u8 {
    let Some(dir) = &common.overlay else {
        return fail("changes needs --overlay DIR, the overlay directory to read");
    };
    let workdir = match common.workdir() {
        Ok(w) => w,
        Err(e) => return fail(format!("cannot read the current directory: {e}")),
    };
    let fs = match OverlayFs::on_disk(Arc::new(LocalFs::new()), &workdir, dir) {
        Ok(fs) => fs,
        Err(e) => return fail(e),
    };
    let text = if args.diff {
        fs.diff()
    } else {
        fs.changes().map(|c| listing(&c, fs.lower_root()))
    };
    match text {
        Ok(text) => {
            let mut out = std::io::stdout().lock();
            // A closed stdout is not an error worth a message.
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
            0
        }
        Err(e) => fail(e),
    }
}

/// One `A path` / `M path` line per change.
fn listing(changes: &[Change], root: &Path) -> String {
    let mut out = String::new();
    for c in changes {
        out.push(c.kind.letter());
        out.push(' ');
        out.push_str(&c.shown(root));
        out.push('\n');
    }
    out
}
