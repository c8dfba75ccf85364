//! Where a direct call's complete result goes when the model sees only part
//! of it: the [`SpillStore`] seam, the [`LocalSpillStore`] laid out as
//! `seed-reference.md` §3.6 describes, and the spill-policy head/tail
//! preview of §3.9.
//!
//! # Reading a reference back
//!
//! The footer of a spilled result tells the model to `read` its locator. The
//! store belongs to the harness, not to the workspace: the local store
//! writes on the local disk whatever filesystem the workspace is on (in
//! memory, an overlay, a remote host). So a store says which paths are its
//! references ([`SpillStore::is_reference`]), and the tools' dispatch runs
//! a `read` of one on the local disk instead of the workspace's filesystem.
//! Only the calling session's own references qualify: the store is not a
//! window onto the rest of the disk.
//!
//! # Platform behavior
//!
//! On Unix the store's directories are created 0700 and its files 0600, so
//! only the owner can read a spilled result. On Windows they get the
//! default permissions, the ACL inherited from the parent directory (the
//! default root is in the user's temp directory, under the user's profile).

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::private::{dir_builder, random_hex, PrivateDir};
use crate::sync::RecoverPoison;

use sha2::{Digest, Sha256};

use crate::fs::resolve::lexical_join;

/// The retrieval hint of the local store (`seed-reference.md` §3.6, literal).
pub(crate) const LOCAL_HINT: &str =
    "Use read with offset/limit, or grep this path to search within it.";

/// What produced a spilled text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpillSource {
    /// The tool's name, e.g. `glob`.
    pub tool_name: String,
    /// The harness's call id, when it has one.
    pub call_id: Option<String>,
    /// What the text is: `result` for the tools' complete results.
    pub label: String,
}

/// Where a spilled text went and how the model can get it back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpillRef {
    /// The locator shown to the model (for the local store: an absolute path).
    pub locator: String,
    /// One sentence telling the model how to retrieve it.
    pub hint: String,
}

/// Saves a text on behalf of a session (`contract.md` §4): where a direct
/// call's complete result goes when the model sees only part of it.
///
/// # Reading a reference back
///
/// The footer of a spilled result tells the model to `read` its locator. The
/// store belongs to the harness, not to the workspace: the local store
/// writes on the local disk whatever filesystem the workspace is on (in
/// memory, an overlay, a remote host). So a store says which paths are its
/// references ([`SpillStore::is_reference`]), and the tools' dispatch runs
/// a `read` of one on the local disk instead of the workspace's filesystem.
/// Only the calling session's own references qualify: the store is not a
/// window onto the rest of the disk.
pub trait SpillStore: Send + Sync {
    /// Save `content` for the session `owner`; `suggested_name` is a file
    /// name such as `glob-results.txt`.
    fn save_text(
        &self,
        owner: &str,
        source: &SpillSource,
        suggested_name: &str,
        content: &str,
    ) -> io::Result<SpillRef>;

    /// Whether `path` is one of the locators this store handed out for
    /// `owner`, whose text a `read` must then get from the local disk
    /// rather than from the workspace's filesystem (see the module docs).
    ///
    /// By default, no path is: a store whose references are not local
    /// files leaves `read` to the workspace.
    fn is_reference(&self, _owner: &str, _path: &Path) -> bool {
        false
    }

    /// Remove a text this store saved for `owner` and nobody will be told
    /// about (the inline cap's replacement did not fit, so the caller keeps
    /// the original text: `seed-reference.md` §3.9). Best effort; the
    /// default keeps it.
    fn discard(&self, _owner: &str, _saved: &SpillRef) {}

    /// Whether the text this store saved for `owner` as `saved` still
    /// holds exactly `content`: then a call whose complete result is that
    /// same text again points at it rather than saving another copy
    /// (`docs/tools.md`, "Spill"). By default no text is known to hold.
    fn holds(&self, _owner: &str, _saved: &SpillRef, _content: &str) -> bool {
        false
    }
}

/// A spill store in a local directory:
/// `<root>/session-<first 12 hex of sha256(owner)>/<12 random hex>-<encoded name>`,
/// directories 0700, files 0600 (on Unix) created exclusively, as
/// `seed-reference.md` §3.6 lays it out.
///
/// # Platform behavior
///
/// On Unix the store's directories are created 0700 and its files 0600, so
/// only the owner can read a spilled result. On Windows they get the
/// default permissions, the ACL inherited from the parent directory (the
/// default root is in the user's temp directory, under the user's profile).
#[derive(Clone, Debug, Default)]
pub struct LocalSpillStore {
    root: Option<PathBuf>,
}

impl LocalSpillStore {
    /// A store under `root`, or, for `None`, under a private `dsh-spill-`
    /// directory created once per process in the temp dir. A relative root
    /// resolves against the process's current directory.
    pub fn new(root: Option<PathBuf>) -> io::Result<LocalSpillStore> {
        let root = match root {
            Some(r) => Some(std::path::absolute(r)?),
            None => None,
        };
        Ok(LocalSpillStore { root })
    }

    fn root(&self) -> io::Result<PathBuf> {
        match &self.root {
            Some(r) => Ok(r.clone()),
            None => private_root(),
        }
    }

    /// The root, if anything can be in it yet (the private root is created
    /// by the first save, never by a question).
    fn existing_root(&self) -> Option<PathBuf> {
        match &self.root {
            Some(r) => Some(r.clone()),
            None => PRIVATE_ROOT.lock().recover_poison().clone(),
        }
    }
}

impl SpillStore for LocalSpillStore {
    fn save_text(
        &self,
        owner: &str,
        _source: &SpillSource,
        suggested_name: &str,
        content: &str,
    ) -> io::Result<SpillRef> {
        // A session's directory is the user's alone, or nothing is written
        // in it (`private.rs`): a directory another user made, or a link
        // planted there, is refused, and the result is not saved.
        let dir = PrivateDir::open(&self.root()?.join(session_dir(owner)), false)?;
        let suffix = format!("-{}", encode_segment(suggested_name));
        let (name, mut file) = dir.create_new("", &suffix)?;
        let path = dir.path().join(name);
        file.write_all(content.as_bytes())?;
        file.sync_all()?;
        Ok(SpillRef {
            locator: path.to_string_lossy().into_owned(),
            hint: LOCAL_HINT.to_string(),
        })
    }

    /// An absolute path naming a file directly in `owner`'s session
    /// directory, after `.` and `..` are applied (so no locator-shaped path
    /// climbs out of it). A relative path is always the workspace's.
    fn is_reference(&self, owner: &str, path: &Path) -> bool {
        if !path.is_absolute() {
            return false;
        }
        let Some(root) = self.existing_root() else {
            return false;
        };
        let dir = lexical_join(&root, Path::new(&session_dir(owner)));
        let path = lexical_join(Path::new("/"), path);
        path.parent() == Some(dir.as_path())
    }

    fn discard(&self, owner: &str, saved: &SpillRef) {
        let path = Path::new(&saved.locator);
        if self.is_reference(owner, path) {
            let _ = std::fs::remove_file(path);
        }
    }

    /// The file is still a regular file of the session's directory with
    /// exactly those bytes (read back and compared: whoever can write the
    /// directory may have changed it).
    fn holds(&self, owner: &str, saved: &SpillRef, content: &str) -> bool {
        let path = Path::new(&saved.locator);
        if !self.is_reference(owner, path) {
            return false;
        }
        let same_size = std::fs::symlink_metadata(path)
            .is_ok_and(|m| m.is_file() && m.len() == content.len() as u64);
        same_size && std::fs::read(path).is_ok_and(|b| b == content.as_bytes())
    }
}

/// `session-<first 12 hex of sha256(session id)>`.
pub(crate) fn session_dir(owner: &str) -> String {
    let digest = Sha256::digest(owner.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("session-{}", &hex[..12])
}

/// spill-local's name encoder: works on UTF-16 code units, keeps
/// `[A-Za-z0-9._-]` and writes every other unit as `~XXXX` (uppercase hex).
/// `""` becomes `~`, and the path tokens `.` and `..` are escaped whole, so
/// no encoded name can traverse (`seed-reference.md` §3.6).
pub(crate) fn encode_segment(name: &str) -> String {
    if name.is_empty() {
        return "~".to_string();
    }
    if name == "." || name == ".." {
        return "~002E".repeat(name.len());
    }
    let mut out = String::with_capacity(name.len());
    for unit in name.encode_utf16() {
        match char::from_u32(u32::from(unit)) {
            Some(c) if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') => out.push(c),
            _ => out.push_str(&format!("~{unit:04X}")),
        }
    }
    out
}

/// The per-process private root, once created. A failure is not kept:
/// the next save tries again (a temp directory missing for a while must
/// not stop a long-running server's spill for the rest of its life).
static PRIVATE_ROOT: Mutex<Option<PathBuf>> = Mutex::new(None);

/// The per-process private root, created on first use.
fn private_root() -> io::Result<PathBuf> {
    let mut root = PRIVATE_ROOT.lock().recover_poison();
    if let Some(dir) = &*root {
        return Ok(dir.clone());
    }
    let dir = create_private_dir(&std::env::temp_dir())?;
    *root = Some(dir.clone());
    Ok(dir)
}

/// A new directory `dsh-spill-<random>` of `parent`, created exclusively
/// (0700).
fn create_private_dir(parent: &Path) -> io::Result<PathBuf> {
    let builder = dir_builder(false);
    loop {
        let dir = parent.join(format!("dsh-spill-{}", random_hex(6)?));
        match builder.create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// The first at most `max` bytes of `s`, cut on a character boundary.
pub(crate) fn utf8_head(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The last at most `max` bytes of `s`, cut on a character boundary.
pub(crate) fn utf8_tail(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// spill-policy (`seed-reference.md` §3.9): when `text` is larger than
/// `max_inline` UTF-8 bytes, save it whole as `<tool>.txt` and return
/// `<head><tail>\n\n(Omitted <N> bytes. Full formatted result stored at:
/// <locator>. <hint>)`, within `max_inline` bytes. `None` keeps the text:
/// it fits, there is no owner or store, the save failed, or the replacement
/// would not fit either.
pub(crate) fn apply_inline_cap(
    text: &str,
    max_inline: u64,
    tool: &str,
    owner: Option<&str>,
    store: Option<&dyn SpillStore>,
) -> Option<String> {
    let total = text.len();
    if total as u64 <= max_inline {
        return None;
    }
    let (owner, store) = (owner?, store?);
    // A notice with an empty locator is the shortest there can be: when
    // even it does not fit, the replacement cannot, the original text stays
    // (§3.9 "a replacement that would itself exceed the cap") and nothing
    // is saved that no text would point to.
    let shortest = format!("(Omitted {total} bytes. Full formatted result stored at: . )").len();
    if shortest as u64 + 2 > max_inline {
        return None;
    }
    let source = SpillSource {
        tool_name: tool.to_string(),
        call_id: None,
        label: "result".to_string(),
    };
    let saved = store
        .save_text(owner, &source, &format!("{tool}.txt"), text)
        .ok()?;
    let notice = |omitted: usize| {
        format!(
            "(Omitted {omitted} bytes. Full formatted result stored at: {}. {})",
            saved.locator, saved.hint
        )
    };
    // The budget reserves the notice as long as it can get (N = the whole
    // text) plus the blank line before it.
    let reserve = notice(total).len() as u64 + 2;
    let Some(budget) = max_inline.checked_sub(reserve) else {
        store.discard(owner, &saved);
        return None;
    };
    let budget = budget as usize;
    let head = utf8_head(text, budget.div_ceil(2));
    let tail = utf8_tail(text, budget / 2);
    let omitted = total - head.len() - tail.len();
    let out = format!("{head}{tail}\n\n{}", notice(omitted));
    if out.len() as u64 > max_inline {
        store.discard(owner, &saved);
        return None;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #[cfg(unix)]
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn encoder() {
        assert_eq!(encode_segment("glob-results.txt"), "glob-results.txt");
        assert_eq!(encode_segment(""), "~");
        assert_eq!(encode_segment("."), "~002E");
        assert_eq!(encode_segment(".."), "~002E~002E");
        assert_eq!(encode_segment("a/b~c"), "a~002Fb~007Ec");
        assert_eq!(encode_segment("../x"), "..~002Fx");
        assert_eq!(encode_segment("é😀"), "~00E9~D83D~DE00");
    }

    #[test]
    fn session_dir_is_a_stable_hash() {
        // sha256("session-1") = 84097828fc31…, checked with `sha256sum`.
        assert_eq!(session_dir("session-1"), "session-84097828fc31");
        assert_eq!(session_dir("x"), session_dir("x"));
    }

    #[test]
    fn local_store_layout_and_modes() {
        let tmp = tempfile::tempdir().unwrap();
        let store = LocalSpillStore::new(Some(tmp.path().join("spill"))).unwrap();
        let src = SpillSource {
            tool_name: "glob".into(),
            call_id: None,
            label: "result".into(),
        };
        let a = store
            .save_text("s1", &src, "glob-results.txt", "a\nb")
            .unwrap();
        let b = store
            .save_text("s1", &src, "glob-results.txt", "c")
            .unwrap();
        assert_ne!(a.locator, b.locator);
        assert_eq!(a.hint, LOCAL_HINT);
        let p = Path::new(&a.locator);
        assert_eq!(std::fs::read_to_string(p).unwrap(), "a\nb");
        let name = p.file_name().unwrap().to_str().unwrap();
        assert_eq!(name.len(), 12 + 1 + "glob-results.txt".len());
        assert!(name[..12].bytes().all(|c| c.is_ascii_hexdigit()));
        assert!(name.ends_with("-glob-results.txt"));
        let dir = p.parent().unwrap();
        assert_eq!(dir, tmp.path().join("spill").join(session_dir("s1")));
        #[cfg(unix)]
        {
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(dir), 0o700);
            assert_eq!(mode(p), 0o600);
        }
        // Traversal-shaped names stay inside the session directory.
        let c = store.save_text("s1", &src, "../../x", "t").unwrap();
        assert_eq!(Path::new(&c.locator).parent().unwrap(), dir);
    }

    /// A session directory that is not the user's alone is refused and
    /// nothing is written in it (`private.rs`): another user's, one
    /// writable by others, a link to elsewhere. Another user's is made
    /// with `chown`, as root (the suite runs as root in CI).
    #[cfg(unix)]
    #[test]
    fn a_session_directory_not_private_is_refused() {
        use std::os::unix::fs::{chown, symlink};
        assert!(
            rustix::process::geteuid().is_root(),
            "this test makes a directory of uid 65534 with chown: run it as root"
        );
        let src = SpillSource {
            tool_name: "glob".into(),
            call_id: None,
            label: "result".into(),
        };
        type Spoil = fn(&Path, &Path);
        let cases: [(&str, Spoil, &str); 3] = [
            (
                "another user's",
                |dir, _| chown(dir, Some(65534), Some(65534)).unwrap(),
                "owned by uid 65534, not by this user",
            ),
            (
                "writable by others",
                |dir, _| {
                    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap()
                },
                "writable by group or others (mode 777)",
            ),
            (
                "a link",
                |dir, elsewhere| {
                    std::fs::remove_dir(dir).unwrap();
                    symlink(elsewhere, dir).unwrap();
                },
                "a symbolic link, not a directory",
            ),
        ];
        for (name, spoil, why) in cases {
            let tmp = tempfile::tempdir().unwrap();
            let root = tmp.path().join("spill");
            let dir = root.join(session_dir("s1"));
            let elsewhere = tmp.path().join("elsewhere");
            for d in [&dir, &elsewhere] {
                dir_builder(true).create(d).unwrap();
            }
            spoil(&dir, &elsewhere);
            let store = LocalSpillStore::new(Some(root)).unwrap();
            let e = store
                .save_text("s1", &src, "glob-results.txt", "a\nb")
                .expect_err(name);
            assert!(e.to_string().contains(why), "{name}: {e}");
            for d in [&dir, &elsewhere] {
                let written = std::fs::read_dir(d).map_or(0, |r| r.count());
                assert_eq!(written, 0, "{name}: {}", d.display());
            }
        }
    }

    #[test]
    fn references_are_the_sessions_own_files() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("spill");
        let store = LocalSpillStore::new(Some(root.clone())).unwrap();
        let src = SpillSource {
            tool_name: "glob".into(),
            call_id: None,
            label: "result".into(),
        };
        let saved = store
            .save_text("s1", &src, "glob-results.txt", "x")
            .unwrap();
        let locator = Path::new(&saved.locator);
        assert!(store.is_reference("s1", locator));
        // Another session's, the directories themselves, a relative path, a
        // climb out of the session directory: not references.
        assert!(!store.is_reference("s2", locator));
        assert!(!store.is_reference("s1", locator.parent().unwrap()));
        assert!(!store.is_reference("s1", &root));
        assert!(!store.is_reference("s1", Path::new("glob-results.txt")));
        let climb = locator.parent().unwrap().join("../../outside.txt");
        assert!(!store.is_reference("s1", &climb));
        // `.` and `..` that stay inside are the same file.
        let dotted = locator
            .parent()
            .unwrap()
            .join(".")
            .join(locator.file_name().unwrap());
        assert!(store.is_reference("s1", &dotted));
    }

    #[test]
    fn private_root_is_private() {
        let store = LocalSpillStore::new(None).unwrap();
        let src = SpillSource {
            tool_name: "grep".into(),
            call_id: None,
            label: "result".into(),
        };
        let r = store.save_text("s", &src, "grep.txt", "x").unwrap();
        let root = Path::new(&r.locator).parent().unwrap().parent().unwrap();
        let base = root.file_name().unwrap().to_str().unwrap();
        assert!(base.starts_with("dsh-spill-"), "{base}");
        #[cfg(unix)]
        assert_eq!(
            std::fs::metadata(root).unwrap().permissions().mode() & 0o777,
            0o700
        );
    }

    /// `/proc` takes no new directories, even from root.
    #[cfg(target_os = "linux")]
    #[test]
    fn unwritable_root_fails_the_save() {
        let store = LocalSpillStore::new(Some("/proc/dsh-spill-nope".into())).unwrap();
        let src = SpillSource {
            tool_name: "grep".into(),
            call_id: None,
            label: "result".into(),
        };
        assert!(store.save_text("s", &src, "x", "y").is_err());
    }

    #[test]
    fn utf8_cuts() {
        assert_eq!(utf8_head("aéb", 2), "a");
        assert_eq!(utf8_head("aéb", 3), "aé");
        assert_eq!(utf8_tail("aéb", 2), "b");
        assert_eq!(utf8_tail("a😀", 3), "");
        assert_eq!(utf8_tail("a😀", 4), "😀");
    }

    struct Fixed;
    impl SpillStore for Fixed {
        fn save_text(&self, _: &str, _: &SpillSource, name: &str, _: &str) -> io::Result<SpillRef> {
            Ok(SpillRef {
                locator: format!("/spill/{name}"),
                hint: "Hint.".into(),
            })
        }
    }

    #[test]
    fn inline_cap() {
        let text = "0123456789".repeat(10);
        assert_eq!(
            apply_inline_cap(&text, 100, "grep", Some("s"), Some(&Fixed)),
            None
        );
        assert_eq!(
            apply_inline_cap(&text, 99, "grep", None, Some(&Fixed)),
            None
        );
        assert_eq!(apply_inline_cap(&text, 99, "grep", Some("s"), None), None);
        // Notice with N=100: "(Omitted 100 bytes. Full formatted result
        // stored at: /spill/grep.txt. Hint.)" is 76 bytes; +2 = 78; budget
        // 90-78 = 12: head 6, tail 6, omitted 88.
        let out = apply_inline_cap(&text, 90, "grep", Some("s"), Some(&Fixed)).unwrap();
        assert_eq!(
            out,
            "012345456789\n\n(Omitted 88 bytes. Full formatted result stored at: /spill/grep.txt. Hint.)"
        );
        assert!(out.len() <= 90);
        // A cap smaller than the notice keeps the original text.
        assert_eq!(
            apply_inline_cap(&text, 50, "grep", Some("s"), Some(&Fixed)),
            None
        );
    }
}
