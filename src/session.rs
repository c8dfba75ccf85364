//! Per-session state ([`Sessions`]): what each session last read of each
//! file (the observation policy, `contract.md` §6) and the guard's
//! zero-result counters, in memory or in a state directory shared by
//! processes.

use crate::sync::RecoverPoison;
use std::collections::{BTreeMap, HashMap};
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Write};
#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::cancel::CancelToken;

/// What a session last saw of one file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub(crate) enum Observation {
    /// The file existed at this version.
    Present {
        /// The version token.
        version: String,
    },
    /// A read found no file.
    Absent,
}

/// The state of one session.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionState {
    /// Observations keyed by target key.
    #[serde(default)]
    pub(crate) observations: BTreeMap<String, Observation>,
    /// The guard's consecutive zero-result grep counts, keyed by target.
    #[serde(default)]
    pub(crate) zero_results: BTreeMap<String, u32>,
}

/// Where session states live.
///
/// Per-session state: the read observations of the file tools
/// (`seed-reference.md` §6.4) and the guard's zero-result counters.
///
/// A [`Sessions`] store holds every session's state in memory for
/// the life of a process. The command line runs one tool call per process,
/// so it uses a persistent store instead: one JSON file per session in a
/// state directory outside the workspace, updated under an exclusive `flock`
/// and replaced atomically, so that `read` then `edit` as two commands
/// behave like two calls of one session.
///
/// # Platform behavior
///
/// On Unix the state directory is created 0700, its files 0600, and the
/// lock is an exclusive `flock` on `<session>.lock`. On Windows the
/// directory and files get the default permissions (the ACL inherited from
/// the parent directory; the default state directory is under the user's
/// profile), and the lock is the lock file held open without sharing: a
/// second process retries until the first closes it, which the system does
/// for a process that dies.
#[derive(Debug)]
pub struct Sessions {
    memory: Mutex<HashMap<String, SessionState>>,
    dir: Option<PathBuf>,
}

impl Default for Sessions {
    fn default() -> Sessions {
        Sessions::in_memory()
    }
}

impl Sessions {
    /// States held in this process's memory only.
    pub fn in_memory() -> Sessions {
        Sessions {
            memory: Mutex::new(HashMap::new()),
            dir: None,
        }
    }

    /// States persisted in `dir` (created 0700 on Unix when needed), one
    /// file per session, shared by every process that uses the same
    /// directory.
    pub fn persistent(dir: impl Into<PathBuf>) -> Sessions {
        Sessions {
            memory: Mutex::new(HashMap::new()),
            dir: Some(dir.into()),
        }
    }

    /// The persistent store's directory, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Run `f` on the state of session `id`, atomically with respect to
    /// every other caller of the same store (threads, and for a persistent
    /// store, processes). A persistent state is written back only when `f`
    /// changed it.
    pub(crate) fn with<R>(
        &self,
        id: &str,
        f: impl FnOnce(&mut SessionState) -> R,
    ) -> io::Result<R> {
        self.with_cancel(id, &CancelToken::new(), f)
    }

    /// [`Sessions::with`], with the wait for another process's lock of the
    /// session ended by `cancel`: it then fails with the cancellation
    /// error ([`crate::cancel`]) and `f` does not run. For what comes
    /// before a mutation; recording what a mutation did waits (`with`).
    pub(crate) fn with_cancel<R>(
        &self,
        id: &str,
        cancel: &CancelToken,
        f: impl FnOnce(&mut SessionState) -> R,
    ) -> io::Result<R> {
        let mut memory = self.memory.lock().recover_poison();
        let Some(dir) = &self.dir else {
            return Ok(f(memory.entry(id.to_string()).or_default()));
        };
        let sessions = dir.join("sessions");
        let mut builder = DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        builder.mode(0o700);
        builder.create(&sessions)?;
        let name = file_stem(id);
        let _lock = lock(&sessions.join(format!("{name}.lock")), cancel)?;
        let path = sessions.join(format!("{name}.json"));
        let mut state = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice::<StateFile>(&bytes)
                .map(|f| f.state)
                .map_err(|e| {
                    io::Error::other(format!("corrupt session state {}: {e}", path.display()))
                })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => SessionState::default(),
            Err(e) => return Err(e),
        };
        let before = state.clone();
        let out = f(&mut state);
        if state != before {
            let file = StateFile {
                session: id.to_string(),
                state: state.clone(),
            };
            write_atomic(&sessions, &path, &serde_json::to_vec(&file)?)?;
        }
        memory.insert(id.to_string(), state);
        Ok(out)
    }
}

/// The on-disk form: the session id is kept for whoever inspects the file.
#[derive(Serialize, Deserialize)]
struct StateFile {
    session: String,
    #[serde(flatten)]
    state: SessionState,
}

/// The file name of a session: the first 32 hex digits of sha256(id), so
/// any id (slashes, dots, NULs) is a safe name.
fn file_stem(id: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(id.as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// Wait for the exclusive lock of the session whose lock file is `path`;
/// it is held until the returned file is dropped.
///
/// # Platform behavior
///
/// On Unix, an exclusive `flock` on the file (created 0600). On Windows,
/// the file opened with no sharing at all: while one process holds it
/// open, another's open fails with a sharing violation, and it retries
/// every `LOCK_RETRY`.
fn lock(path: &Path, cancel: &CancelToken) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use rustix::fs::FlockOperation;
        let file = options.mode(0o600).open(path)?;
        // Polled, not blocking: a blocking flock restarts after a signal
        // handler runs and would never see the cancellation.
        loop {
            if cancel.is_cancelled() {
                return Err(crate::cancel::cancelled_error());
            }
            match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => return Ok(file),
                Err(rustix::io::Errno::WOULDBLOCK) | Err(rustix::io::Errno::INTR) => {
                    std::thread::sleep(LOCK_POLL);
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt as _;
        // See: https://learn.microsoft.com/windows/win32/debug/system-error-codes--0-499-
        const ERROR_SHARING_VIOLATION: i32 = 32;
        options.share_mode(0);
        loop {
            if cancel.is_cancelled() {
                return Err(crate::cancel::cancelled_error());
            }
            match options.open(path) {
                Err(e) if e.raw_os_error() == Some(ERROR_SHARING_VIOLATION) => {
                    std::thread::sleep(LOCK_RETRY);
                }
                other => return other,
            }
        }
    }
    #[cfg(not(any(unix, windows)))]
    {
        let _ = cancel;
        // No file lock here: the store is safe for one process only.
        options.open(path)
    }
}

/// How long a Unix process waits before it tries a held lock again.
#[cfg(unix)]
const LOCK_POLL: std::time::Duration = std::time::Duration::from_millis(5);

/// How long a Windows process waits before it tries a held lock again.
#[cfg(windows)]
const LOCK_RETRY: std::time::Duration = std::time::Duration::from_millis(5);

fn write_atomic(dir: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = dir.join(format!(".{}.tmp", std::process::id()));
    let result = (|| {
        let mut options = OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        options.mode(0o600);
        let mut file = options.open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn persistent_state_survives_a_new_store() {
        let dir = tempfile::tempdir().unwrap();
        let a = Sessions::persistent(dir.path());
        a.with("s1", |s| {
            s.observations.insert(
                "/k".into(),
                Observation::Present {
                    version: "v".into(),
                },
            );
            s.zero_results.insert("/t".into(), 3);
        })
        .unwrap();
        let b = Sessions::persistent(dir.path());
        let got = b.with("s1", |s| s.clone()).unwrap();
        assert_eq!(
            got.observations.get("/k"),
            Some(&Observation::Present {
                version: "v".into()
            })
        );
        assert_eq!(got.zero_results.get("/t"), Some(&3));
        assert_eq!(
            b.with("s2", |s| s.clone()).unwrap(),
            SessionState::default()
        );
    }

    #[test]
    fn in_memory_sessions_are_isolated() {
        let s = Sessions::in_memory();
        s.with("a", |st| {
            st.observations.insert("/k".into(), Observation::Absent)
        })
        .unwrap();
        assert!(s.with("b", |st| st.observations.is_empty()).unwrap());
        assert!(!s.with("a", |st| st.observations.is_empty()).unwrap());
    }
}
