//! File primitives for the file tools (no model concerns).

pub mod literal;
