//! The SSH connection under a workspace's SFTP sessions: TCP, the host key
//! checked strictly against `known_hosts` ([`known_hosts`]), and the login
//! with a key file or the agent. It knows nothing of the sessions it
//! carries (`session`), which the filesystem opens on it together (again
//! after one of them ends: `SftpFs::session`).

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_search_base::sync::RecoverPoison;
use russh::client::{self, Handle};
use russh::keys::{self, PrivateKeyWithHashAlg, PublicKeyOrCertificate};

use super::known_hosts::{self, Verdict};

/// How long connecting (TCP, key exchange, authentication) may take.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// An SSH connection, which carries the SFTP sessions.
pub(crate) type Ssh = Handle<HostKeyCheck>;

/// Where and as whom to connect.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) user: String,
    pub(crate) identity: Option<PathBuf>,
    pub(crate) known_hosts: PathBuf,
}

impl Target {
    /// `sftp://USER@HOST:PORT`, how errors name the host.
    pub(crate) fn url(&self) -> String {
        format!("sftp://{}@{}:{}", self.user, self.host, self.port)
    }
}

/// The connection's handler: checks the server's key strictly against
/// `known_hosts` and remembers why it refused one.
pub(crate) struct HostKeyCheck {
    host: String,
    port: u16,
    known_hosts: PathBuf,
    refusal: Arc<Mutex<Option<String>>>,
}

impl client::Handler for HostKeyCheck {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        key: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        let key = match key {
            PublicKeyOrCertificate::PublicKey { key, .. } => key,
            PublicKeyOrCertificate::Certificate(_) => {
                *self.refusal.lock().recover_poison() =
                    Some("the server presented a host certificate, which is not supported".into());
                return Ok(false);
            }
        };
        let shown = self.known_hosts.display();
        let text = match std::fs::read(&self.known_hosts) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                *self.refusal.lock().recover_poison() = Some(format!(
                    "cannot check the host key against {shown}: {}",
                    io_text(&e)
                ));
                return Ok(false);
            }
        };
        let name = known_hosts::host_name(&self.host, self.port);
        let alg = key.algorithm();
        let verdict = match known_hosts::check(&text, &self.host, self.port, key) {
            Verdict::Trusted => return Ok(true),
            Verdict::Revoked(line) => format!(
                "host key revoked: the server's {alg} key is marked @revoked in {shown} line {line}"
            ),
            Verdict::Changed(line) => format!(
                "host key changed: the server's {alg} key differs from the one in {shown} line {line}"
            ),
            Verdict::Unknown {
                cert_authority: Some(line),
            } => format!(
                "host key not known: {name} is named only by the @cert-authority line {line} of \
                 {shown}, and host certificates are not supported (add the host's key with \
                 ssh-keyscan)"
            ),
            Verdict::Unknown {
                cert_authority: None,
            } => format!(
                "host key not known: no {alg} key for {name} in {shown} (add it with ssh-keyscan)"
            ),
        };
        *self.refusal.lock().recover_poison() = Some(verdict);
        Ok(false)
    }
}

/// Connect and authenticate, counting the connection in `connects`: a
/// connection that carries the SFTP sessions (`Session::start`).
pub(super) async fn ssh(target: &Target, connects: &AtomicU64) -> io::Result<Arc<Ssh>> {
    let url = target.url();
    let fail = |what: String| io::Error::other(format!("{url}: {what}"));
    let config = Arc::new(client::Config {
        nodelay: true,
        // The SFTP window: reads of 255 KiB several at once.
        window_size: 16 * 1024 * 1024,
        maximum_packet_size: 64 * 1024,
        // AES-GCM first: with the processor's AES instructions it
        // costs both ends a fraction of ChaCha20-Poly1305 (russh's
        // first choice) per byte, and a search moves every byte it
        // reads. The rest of the list is russh's own.
        preferred: russh::Preferred {
            cipher: std::borrow::Cow::Borrowed(&[
                russh::cipher::AES_128_GCM,
                russh::cipher::AES_256_GCM,
                russh::cipher::CHACHA20_POLY1305,
                russh::cipher::AES_256_CTR,
                russh::cipher::AES_192_CTR,
                russh::cipher::AES_128_CTR,
            ]),
            ..Default::default()
        },
        ..Default::default()
    });
    let refusal = Arc::new(Mutex::new(None));
    let checker = HostKeyCheck {
        host: target.host.clone(),
        port: target.port,
        known_hosts: target.known_hosts.clone(),
        refusal: refusal.clone(),
    };
    let addr = (target.host.as_str(), target.port);
    let mut ssh = match client::connect(config, addr, checker).await {
        Ok(h) => h,
        Err(e) => {
            if let Some(why) = refusal.lock().recover_poison().take() {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("{url}: {why}"),
                ));
            }
            return Err(match e {
                russh::Error::IO(io) => fail(format!("cannot connect: {}", io_text(&io))),
                e => fail(format!("cannot connect: {e}")),
            });
        }
    };
    authenticate(&mut ssh, target, &url).await?;
    connects.fetch_add(1, Ordering::Relaxed);
    Ok(Arc::new(ssh))
}

/// Authenticate with the identity file, else with each of the agent's keys.
async fn authenticate(ssh: &mut Ssh, target: &Target, url: &str) -> io::Result<()> {
    let denied =
        |what: String| io::Error::new(io::ErrorKind::PermissionDenied, format!("{url}: {what}"));
    if let Some(path) = &target.identity {
        let key = keys::load_secret_key(path, None).map_err(|e| {
            io::Error::other(format!(
                "{url}: cannot load the identity {}: {e}",
                path.display()
            ))
        })?;
        let hash = if key.algorithm().is_rsa() {
            ssh.best_supported_rsa_hash().await.ok().flatten().flatten()
        } else {
            None
        };
        let result = ssh
            .authenticate_publickey(
                &target.user,
                PrivateKeyWithHashAlg::new(Arc::new(key), hash),
            )
            .await
            .map_err(|e| io::Error::other(format!("{url}: authentication failed: {e}")))?;
        if result.success() {
            return Ok(());
        }
        return Err(denied(format!(
            "the server refused the key {} for user {}",
            path.display(),
            target.user
        )));
    }
    let mut agent = connect_agent().await.map_err(|e| {
        denied(format!(
            "no --identity and no usable SSH agent ({AGENT_PLACE}): {e}"
        ))
    })?;
    let identities = agent
        .request_identities()
        .await
        .map_err(|e| denied(format!("the SSH agent cannot list its keys: {e}")))?;
    for id in &identities {
        let key = id.public_key().into_owned();
        let hash = if key.algorithm().is_rsa() {
            ssh.best_supported_rsa_hash().await.ok().flatten().flatten()
        } else {
            None
        };
        if let Ok(r) = ssh
            .authenticate_publickey_with(&target.user, key, hash, &mut agent)
            .await
        {
            if r.success() {
                return Ok(());
            }
        }
    }
    Err(denied(format!(
        "the server refused the SSH agent's {} key(s) for user {}",
        identities.len(),
        target.user
    )))
}

/// Where the SSH agent is looked for, as errors name it.
#[cfg(unix)]
const AGENT_PLACE: &str = "SSH_AUTH_SOCK";
/// Where the SSH agent is looked for, as errors name it.
#[cfg(windows)]
const AGENT_PLACE: &str = r"SSH_AUTH_SOCK, or the pipe \\.\pipe\openssh-ssh-agent";

/// The SSH agent as OpenSSH's `ssh` finds it: on Unix the socket named by
/// `SSH_AUTH_SOCK`; on Windows the named pipe `SSH_AUTH_SOCK` names, or
/// else the Windows OpenSSH agent's own pipe (OpenSSH-for-Windows'
/// `ssh_get_authentication_socket` default).
async fn connect_agent() -> Result<
    keys::agent::client::AgentClient<Box<dyn keys::agent::client::AgentStream + Send + Unpin>>,
    keys::Error,
> {
    use keys::agent::client::AgentClient;
    #[cfg(unix)]
    let client = AgentClient::connect_env().await?;
    #[cfg(windows)]
    let client = {
        let pipe = std::env::var_os("SSH_AUTH_SOCK")
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| r"\\.\pipe\openssh-ssh-agent".into());
        AgentClient::connect_named_pipe(pipe).await?
    };
    Ok(AgentClient::connect(client.into_inner()))
}

/// An OS error's text without Rust's ` (os error N)` tail.
fn io_text(e: &io::Error) -> String {
    crate::io_message(e)
}
