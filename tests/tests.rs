//! The one integration test binary.

// The file tools through the library on a real disk: read windows, the
// observation policy, LocalFs concurrency and aliases.
mod files;
// The file tools through the binary: sessions across processes, a writer
// killed mid-write.
mod files_cli;
/// The rg backend and the CLI raw mode against a real rg.
mod rg_backend;
