//! The one integration test binary.

/// The rg backend and the CLI raw mode against a real rg.
mod rg_backend;
