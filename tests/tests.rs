//! The one integration test binary.

/// The search-path guard: its rules, allow cases, counters and messages.
mod guard;

/// The rg backend and the CLI raw mode against a real rg.
mod rg_backend;
