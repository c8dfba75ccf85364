//! Which filesystem holds a workspace, as text: [`FsSpec`], the
//! command line's `--fs` and the bindings' `fs` (`local`, `mem`,
//! `mem:ROOT`, `sftp://[USER@]HOST[:PORT]`), parsed into a value.

use std::fmt;
use std::path::PathBuf;

/// Which filesystem holds a workspace, as the command line's `--fs` and the
/// Node binding's `fs` option spell it: `local`, `mem`, `mem:ROOT` or
/// `sftp://[USER@]HOST[:PORT]` (parse it with [`str::parse`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum FsSpec {
    /// The local disk (the default).
    #[default]
    Local,
    /// A copy in memory of a directory, at the same absolute path: the
    /// one named here, else the workspace's root
    /// ([`WorkspaceOptions::root`](super::WorkspaceOptions::root)). Writes stay in memory.
    Mem(Option<PathBuf>),
    /// A host over SFTP; the calls' workdirs are remote absolute paths.
    Sftp(SftpAddress),
}

/// The address of a remote workspace: `sftp://[USER@]HOST[:PORT]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SftpAddress {
    /// The login. `None`: [`crate::fs::SftpBuilder::user`]'s default
    /// (`root`); the command line fills in `$USER` before opening.
    pub user: Option<String>,
    /// The host name or address (an IPv6 address without its brackets).
    pub host: String,
    /// The SSH port (22 when the address names none).
    pub port: u16,
}

/// A string that is not an [`FsSpec`]; says what is accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseFsSpecError(String);

impl fmt::Display for ParseFsSpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseFsSpecError {}

impl std::str::FromStr for FsSpec {
    type Err = ParseFsSpecError;

    fn from_str(s: &str) -> Result<FsSpec, ParseFsSpecError> {
        let err = |msg: String| Err(ParseFsSpecError(msg));
        match s {
            "local" => Ok(FsSpec::Local),
            "mem" => Ok(FsSpec::Mem(None)),
            _ => match s.strip_prefix("mem:") {
                Some("") => err("mem: needs a ROOT directory after the colon".into()),
                Some(root) => Ok(FsSpec::Mem(Some(PathBuf::from(root)))),
                None => match s.strip_prefix("sftp://") {
                    Some(rest) => parse_sftp(rest).map(FsSpec::Sftp).map_err(ParseFsSpecError),
                    None => err(format!(
                        "unknown filesystem {s:?}: use local, mem[:ROOT] or sftp://[USER@]HOST[:PORT]"
                    )),
                },
            },
        }
    }
}

/// `[USER@]HOST[:PORT]` (an IPv6 address in brackets). Parsed whether or
/// not the build has the `sftp` feature: [`WorkspaceOptions::open`](super::WorkspaceOptions::open) says
/// that it lacks it.
fn parse_sftp(rest: &str) -> Result<SftpAddress, String> {
    let bad = |why: &str| {
        format!("invalid sftp:// address {rest:?}: {why} (use sftp://[USER@]HOST[:PORT])")
    };
    if rest.contains('/') {
        return Err(bad(
            "no path after the host: the remote workdir is the call's",
        ));
    }
    let (user, hostport) = match rest.rsplit_once('@') {
        Some((u, h)) if !u.is_empty() => (Some(u.to_string()), h),
        Some(_) => return Err(bad("empty user")),
        None => (None, rest),
    };
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, "")) => (h, None),
            Some((h, p)) => match p.strip_prefix(':') {
                Some(p) => (h, Some(p)),
                None => return Err(bad("junk after the address")),
            },
            None => return Err(bad("unclosed [")),
        }
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    if host.is_empty() {
        return Err(bad("no host"));
    }
    let port = match port {
        None => crate::fs::SSH_PORT,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err(bad("the port is not a number from 1 to 65535")),
        },
    };
    Ok(SftpAddress {
        user,
        host: host.to_string(),
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> Result<FsSpec, String> {
        s.parse::<FsSpec>().map_err(|e| e.to_string())
    }

    fn sftp(user: Option<&str>, host: &str, port: u16) -> Result<FsSpec, String> {
        Ok(FsSpec::Sftp(SftpAddress {
            user: user.map(String::from),
            host: host.into(),
            port,
        }))
    }

    #[test]
    fn specs_parse() {
        assert_eq!(spec("local"), Ok(FsSpec::Local));
        assert_eq!(spec("mem"), Ok(FsSpec::Mem(None)));
        assert_eq!(spec("mem:/w"), Ok(FsSpec::Mem(Some("/w".into()))));
        assert_eq!(spec("sftp://h"), sftp(None, "h", 22));
        assert_eq!(spec("sftp://u@h:2222"), sftp(Some("u"), "h", 2222));
        assert_eq!(spec("sftp://u@[::1]:2"), sftp(Some("u"), "::1", 2));
        assert_eq!(spec("sftp://a@b@h"), sftp(Some("a@b"), "h", 22));
    }

    #[test]
    fn bad_specs_say_what_is_accepted() {
        for (s, why) in [
            (
                "zip",
                "unknown filesystem \"zip\": use local, mem[:ROOT] or sftp://",
            ),
            ("mem:", "mem: needs a ROOT directory"),
            ("sftp://", "no host"),
            ("sftp://@h", "empty user"),
            ("sftp://h/dir", "no path after the host"),
            ("sftp://h:0", "the port is not a number from 1 to 65535"),
            ("sftp://h:x", "the port is not a number"),
            ("sftp://[::1", "unclosed ["),
            ("sftp://[::1]x", "junk after the address"),
        ] {
            let e = spec(s).unwrap_err();
            assert!(e.contains(why), "{s}: {e}");
        }
    }
}
