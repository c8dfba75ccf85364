//! glob's pattern parser: any pattern compiles or is refused as rg refuses
//! it (exit 2), on a small in-memory tree, and never panics or overflows
//! the stack (deep braces compile on a thread sized for them).
#![no_main]

use std::sync::Arc;

use dsh_search::{GlobRequest, MemFs, NativeBackend, SearchBackend, Status};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(pattern) = std::str::from_utf8(data) else {
        return;
    };
    let fs = MemFs::new();
    fs.create_dir_all("/w/src").unwrap();
    fs.write_file("/w/src/main.rs", "fn main() {}\n").unwrap();
    fs.write_file("/w/a b.txt", "x\n").unwrap();
    let backend = NativeBackend::on(Arc::new(fs));
    let outcome = backend.glob(&GlobRequest::new(pattern, "/w"));
    // rg's exit codes, or no launch at all for a NUL (no process can
    // take one in an argument: `Status::LaunchFailed`).
    match outcome.status {
        Status::Exited(0..=2) => {}
        Status::LaunchFailed(_) if pattern.contains('\0') => {}
        other => panic!("{pattern:?}: {other:?}"),
    }
});
