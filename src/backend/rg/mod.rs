//! The backend that spawns a real `rg`.

use crate::backend::SearchBackend;
use crate::outcome::{GlobResults, GrepResults, Outcome};
use crate::request::{GlobRequest, GrepRequest};

/// Spawns a real `rg` with the argv of `contract.md` §2.
#[derive(Clone, Debug, Default)]
pub struct RgBackend {}

impl SearchBackend for RgBackend {
    fn name(&self) -> &'static str {
        "rg"
    }

    fn glob(&self, _req: &GlobRequest) -> Outcome<GlobResults> {
        unimplemented!("rg glob")
    }

    fn grep(&self, _req: &GrepRequest) -> Outcome<GrepResults> {
        unimplemented!("rg grep")
    }
}
