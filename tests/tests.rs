//! The one integration test binary.
mod files;
