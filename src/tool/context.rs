//! The context a harness passes with every tool call.

use std::path::PathBuf;

use crate::cancel::CancelToken;

/// Who is calling, from where (`contract.md` §5).
#[derive(Clone, Debug)]
pub struct CallContext {
    /// The session's working directory: rg's cwd, and the base of relative
    /// paths for every tool.
    pub workdir: PathBuf,
    /// The session id: owner of spilled results, of read observations and of
    /// the guard's counters. `None`: no session.
    pub session_id: Option<String>,
    /// A direct (top-level) model call, as opposed to a nested dispatch from
    /// inside a program. Only direct calls spill and get presentation meta.
    pub direct: bool,
    /// The caller's cancellation.
    pub cancel: CancelToken,
}

impl CallContext {
    /// A direct call in `workdir` with no session.
    pub fn new(workdir: impl Into<PathBuf>) -> CallContext {
        CallContext {
            workdir: workdir.into(),
            session_id: None,
            direct: true,
            cancel: CancelToken::new(),
        }
    }

    /// Set the session id.
    pub fn session(mut self, id: impl Into<String>) -> CallContext {
        self.session_id = Some(id.into());
        self
    }

    /// Mark the call as nested (not direct).
    pub fn nested(mut self) -> CallContext {
        self.direct = false;
        self
    }
}
