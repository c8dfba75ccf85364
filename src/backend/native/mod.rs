//! The in-process engine.

use crate::backend::SearchBackend;
use crate::outcome::{GlobResults, GrepResults, Outcome};
use crate::request::{GlobRequest, GrepRequest};

/// The in-process engine built on ripgrep's crates.
#[derive(Clone, Debug, Default)]
pub struct NativeBackend {}

impl NativeBackend {
    /// A new native backend.
    pub fn new() -> NativeBackend {
        NativeBackend {}
    }
}

impl SearchBackend for NativeBackend {
    fn name(&self) -> &'static str {
        "native"
    }

    fn glob(&self, _req: &GlobRequest) -> Outcome<GlobResults> {
        unimplemented!("native glob")
    }

    fn grep(&self, _req: &GrepRequest) -> Outcome<GrepResults> {
        unimplemented!("native grep")
    }
}
