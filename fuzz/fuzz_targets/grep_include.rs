//! grep's `include` glob: any include compiles or is refused as rg refuses
//! it (exit 2), and never panics or overflows the stack.
#![no_main]

use std::sync::Arc;

use dsh_search::{GrepRequest, MemFs, NativeBackend, SearchBackend, Status};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(include) = std::str::from_utf8(data) else {
        return;
    };
    let fs = MemFs::new();
    fs.create_dir_all("/w/src").unwrap();
    fs.write_file("/w/src/main.rs", "fn main() {}\n").unwrap();
    fs.write_file("/w/notes.txt", "main\n").unwrap();
    let backend = NativeBackend::on(Arc::new(fs));
    let mut req = GrepRequest::new("main", "/w");
    req.include = Some(include.to_string());
    let outcome = backend.grep(&req);
    // rg's exit codes, or no launch at all for a NUL (no process can
    // take one in an argument: `Status::LaunchFailed`).
    match outcome.status {
        Status::Exited(0..=2) => {}
        Status::LaunchFailed(_) if include.contains('\0') => {}
        other => panic!("{include:?}: {other:?}"),
    }
});
