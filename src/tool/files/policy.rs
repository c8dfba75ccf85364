//! The read-before-write observation policy (`seed-reference.md` §6.4).
//!
//! A session's successful read (any window) records the file's version; a
//! write then replaces only that version and an edit requires it. A read
//! that finds no file records it absent. Successful writes and edits record
//! the new version, so a session can keep editing what it wrote.
//!
//! A call without a session has no owner (§6.4): nothing is recorded, a
//! write may only create, and an edit is refused as unobserved. A caller that
//! wants no policy at all (the bare deployment; the command line without
//! `--session`) builds its tools without it.

use std::sync::Arc;

use crate::cancel::CancelToken;
use crate::fs::{FsError, FsErrorCode, ResolvedPath, Verb, Version, WriteGuard};
use crate::session::{Observation, Sessions};

/// The policy over a store of sessions.
#[derive(Clone, Debug, Default)]
pub(crate) struct ObservationPolicy {
    sessions: Arc<Sessions>,
}

impl ObservationPolicy {
    /// A policy keeping its observations in `sessions`.
    pub(crate) fn new(sessions: Arc<Sessions>) -> ObservationPolicy {
        ObservationPolicy { sessions }
    }

    /// What `owner` observed of `target`, before a `verb` (write, edit);
    /// a wait for the session's lock ends when `cancel` is set.
    fn get(
        &self,
        owner: &str,
        target: &ResolvedPath,
        verb: Verb,
        cancel: &CancelToken,
    ) -> Result<Option<Observation>, FsError> {
        let key = target.key_str();
        self.sessions
            .with_cancel(owner, cancel, |s| s.observations.get(&key).cloned())
            .map_err(|e| match crate::cancel::is_cancelled_error(&e) {
                true => crate::fs::aborted(verb),
                false => self.session_error(target, &e),
            })
    }

    /// The condition of a write: replace the observed version, or create
    /// only. A wait for the session's lock ends when `cancel` is set
    /// (`write aborted`).
    pub(crate) fn write_intent(
        &self,
        owner: Option<&str>,
        target: &ResolvedPath,
        cancel: &CancelToken,
    ) -> Result<WriteGuard, FsError> {
        let Some(owner) = owner else {
            return Ok(WriteGuard::CreateIfAbsent);
        };
        Ok(match self.get(owner, target, Verb::Write, cancel)? {
            Some(Observation::Present { version }) => {
                WriteGuard::ReplaceIfVersion(Version(version))
            }
            _ => WriteGuard::CreateIfAbsent,
        })
    }

    /// The version guard of an edit, or why it may not happen. A wait for
    /// the session's lock ends when `cancel` is set (`edit aborted`).
    pub(crate) fn edit_intent(
        &self,
        owner: Option<&str>,
        target: &ResolvedPath,
        cancel: &CancelToken,
    ) -> Result<Option<Version>, FsError> {
        let p = target.display_str();
        let observed = match owner {
            Some(owner) => self.get(owner, target, Verb::Edit, cancel)?,
            None => None,
        };
        match observed {
            Some(Observation::Present { version }) => Ok(Some(Version(version))),
            Some(Observation::Absent) => Err(FsError::cannot(
                FsErrorCode::NotFound,
                Verb::Edit,
                &p,
                "not found",
            )),
            None => Err(FsError {
                code: FsErrorCode::NotObserved,
                message: format!("edit requires reading \"{p}\" first"),
                path: Some(p),
            }),
        }
    }

    /// Record what a successful tool call saw (`None`: absent).
    pub(crate) fn observe(
        &self,
        owner: Option<&str>,
        target: &ResolvedPath,
        version: Option<&Version>,
    ) -> Result<(), FsError> {
        let Some(owner) = owner else {
            return Ok(());
        };
        let key = target.key_str();
        let obs = match version {
            Some(v) => Observation::Present {
                version: v.0.clone(),
            },
            None => Observation::Absent,
        };
        self.sessions
            .with(owner, |s| {
                s.observations.insert(key, obs);
            })
            .map_err(|e| self.session_error(target, &e))
    }
}

impl ObservationPolicy {
    /// A failure of the session store, reported as one: it names the state
    /// directory (a state-directory problem is never the target's), and the
    /// target only as what the call was about.
    fn session_error(&self, target: &ResolvedPath, e: &std::io::Error) -> FsError {
        let store = match self.sessions.dir() {
            Some(dir) => format!("the session state directory \"{}\"", dir.display()),
            None => "the session state".to_string(),
        };
        FsError {
            code: FsErrorCode::IoError,
            message: format!(
                "cannot use {store} (for \"{}\"): {}",
                target.display_str(),
                crate::fs::io_message(e)
            ),
            path: Some(target.display_str()),
        }
    }
}
