//! The one integration test binary.

// The search tools over a scripted backend: ladder, rendering, spill, meta,
// dispatch order, timeout.
mod tools_fake;

// The tool definitions (names, descriptions, schemas, prompts) as data.
mod tools_defs;

// The glob and grep tools on both real backends: seed integration cases,
// hostile inputs, timeout and cancellation.
mod tools;
