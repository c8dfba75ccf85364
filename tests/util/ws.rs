//! The workspace fixture: a temp dir holding a workdir and a state
//! directory, files put in the workdir, and the `dsh-search` binary as a
//! [`Command`] run on it with a controlled environment.
//!
//! ```text
//! <base>/            the temp dir (canonical), removed when the Ws drops
//!        ws/         the workdir (`root`), created
//!        state/      DSH_SEARCH_STATE_DIR (`state`), created by the binary
//!        home/       HOME and XDG_CONFIG_HOME's parent, empty
//! ```
//!
//! A test builds what it needs beside the workdir under `base` (an
//! overlay directory, a second state directory, a file outside).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use dsh_search::tool::CallContext;

/// The files of [`Ws::large`] besides `wide.txt`.
pub const LARGE_FILES: usize = 20_000;

/// The lines of [`Ws::large`]'s `wide.txt`.
pub const WIDE_LINES: usize = 250;

/// A workdir and a state directory in a temp dir.
pub struct Ws {
    _tmp: tempfile::TempDir,
    /// The temp dir, canonical.
    pub base: PathBuf,
    /// The workdir, `<base>/ws`.
    pub root: PathBuf,
    /// The binary's state directory, `<base>/state` (not created).
    pub state: PathBuf,
    /// The binary's `HOME`, `<base>/home` (empty).
    pub home: PathBuf,
}

impl Default for Ws {
    fn default() -> Ws {
        Ws::new()
    }
}

impl Ws {
    /// An empty workdir.
    pub fn new() -> Ws {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("ws");
        let home = base.join("home");
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(&home).unwrap();
        Ws {
            _tmp: tmp,
            state: base.join("state"),
            base,
            root,
            home,
        }
    }

    /// A workdir of `count` files `f<k>.txt`, each holding `needle<k>`.
    pub fn needles(count: usize) -> Ws {
        let ws = Ws::new();
        for k in 0..count {
            ws.file(&format!("f{k}.txt"), format!("needle{k}\n"));
        }
        ws
    }

    /// A workdir far past every cap of the tools (the servers' bounded
    /// results, `contract.md` §12): [`LARGE_FILES`] files
    /// `d<dd>/file-<fff>.txt` in 100 directories, each holding three lines
    /// with `needle`, and `wide.txt`, [`WIDE_LINES`] lines of 1,000 bytes
    /// holding `wide`: one file whose grep group alone is over
    /// `searchMetaMaxBytes` (65,536), which the seed's meta cap never drops
    /// (`seed-reference.md` §3.8).
    pub fn large() -> Ws {
        let ws = Ws::new();
        for d in 0..100 {
            let dir = ws.dir(&format!("d{d:02}"));
            for f in 0..LARGE_FILES / 100 {
                let body = format!("needle {d} {f}\nsecond needle\nthird needle, the last\n");
                std::fs::write(dir.join(format!("file-{f:03}.txt")), body).unwrap();
            }
        }
        let line = format!("wide {}\n", "w".repeat(994));
        ws.file("wide.txt", line.repeat(WIDE_LINES));
        ws
    }

    /// The workdir.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// `rel` in the workdir.
    pub fn at(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Write `rel` in the workdir (parents created).
    pub fn file(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let p = self.at(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        p
    }

    /// [`Ws::file`], as a builder.
    pub fn with(self, rel: &str, content: impl AsRef<[u8]>) -> Ws {
        self.file(rel, content);
        self
    }

    /// Create the directory `rel` in the workdir (parents created).
    pub fn dir(&self, rel: &str) -> PathBuf {
        let p = self.at(rel);
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    /// A FIFO at `rel` in the workdir: a read of it blocks until a writer
    /// comes (a search of it, until cancelled or timed out).
    #[cfg(unix)]
    pub fn fifo(&self, rel: &str) -> PathBuf {
        let p = self.at(rel);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &p,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap_or_else(|e| panic!("mkfifo {p:?}: {e}"));
        p
    }

    /// [`Ws::fifo`], as a builder.
    #[cfg(unix)]
    pub fn with_fifo(self, rel: &str) -> Ws {
        self.fifo(rel);
        self
    }

    /// Set the mtime of `rel` to `secs` after the epoch.
    pub fn set_mtime(&self, rel: &str, secs: u64) {
        let f = std::fs::File::options()
            .write(true)
            .open(self.at(rel))
            .unwrap();
        f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
            .unwrap();
    }

    /// Set the permission bits of `path` (any path, not only in the
    /// workdir).
    #[cfg(unix)]
    pub fn chmod(&self, path: &Path, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// The bytes of `rel` in the workdir.
    pub fn get(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.at(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    /// Whether `rel` exists in the workdir.
    pub fn exists(&self, rel: &str) -> bool {
        self.at(rel).exists()
    }

    /// A call in the workdir, without a session.
    pub fn ctx(&self) -> CallContext {
        CallContext::new(&self.root)
    }

    /// A call in the workdir, in session `id`.
    pub fn session(&self, id: &str) -> CallContext {
        CallContext::new(&self.root).session(id)
    }

    /// The binary, started in the workdir with stdin `/dev/null`, its
    /// state in [`Ws::state`], and `HOME` and `XDG_CONFIG_HOME` in the
    /// empty [`Ws::home`] (no user's git or SSH configuration reaches it;
    /// `XDG_STATE_HOME` is unset). No arguments yet.
    pub fn bin(&self) -> Command {
        self.command(super::rg::dsh_search_exe())
    }

    /// `program` (the reference rg, say) with [`Ws::bin`]'s directory and
    /// environment: what it is compared with sees the same configuration.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        c.current_dir(&self.root)
            .env("DSH_SEARCH_STATE_DIR", &self.state)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env_remove("XDG_STATE_HOME")
            .stdin(Stdio::null());
        c
    }

    /// [`Ws::bin`] with `--cwd <workdir>` and `args`.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.bin();
        c.arg("--cwd").arg(&self.root).args(args);
        c
    }

    /// [`Ws::cmd`] with the state directory `<base>/<state>` instead: two
    /// state directories, as two users of one workdir have.
    pub fn cmd_state(&self, state: &str, args: &[&str]) -> Command {
        let mut c = self.cmd(args);
        c.env("DSH_SEARCH_STATE_DIR", self.base.join(state));
        c
    }
}
