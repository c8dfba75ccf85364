//! A real OpenSSH `sshd` on 127.0.0.1 for the SFTP tests
//! (`docs/contract.md` §11): a free port, generated host and user keys,
//! its own `sshd_config` (`internal-sftp`, keys only) and a `known_hosts`
//! naming its host key. One server is shared by every test of the binary
//! ([`shared`]); a test that stops or breaks its server starts its own
//! ([`Sshd::start`]).

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use dsh_search::fs::SftpFs;

/// Where Debian's `openssh-server` puts the daemon.
const SSHD: &str = "/usr/sbin/sshd";

/// Keys and files shared by every server of the binary.
pub struct Keys {
    pub dir: tempfile::TempDir,
    /// The user's private key (its public half is authorized).
    pub user_key: PathBuf,
    /// A key the server does not authorize.
    pub stranger_key: PathBuf,
    /// The server's host key and a different one.
    pub host_key: PathBuf,
    pub other_host_key: PathBuf,
}

fn keygen(path: &Path) {
    let out = Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "dsh-search-test",
            "-f",
        ])
        .arg(path)
        .output()
        .unwrap_or_else(|e| {
            panic!("ssh-keygen cannot run ({e}): scripts/test installs openssh-client")
        });
    assert!(
        out.status.success(),
        "ssh-keygen failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The keys, generated once per test binary.
pub fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| {
        assert!(
            Path::new(SSHD).exists(),
            "{SSHD} is missing: the SFTP tests need OpenSSH's server (scripts/test installs openssh-server)"
        );
        let dir = tempfile::tempdir().unwrap();
        // sshd reads authorized_keys as the user (uid 65534 too).
        set_mode(dir.path(), 0o755);
        let k = |n: &str| dir.path().join(n);
        for n in ["user_key", "stranger_key", "host_key", "other_host_key"] {
            keygen(&k(n));
        }
        std::fs::copy(k("user_key.pub"), k("authorized_keys")).unwrap();
        set_mode(&k("authorized_keys"), 0o644);
        Keys {
            user_key: k("user_key"),
            stranger_key: k("stranger_key"),
            host_key: k("host_key"),
            other_host_key: k("other_host_key"),
            dir,
        }
    })
}

fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A running `sshd` on 127.0.0.1.
pub struct Sshd {
    pub port: u16,
    /// `known_hosts` with this server's host key.
    pub known_hosts: PathBuf,
    config: PathBuf,
    child: Mutex<Option<Child>>,
}

fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Sshd {
    /// Start a server of its own on a free port, with `host_key`.
    pub fn start_with(host_key: &Path) -> Sshd {
        Sshd::start_config(host_key, None)
    }

    /// Start a server of its own whose `sftp` subsystem is the shell
    /// `script` (run as root's login shell runs a subsystem command):
    /// a server that breaks the protocol.
    pub fn start_subsystem(script: &str) -> Sshd {
        Sshd::start_config(&keys().host_key, Some(script))
    }

    fn start_config(host_key: &Path, script: Option<&str>) -> Sshd {
        let keys = keys();
        let port = free_port();
        let dir = keys.dir.path();
        let config = dir.join(format!("sshd_config.{port}"));
        let subsystem = match script {
            None => "internal-sftp".to_string(),
            Some(body) => {
                let path = dir.join(format!("subsystem.{port}"));
                std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
                set_mode(&path, 0o755);
                path.display().to_string()
            }
        };
        std::fs::write(
            &config,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {host}\nPidFile none\n\
                 AuthorizedKeysFile {dir}/authorized_keys\nPubkeyAuthentication yes\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
                 PermitRootLogin yes\nStrictModes no\nMaxStartups 64\nMaxSessions 64\n\
                 Subsystem sftp {subsystem}\nLogLevel ERROR\n",
                host = host_key.display(),
                dir = dir.display()
            ),
        )
        .unwrap();
        let known_hosts = dir.join(format!("known_hosts.{port}"));
        let public = std::fs::read_to_string(keys.host_key.with_extension("pub")).unwrap();
        std::fs::write(&known_hosts, format!("[127.0.0.1]:{port} {public}")).unwrap();
        // sshd refuses to start without its privilege-separation directory.
        std::fs::create_dir_all("/run/sshd").unwrap();
        let sshd = Sshd {
            port,
            known_hosts,
            config,
            child: Mutex::new(None),
        };
        sshd.resume();
        sshd
    }

    /// Start a server of its own with the usual host key.
    pub fn start() -> Sshd {
        Sshd::start_with(&keys().host_key)
    }

    /// (Re)start the daemon on the same port and wait until it accepts.
    pub fn resume(&self) {
        let mut slot = self.child.lock().unwrap();
        assert!(slot.is_none(), "sshd is already running");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.config.with_extension("log"))
            .unwrap();
        // setpriv --pdeathsig: the daemon dies with the test process (the
        // shared one is never dropped). The signal follows the thread that
        // started it, so a thread that lives as long as the process does.
        let mut cmd = Command::new("setpriv");
        cmd.args(["--pdeathsig", "KILL", SSHD, "-D", "-e", "-f"])
            .arg(&self.config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        let child = spawn_for_life(cmd).unwrap_or_else(|e| panic!("{SSHD} cannot start: {e}"));
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "sshd did not listen on port {} within 10 s",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        *slot = Some(child);
    }

    /// Kill the daemon and every session it serves (its descendants,
    /// found by their parent ids), as a crash would: the connections drop
    /// without a goodbye.
    pub fn kill(&self) {
        if let Some(mut child) = self.child.lock().unwrap().take() {
            // The listener stopped first: a client that sees its session
            // die and reconnects at once gets no new session process
            // that the list below would miss.
            let _ = Command::new("kill")
                .args(["-STOP", &child.id().to_string()])
                .status();
            for pid in descendants(child.id()) {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Send `signal` (`STOP`, `CONT`) to every session the daemon serves,
    /// not to the listener: a server that stops answering.
    pub fn signal_sessions(&self, signal: &str) {
        for pid in self.sessions() {
            let _ = Command::new("kill")
                .args([&format!("-{signal}"), &pid.to_string()])
                .status();
        }
    }

    /// The processes serving the daemon's connections (its descendants,
    /// not the listener), with their command lines.
    pub fn session_processes(&self) -> Vec<(u32, String)> {
        self.sessions()
            .into_iter()
            .map(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
                (pid, text.trim().to_string())
            })
            .collect()
    }

    /// The daemon's descendants (none when it is not running).
    fn sessions(&self) -> Vec<u32> {
        let pid = self.child.lock().unwrap().as_ref().map(Child::id);
        pid.map(descendants).unwrap_or_default()
    }

    /// A workspace on this server as root with the authorized key.
    pub fn fs(&self) -> SftpFs {
        self.builder().build().expect("the SFTP filesystem builds")
    }

    /// The builder for [`Sshd::fs`], to change an option.
    pub fn builder(&self) -> dsh_search::fs::SftpBuilder {
        SftpFs::builder("127.0.0.1")
            .port(self.port)
            .user("root")
            .identity(&keys().user_key)
            .known_hosts(&self.known_hosts)
            .timeout(Duration::from_secs(20))
    }

    /// `--fs sftp://root@127.0.0.1:PORT --identity … --known-hosts …`.
    pub fn cli_args(&self) -> Vec<String> {
        vec![
            "--fs".into(),
            format!("sftp://root@127.0.0.1:{}", self.port),
            "--identity".into(),
            keys().user_key.display().to_string(),
            "--known-hosts".into(),
            self.known_hosts.display().to_string(),
        ]
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The server every test of the binary shares, and one workspace on it
/// (one connection, reused by every test).
pub fn shared() -> &'static Sshd {
    static SHARED: OnceLock<Sshd> = OnceLock::new();
    SHARED.get_or_init(Sshd::start)
}

/// One workspace on the shared server, shared by the tests. Its git
/// global excludes file is the one the disk's rg reads (found through the
/// tests' controlled `$HOME/.gitconfig`), which the server sees on the
/// same disk.
pub fn shared_fs() -> Arc<SftpFs> {
    static FS: OnceLock<Arc<SftpFs>> = OnceLock::new();
    FS.get_or_init(|| {
        let mut b = shared().builder();
        // The controlled home is set up with the reference rg.
        if let Some(env) = super::rg::env() {
            b = b.git_excludes(&env.excludes);
        }
        Arc::new(b.build().expect("the SFTP filesystem builds"))
    })
    .clone()
}

/// The processes whose parent is `pid` (from `/proc/*/stat`).
/// `pid`'s children, their children, and so on.
fn descendants(pid: u32) -> Vec<u32> {
    let mut pids = children(pid);
    let mut i = 0;
    while i < pids.len() {
        let more = children(pids[i]);
        pids.extend(more);
        i += 1;
    }
    pids
}

fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let ppid = rest
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            if let Ok(child) = entry.file_name().to_string_lossy().parse() {
                out.push(child);
            }
        }
    }
    out
}

/// Spawn `cmd` from a thread that lives as long as the test process, so
/// that `--pdeathsig` fires only when the process ends.
fn spawn_for_life(cmd: Command) -> std::io::Result<Child> {
    type Job = (Command, std::sync::mpsc::Sender<std::io::Result<Child>>);
    static SPAWNER: OnceLock<Mutex<std::sync::mpsc::Sender<Job>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        std::thread::spawn(move || {
            for (mut cmd, reply) in rx {
                let _ = reply.send(cmd.spawn());
            }
            // The sender lives in a static: never reached.
            loop {
                std::thread::park();
            }
        });
        Mutex::new(tx)
    });
    let (tx, rx) = std::sync::mpsc::channel();
    spawner.lock().unwrap().send((cmd, tx)).unwrap();
    rx.recv().unwrap()
}
