//! The one integration test binary.
mod guard;
