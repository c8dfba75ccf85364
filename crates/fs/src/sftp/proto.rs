//! SFTP version 3 on the wire (draft-ietf-secsh-filexfer-02, the version
//! OpenSSH's `sftp-server` speaks, with the extensions it announces in
//! `SSH_FXP_VERSION`): packets built and parsed, and a reply read as what
//! its request expects (a handle, attributes, a name, a status of success)
//! or as the error the disk would have reported.

use std::io;

use bytes::Bytes;

use crate::seam::{errno, FileType, Metadata};

/// The protocol version spoken, sent in `SSH_FXP_INIT` and required back.
pub(crate) const VERSION: u32 = 3;

pub(crate) const FXP_INIT: u8 = 1;
pub(crate) const FXP_VERSION: u8 = 2;
pub(crate) const FXP_OPEN: u8 = 3;
pub(crate) const FXP_CLOSE: u8 = 4;
pub(crate) const FXP_READ: u8 = 5;
pub(crate) const FXP_WRITE: u8 = 6;
pub(crate) const FXP_LSTAT: u8 = 7;
pub(crate) const FXP_SETSTAT: u8 = 9;
pub(crate) const FXP_OPENDIR: u8 = 11;
pub(crate) const FXP_READDIR: u8 = 12;
pub(crate) const FXP_REMOVE: u8 = 13;
pub(crate) const FXP_MKDIR: u8 = 14;
pub(crate) const FXP_REALPATH: u8 = 16;
pub(crate) const FXP_STAT: u8 = 17;
pub(crate) const FXP_RENAME: u8 = 18;
pub(crate) const FXP_READLINK: u8 = 19;
pub(crate) const FXP_STATUS: u8 = 101;
pub(crate) const FXP_HANDLE: u8 = 102;
pub(crate) const FXP_DATA: u8 = 103;
pub(crate) const FXP_NAME: u8 = 104;
pub(crate) const FXP_ATTRS: u8 = 105;
pub(crate) const FXP_EXTENDED: u8 = 200;
pub(crate) const FXP_EXTENDED_REPLY: u8 = 201;

pub(crate) const FX_OK: u32 = 0;
pub(crate) const FX_EOF: u32 = 1;
pub(crate) const FX_NO_SUCH_FILE: u32 = 2;
pub(crate) const FX_PERMISSION_DENIED: u32 = 3;
/// `SSH_FX_BAD_MESSAGE` (draft-ietf-secsh-filexfer-02 §7): what OpenSSH's
/// `errno_to_portable` sends for `EINVAL` and `ENAMETOOLONG`.
pub(crate) const FX_BAD_MESSAGE: u32 = 5;
/// `SSH_FX_OP_UNSUPPORTED` (draft-ietf-secsh-filexfer-02 §7).
pub(crate) const FX_OP_UNSUPPORTED: u32 = 8;

pub(crate) const FXF_READ: u32 = 0x01;
pub(crate) const FXF_WRITE: u32 = 0x02;
pub(crate) const FXF_CREAT: u32 = 0x08;
pub(crate) const FXF_EXCL: u32 = 0x20;

const ATTR_SIZE: u32 = 0x01;
const ATTR_UIDGID: u32 = 0x02;
const ATTR_PERMISSIONS: u32 = 0x04;
const ATTR_ACMODTIME: u32 = 0x08;
const ATTR_EXTENDED: u32 = 0x8000_0000;

/// A file's attributes as SFTP v3 carries them: no inode, no device, no
/// change time, and times in whole seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Attrs {
    pub(crate) size: Option<u64>,
    pub(crate) perm: Option<u32>,
    pub(crate) mtime: Option<u32>,
    /// The owner's uid.
    pub(crate) uid: Option<u32>,
}

/// A request's body, built after its type byte and id.
pub(crate) struct Out(pub(crate) Vec<u8>);

impl Out {
    /// A packet of type `kind` with request id `id` (length filled in by
    /// [`Out::finish`]).
    pub(crate) fn new(kind: u8, id: u32) -> Out {
        let mut v = Vec::with_capacity(64);
        v.extend_from_slice(&[0, 0, 0, 0, kind]);
        v.extend_from_slice(&id.to_be_bytes());
        Out(v)
    }

    pub(crate) fn u32(mut self, n: u32) -> Out {
        self.0.extend_from_slice(&n.to_be_bytes());
        self
    }

    pub(crate) fn u64(mut self, n: u64) -> Out {
        self.0.extend_from_slice(&n.to_be_bytes());
        self
    }

    pub(crate) fn bytes(mut self, b: &[u8]) -> Out {
        self.0.extend_from_slice(&(b.len() as u32).to_be_bytes());
        self.0.extend_from_slice(b);
        self
    }

    /// Attributes with only the permissions set (or none).
    pub(crate) fn perm(self, perm: Option<u32>) -> Out {
        match perm {
            Some(p) => self.u32(ATTR_PERMISSIONS).u32(p),
            None => self.u32(0),
        }
    }

    /// The packet with its length prefix.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        let len = (self.0.len() - 4) as u32;
        self.0[..4].copy_from_slice(&len.to_be_bytes());
        self.0
    }
}

/// A reply's body being read.
pub(crate) struct In<'a>(pub(crate) &'a [u8]);

fn short() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "malformed SFTP packet")
}

impl<'a> In<'a> {
    pub(crate) fn u32(&mut self) -> io::Result<u32> {
        let (head, rest) = self.0.split_at_checked(4).ok_or_else(short)?;
        self.0 = rest;
        Ok(u32::from_be_bytes(head.try_into().unwrap()))
    }

    pub(crate) fn u64(&mut self) -> io::Result<u64> {
        let hi = self.u32()?;
        let lo = self.u32()?;
        Ok((u64::from(hi) << 32) | u64::from(lo))
    }

    pub(crate) fn bytes(&mut self) -> io::Result<&'a [u8]> {
        let n = self.u32()? as usize;
        let (head, rest) = self.0.split_at_checked(n).ok_or_else(short)?;
        self.0 = rest;
        Ok(head)
    }

    pub(crate) fn attrs(&mut self) -> io::Result<Attrs> {
        let flags = self.u32()?;
        let mut a = Attrs::default();
        if flags & ATTR_SIZE != 0 {
            a.size = Some(self.u64()?);
        }
        if flags & ATTR_UIDGID != 0 {
            a.uid = Some(self.u32()?);
            self.u32()?;
        }
        if flags & ATTR_PERMISSIONS != 0 {
            a.perm = Some(self.u32()?);
        }
        if flags & ATTR_ACMODTIME != 0 {
            self.u32()?;
            a.mtime = Some(self.u32()?);
        }
        if flags & ATTR_EXTENDED != 0 {
            for _ in 0..self.u32()? {
                self.bytes()?;
                self.bytes()?;
            }
        }
        Ok(a)
    }
}

/// An `SSH_FXP_NAME` reply's (filename, attributes) pairs.
pub(crate) type Names = Vec<(Vec<u8>, Attrs)>;

/// A reply, by type: what a request waits for.
#[derive(Debug)]
pub(crate) enum Reply {
    /// `SSH_FXP_STATUS`: code and message.
    Status(u32, String),
    Handle(Vec<u8>),
    /// A slice of the buffer the reply came in.
    Data(Bytes),
    Name(Names),
    Attrs(Attrs),
    Extended(Vec<u8>),
}

impl Reply {
    /// Parse the body of a reply of type `kind` (after its id).
    pub(crate) fn parse(kind: u8, body: Bytes) -> io::Result<Reply> {
        let mut r = In(&body);
        Ok(match kind {
            FXP_STATUS => {
                let code = r.u32()?;
                let msg = r.bytes().map(|m| String::from_utf8_lossy(m).into_owned());
                Reply::Status(code, msg.unwrap_or_default())
            }
            FXP_HANDLE => Reply::Handle(r.bytes()?.to_vec()),
            FXP_DATA => {
                let n = r.bytes()?.len();
                Reply::Data(body.slice(4..4 + n))
            }
            FXP_NAME => {
                let n = r.u32()?;
                let mut names = Vec::with_capacity(n.min(1024) as usize);
                for _ in 0..n {
                    let name = r.bytes()?.to_vec();
                    r.bytes()?; // longname
                    names.push((name, r.attrs()?));
                }
                Reply::Name(names)
            }
            FXP_ATTRS => Reply::Attrs(r.attrs()?),
            FXP_EXTENDED_REPLY => Reply::Extended(r.0.to_vec()),
            _ => return Err(short()),
        })
    }
}

/// The replies a request may get, read as what it expects: any other reply
/// is the error a status stands for, or an unexpected reply.
impl Reply {
    /// The error of a reply that is not the one expected.
    pub(crate) fn into_error(self) -> io::Error {
        match self {
            Reply::Status(c, m) => status_error(c, &m),
            _ => unexpected(),
        }
    }

    /// A status of success.
    pub(crate) fn into_ok(self) -> io::Result<()> {
        match self {
            Reply::Status(FX_OK, _) => Ok(()),
            r => Err(r.into_error()),
        }
    }

    /// A handle.
    pub(crate) fn into_handle(self) -> io::Result<Vec<u8>> {
        match self {
            Reply::Handle(h) => Ok(h),
            r => Err(r.into_error()),
        }
    }

    /// Attributes.
    pub(crate) fn into_attrs(self) -> io::Result<Attrs> {
        match self {
            Reply::Attrs(a) => Ok(a),
            r => Err(r.into_error()),
        }
    }

    /// The first name of a `NAME` reply (`REALPATH`, `READLINK`).
    pub(crate) fn into_name(self) -> io::Result<Vec<u8>> {
        match self {
            Reply::Name(mut n) if !n.is_empty() => Ok(n.swap_remove(0).0),
            r => Err(r.into_error()),
        }
    }

    /// A `READ`'s bytes, or `None` at the end of the file.
    pub(crate) fn into_data(self) -> io::Result<Option<Bytes>> {
        match self {
            Reply::Data(d) => Ok(Some(d)),
            Reply::Status(FX_EOF, _) => Ok(None),
            r => Err(r.into_error()),
        }
    }

    /// A `READDIR`'s names, or `None` at the end of the directory.
    pub(crate) fn into_names(self) -> io::Result<Option<Names>> {
        match self {
            Reply::Name(names) => Ok(Some(names)),
            Reply::Status(FX_EOF, _) => Ok(None),
            r => Err(r.into_error()),
        }
    }
}

/// The error a status reply stands for, with the errno the disk would
/// have reported where SFTP v3 has a code for it.
pub(crate) fn status_error(code: u32, msg: &str) -> io::Error {
    match code {
        FX_NO_SUCH_FILE => errno::not_found(),
        FX_PERMISSION_DENIED => errno::permission_denied(),
        // `EINVAL` (a `READLINK` of what is not a symlink); `refine` tells
        // `ENAMETOOLONG` apart by the path's length.
        FX_BAD_MESSAGE => errno::invalid(),
        FX_EOF => io::Error::from(io::ErrorKind::UnexpectedEof),
        FX_OP_UNSUPPORTED => io::Error::new(
            io::ErrorKind::Unsupported,
            format!("operation unsupported by the server: {msg}"),
        ),
        _ if msg.is_empty() => io::Error::other("the server failed the request"),
        _ => io::Error::other(msg.to_string()),
    }
}

/// A reply of a type its request never gets.
pub(crate) fn unexpected() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "unexpected SFTP reply")
}

impl Attrs {
    /// The kind the permission bits' `S_IFMT` names.
    pub(crate) fn kind(&self) -> FileType {
        match self.perm.map(|p| p & 0o170_000) {
            Some(0o100_000) => FileType::File,
            Some(0o040_000) => FileType::Dir,
            Some(0o120_000) => FileType::Symlink,
            Some(0o010_000) => FileType::Fifo,
            Some(0o140_000) => FileType::Socket,
            Some(0o020_000) | Some(0o060_000) => FileType::Device,
            _ => FileType::Unknown,
        }
    }

    /// The seam's metadata of the file at `path` with these attributes.
    pub(crate) fn metadata(&self, path: &[u8]) -> Metadata {
        Metadata {
            kind: self.kind(),
            len: self.size.unwrap_or(0),
            mtime: self.mtime.map(|s| (i64::from(s), 0)),
            mode: self.perm.unwrap_or(0) & 0o7777,
            dev: 0,
            ino: path_id(path),
            ctime: None,
            links: 1,
        }
    }
}

/// FNV-1a of the path: SFTP v3 has no inode, and the version token needs
/// a number that names the file.
fn path_id(path: &[u8]) -> u64 {
    path.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
