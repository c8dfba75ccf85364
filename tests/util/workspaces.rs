//! The filesystems every conformance case runs the native engine on
//! (`docs/contract.md` §10): the local disk through its fast path and
//! through the portable path, an in-memory copy of the tree, and the tree
//! through an overlay with an empty upper layer. Each must equal rg on the
//! tree on disk.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use dsh_search::fs::{LocalFs, OverlayFs};
use dsh_search::{NativeBackend, SearchBackend};

/// An empty directory, the upper layer of the overlays on disk.
fn empty_upper() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("dsh-conf-upper-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("the overlay's upper directory");
        dir
    })
}

/// The native engine on each filesystem, labelled, for the tree at `root`.
pub fn natives(root: &Path) -> Vec<(&'static str, Arc<dyn SearchBackend>)> {
    let disk = Arc::new(LocalFs::new());
    let overlay = OverlayFs::new(disk.clone(), root, disk.clone(), empty_upper())
        .expect("an overlay over the tree");
    vec![
        ("native", Arc::new(NativeBackend::on(disk))),
        (
            "native (portable)",
            Arc::new(NativeBackend::on(Arc::new(LocalFs::new().portable()))),
        ),
        (
            "native (empty overlay)",
            Arc::new(NativeBackend::on(Arc::new(overlay))),
        ),
    ]
}
