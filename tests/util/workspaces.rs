//! The filesystems every conformance case runs the native engine on
//! (`docs/contract.md` §10): the local disk through its fast path and
//! through the portable path, an in-memory copy of the tree, and the tree
//! through an overlay with an empty upper layer (in memory). Each must
//! equal rg on the tree on disk, at the raw level and at the tool level.

use std::path::Path;
use std::sync::Arc;

use dsh_search::fs::{DynFileSystem, FileSystem, FsHints, FsWrite, LocalFs, MemFs, OverlayFs};
use dsh_search::NativeBackend;

/// One way to hold the tree: a label, the native engine over it, and the
/// same filesystem for the file tools.
pub struct Way {
    pub label: &'static str,
    pub backend: Arc<NativeBackendDyn>,
    pub fs: Arc<dyn DynFileSystem>,
    /// The live index `backend` answers from, if any: the tools over it
    /// are [`dsh_search::Tools::indexed`], which say which path answered.
    pub index: Option<dsh_search::Index>,
}

/// The native engine over any of the filesystems, as a trait object.
pub type NativeBackendDyn = dyn dsh_search::SearchBackend;

fn way<F: FsHints + FsWrite>(label: &'static str, fs: Arc<F>) -> Way {
    Way {
        label,
        backend: Arc::new(NativeBackend::on(fs.clone())),
        fs,
        index: None,
    }
}

/// The tree at `root` loaded into memory, with the global excludes file
/// the disk's rg sees from `cwd` (the test's controlled home).
pub fn in_memory(root: &Path, cwd: &Path) -> MemFs {
    let mem = MemFs::load(root).expect("the tree loads into memory");
    match local().git_global_excludes(cwd) {
        Some((path, bytes)) => mem.with_git_global_excludes(path, bytes),
        None => mem,
    }
}

/// The local disk with the cases' global excludes (the file rg finds
/// through their home: `rg::Env::local_fs`).
fn local() -> LocalFs {
    super::rg::env().map_or_else(LocalFs::new, super::rg::Env::local_fs)
}

/// The native engine on each filesystem, for the tree at `root` searched
/// from `cwd`.
pub fn ways(root: &Path, cwd: &Path) -> Vec<Way> {
    let disk = Arc::new(local());
    // Windows: the local disk (always the portable path there). The
    // in-memory filesystem and the overlay hold `/`-separated Unix paths
    // (`docs/contract.md` §10), not drive paths.
    if cfg!(windows) {
        let _ = (root, cwd);
        return vec![way("native", disk)];
    }
    let mem = Arc::new(in_memory(root, cwd));
    let overlay = OverlayFs::new(disk.clone(), root, Arc::new(MemFs::new()), root)
        .expect("an overlay over the tree");
    let mut ways = vec![
        way("native", disk.clone()),
        way("native (portable)", Arc::new(local().portable())),
        way("native (in memory)", mem),
        way("native (empty overlay)", Arc::new(overlay)),
    ];
    if cfg!(target_os = "linux") {
        ways.push(indexed(root, disk));
    }
    ways
}

/// The live index of the tree (`docs/index.md`), built before the call
/// (a guard against a hang, not a timed wait): the call is answered from
/// its mirror and prefilter.
fn indexed(root: &Path, disk: Arc<LocalFs>) -> Way {
    let index = dsh_search::Index::start_on(disk.clone(), root).expect("the tree can be indexed");
    assert!(
        index.wait_ready(std::time::Duration::from_secs(60)),
        "{:?}",
        index.status()
    );
    Way {
        label: "native (indexed)",
        backend: Arc::new(index.backend()),
        fs: disk,
        index: Some(index),
    }
}

/// The native engine over SFTP to the shared test `sshd`, on the same
/// tree (the server sees the test's disk as the remote host's).
#[cfg(all(unix, feature = "sftp"))]
pub fn over_sftp() -> Vec<Way> {
    vec![way("native (sftp)", super::sshd::shared_fs())]
}
