//! The mirror saved between processes (`docs/index.md`, "Restart without a
//! rebuild"): written after each build, atomically (a file of its own,
//! synced, then renamed over the old one), private to the user (0600 in a
//! 0700 directory); read back by the next build of the same root, which
//! then walks the tree as a build does but reads again only the files
//! whose metadata changed (`mirror::Scanner::reuse`).
//!
//! A saved mirror is a hint, never an answer: every entry is checked
//! against the tree as it is (kind, size, mtime, ctime, device, inode), so
//! a file changed while nothing watched is read again, and a rewrite that
//! keeps the size and the mtime is caught by its ctime. A file that is
//! truncated, corrupt (its checksum), of another format or for another
//! root is ignored, and the mirror built from the tree.
//!
//! # Format
//!
//! Little-endian throughout: the magic `DSHIDX\0\x01`, the format version
//! (u32), the root's bytes (u32 length, bytes), the root directory, then a
//! checksum of everything before it (u64, [`checksum`]). A directory is
//! its entry count (u32) and its entries; an entry is its name (u32
//! length, bytes), its listed kind (u8), its metadata (u8 flag, then kind
//! u8, length u64, mtime (u8 flag, i64, u32), mode u32, device u64, inode
//! u64, ctime (as mtime), links u64), its content (u8 flag, then length
//! u64, bitmap words u32, the words u64 each) and its directory (u8 flag,
//! then a directory).

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::grams::Grams;
use super::mirror::{Content, DirNode, Entry};
use crate::fs::names::path_bytes;
use crate::fs::{FileType, Metadata, Timestamp};
use crate::private::{PrivateDir, PrivateError};

const MAGIC: &[u8; 8] = b"DSHIDX\0\x01";

/// The format's version: a file of another is ignored. Bump it with any
/// change of the layout or of what the bitmaps hash (`grams.rs`). 2: two
/// bits per trigram.
const FORMAT: u32 = 2;

/// Directories nested deeper than this are not saved, and a file that
/// says so is corrupt: a path of `PATH_MAX` bytes has at most half as many
/// components, and the decoder recurses once per level.
const MAX_DEPTH: usize = 2048;

/// Where the mirror of one root is saved: the file `index-<hash>` (a
/// hash of the root's bytes; the root itself is inside, and checked) of
/// the store directory, a private directory (`private.rs`: it and the
/// state directory holding it are the user's alone, or nothing is read
/// from it or written to it).
pub(crate) struct Store {
    dir: PathBuf,
    name: OsString,
}

impl Store {
    /// The file for `root` in the store `dir`.
    pub(crate) fn new(dir: &Path, root: &Path) -> Store {
        use sha2::{Digest, Sha256};
        let hash = Sha256::digest(path_bytes(root));
        let hex: String = hash[..12].iter().map(|b| format!("{b:02x}")).collect();
        Store {
            dir: dir.to_path_buf(),
            name: format!("index-{hex}").into(),
        }
    }

    /// The store directory, created when missing, opened and checked
    /// with the state directory that holds it.
    pub(crate) fn open(&self) -> Result<PrivateDir, PrivateError> {
        PrivateDir::open(&self.dir, true)
    }

    /// The saved file's path.
    pub(crate) fn file(&self) -> PathBuf {
        self.dir.join(&self.name)
    }
}

/// The largest saved mirror read back: its size is checked on the open
/// file before anything is read, and no more than that size is read.
/// A mirror takes about a tenth of its tree (BENCHMARKS.md, "Live index"),
/// so this is the mirror of a tree of some 160 GB.
const MAX_SAVED: u64 = 16 << 30;

/// Why a saved mirror was not used.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// There is none.
    Missing,
    /// It cannot be used; why, for the status and the servers' log.
    Ignored(String),
}

/// The mirror of `root` saved in `store`, whose directory is `dir`: read
/// only when it is a regular file of this user's, writable by no one
/// else, of at most [`MAX_SAVED`] bytes (checked on the open file, which
/// is opened without following a link and without waiting on a FIFO).
pub(crate) fn load(dir: &PrivateDir, store: &Store, root: &Path) -> Result<DirNode, Refused> {
    let bytes = match dir.read(&store.name, MAX_SAVED) {
        Ok(b) => b,
        Err(e) if e.is_missing() => return Err(Refused::Missing),
        Err(e) => return Err(Refused::Ignored(e.to_string())),
    };
    decode(&bytes, root)
        .map_err(|why| Refused::Ignored(format!("{}: {why}", store.file().display())))
}

/// Write the mirror of `root` to `store` in `dir`, atomically (a new file
/// of an unpredictable name, created exclusively, synced, then renamed
/// over the old one).
pub(crate) fn save(
    dir: &PrivateDir,
    store: &Store,
    root: &Path,
    tree: &DirNode,
) -> Result<(), PrivateError> {
    let mut bytes = Vec::new();
    encode(&mut bytes, root, tree).map_err(|e| PrivateError::Io(store.file(), e))?;
    dir.write_atomically(&store.name, &bytes)
}

/// A checksum of `bytes` against truncation and corruption (not against
/// an adversary: the file is the user's own): 64-bit words multiplied and
/// rotated in, the length and a final mix last.
pub(crate) fn checksum(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h: u64 = 0x243F_6A88_85A3_08D3;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        h = (h ^ w).wrapping_mul(K).rotate_left(29);
    }
    for &b in words.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(K).rotate_left(29);
    }
    h ^= bytes.len() as u64;
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^ (h >> 33)
}

fn encode(out: &mut Vec<u8>, root: &Path, tree: &DirNode) -> io::Result<()> {
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    put_bytes(out, path_bytes(root));
    put_dir(out, tree, 0)?;
    let sum = checksum(out);
    out.extend_from_slice(&sum.to_le_bytes());
    Ok(())
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

fn put_dir(out: &mut Vec<u8>, node: &DirNode, depth: usize) -> io::Result<()> {
    if depth > MAX_DEPTH {
        return Err(io::Error::other(
            "the tree is nested too deeply to be saved",
        ));
    }
    out.extend_from_slice(&(node.entries.len() as u32).to_le_bytes());
    for e in &node.entries {
        put_bytes(out, &e.name);
        out.push(kind_byte(e.kind));
        // A file whose content its metadata does not vouch for (changed
        // too recently, `validate.rs`) is saved without it: a restart
        // then reads it again.
        match &e.meta.filter(|_| !e.unread) {
            Some(m) => {
                out.push(1);
                out.push(kind_byte(m.kind));
                out.extend_from_slice(&m.len.to_le_bytes());
                put_time(out, m.mtime);
                out.extend_from_slice(&m.mode.to_le_bytes());
                out.extend_from_slice(&m.dev.to_le_bytes());
                out.extend_from_slice(&m.ino.to_le_bytes());
                put_time(out, m.ctime);
                out.extend_from_slice(&m.links.to_le_bytes());
            }
            None => out.push(0),
        }
        match &e.content {
            Some(c) => {
                out.push(1);
                out.extend_from_slice(&c.len.to_le_bytes());
                let words = c.grams.words();
                out.extend_from_slice(&(words.len() as u32).to_le_bytes());
                for w in words {
                    out.extend_from_slice(&w.to_le_bytes());
                }
            }
            None => out.push(0),
        }
        match &e.dir {
            Some(d) => {
                out.push(1);
                put_dir(out, d, depth + 1)?;
            }
            None => out.push(0),
        }
    }
    Ok(())
}

fn put_time(out: &mut Vec<u8>, t: Option<Timestamp>) {
    match t {
        Some((s, n)) => {
            out.push(1);
            out.extend_from_slice(&s.to_le_bytes());
            out.extend_from_slice(&n.to_le_bytes());
        }
        None => out.push(0),
    }
}

const KINDS: [FileType; 7] = [
    FileType::File,
    FileType::Dir,
    FileType::Symlink,
    FileType::Fifo,
    FileType::Socket,
    FileType::Device,
    FileType::Unknown,
];

fn kind_byte(k: FileType) -> u8 {
    KINDS
        .iter()
        .position(|&x| x == k)
        .expect("every kind listed") as u8
}

/// The mirror of `root` in `bytes`, or why not.
pub(crate) fn decode(bytes: &[u8], root: &Path) -> Result<DirNode, &'static str> {
    let Some(body_len) = bytes.len().checked_sub(8) else {
        return Err("truncated");
    };
    let (body, sum) = bytes.split_at(body_len);
    if !body.starts_with(MAGIC) {
        return Err("not a saved index");
    }
    if u64::from_le_bytes(sum.try_into().expect("8 bytes")) != checksum(body) {
        return Err("truncated or corrupt (its checksum)");
    }
    decode_body(body, root)
}

/// [`decode`] without the checksum: what the fuzzer drives, so that its
/// inputs reach the parser.
pub(crate) fn decode_body(body: &[u8], root: &Path) -> Result<DirNode, &'static str> {
    let mut r = Reader { b: body };
    if r.take(8)? != MAGIC {
        return Err("not a saved index");
    }
    if r.u32()? != FORMAT {
        return Err("of another format version");
    }
    if r.bytes()? != path_bytes(root) {
        return Err("of another root");
    }
    let tree = r.dir(0)?;
    if !r.b.is_empty() {
        return Err("corrupt (bytes after the tree)");
    }
    Ok(tree)
}

struct Reader<'a> {
    b: &'a [u8],
}

/// The fewest bytes an entry takes: name length, kind, three flags.
const MIN_ENTRY: usize = 4 + 1 + 3;

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], &'static str> {
        if self.b.len() < n {
            return Err("truncated");
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, &'static str> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, &'static str> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }

    fn u64(&mut self) -> Result<u64, &'static str> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }

    fn bytes(&mut self) -> Result<&'a [u8], &'static str> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    fn flag(&mut self) -> Result<bool, &'static str> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err("corrupt (a flag)"),
        }
    }

    fn kind(&mut self) -> Result<FileType, &'static str> {
        KINDS
            .get(usize::from(self.u8()?))
            .copied()
            .ok_or("corrupt (a kind)")
    }

    fn time(&mut self) -> Result<Option<Timestamp>, &'static str> {
        if !self.flag()? {
            return Ok(None);
        }
        let s = self.u64()? as i64;
        let n = self.u32()?;
        Ok(Some((s, n)))
    }

    fn dir(&mut self, depth: usize) -> Result<DirNode, &'static str> {
        if depth > MAX_DEPTH {
            return Err("corrupt (nested too deeply)");
        }
        let count = self.u32()? as usize;
        // Bounds the allocation by what the file can hold.
        if count > self.b.len() / MIN_ENTRY {
            return Err("truncated");
        }
        let mut entries = Vec::with_capacity(count);
        let mut names = HashMap::with_capacity(count);
        for _ in 0..count {
            let name: Box<[u8]> = self.bytes()?.into();
            if name.is_empty() || name.contains(&b'/') || &*name == b"." || &*name == b".." {
                return Err("corrupt (a name)");
            }
            if names.insert(name.clone(), ()).is_some() {
                return Err("corrupt (a name twice)");
            }
            let kind = self.kind()?;
            let meta = if self.flag()? {
                Some(Metadata {
                    kind: self.kind()?,
                    len: self.u64()?,
                    mtime: self.time()?,
                    mode: self.u32()?,
                    dev: self.u64()?,
                    ino: self.u64()?,
                    ctime: self.time()?,
                    links: self.u64()?,
                })
            } else {
                None
            };
            let content = if self.flag()? {
                let len = self.u64()?;
                let words = self.u32()? as usize;
                if words == 0 || words > self.b.len() / 8 {
                    return Err("corrupt (a bitmap)");
                }
                let bits: Box<[u64]> = (0..words).map(|_| self.u64()).collect::<Result<_, _>>()?;
                Some(Arc::new(Content {
                    len,
                    grams: Grams::from_words(bits),
                }))
            } else {
                None
            };
            let dir = if self.flag()? {
                Some(Arc::new(self.dir(depth + 1)?))
            } else {
                None
            };
            entries.push(Entry {
                name,
                kind,
                meta,
                content,
                unread: false,
                dir,
            });
        }
        Ok(DirNode::from_entries(entries))
    }
}

/// The fuzzing entry point: `data` as a whole file, then as the tree of a
/// file whose header and checksum are right, so that the fuzzer's inputs
/// reach the parser. Never a panic, never an allocation the input cannot
/// back.
#[cfg(fuzzing)]
pub(crate) fn fuzz(data: &[u8]) {
    let root = Path::new("/w");
    let _ = decode(data, root);
    let mut body = Vec::with_capacity(data.len() + 20);
    body.extend_from_slice(MAGIC);
    body.extend_from_slice(&FORMAT.to_le_bytes());
    put_bytes(&mut body, b"/w");
    body.extend_from_slice(data);
    if let Ok(tree) = decode_body(&body, root) {
        // What decodes encodes back to the same bytes.
        let mut again = Vec::new();
        encode(&mut again, root, &tree).expect("a decoded tree is shallow enough");
        assert_eq!(&again[..again.len() - 8], &body[..], "decode then encode");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> DirNode {
        let meta = |kind, ino| Metadata {
            kind,
            len: 6,
            mtime: Some((1_700_000_000, 5)),
            mode: 0o644,
            dev: 7,
            ino,
            ctime: Some((1_700_000_001, 9)),
            links: 1,
        };
        let mut seen = Vec::new();
        let file = Entry {
            name: (*b"a.txt").into(),
            kind: FileType::File,
            meta: Some(meta(FileType::File, 2)),
            content: Some(Arc::new(Content {
                len: 6,
                grams: Grams::of(b"needle", &mut seen),
            })),
            unread: false,
            dir: None,
        };
        let sub = DirNode::from_entries(vec![file.clone()]);
        DirNode::from_entries(vec![
            file,
            Entry {
                name: (*b"sub").into(),
                kind: FileType::Dir,
                meta: Some(meta(FileType::Dir, 3)),
                content: None,
                unread: false,
                dir: Some(Arc::new(sub)),
            },
            Entry {
                name: (*b"link").into(),
                kind: FileType::Symlink,
                meta: None,
                content: None,
                unread: false,
                dir: None,
            },
        ])
    }

    /// What a decoded tree says, for comparison.
    fn show(node: &DirNode) -> String {
        let mut s = String::new();
        for e in &node.entries {
            s += &format!(
                "{:?} {:?} {:?} {:?} [",
                String::from_utf8_lossy(&e.name),
                e.kind,
                e.meta,
                e.content
                    .as_ref()
                    .map(|c| (c.len, c.grams.words().to_vec()))
            );
            if let Some(d) = &e.dir {
                s += &show(d);
            }
            s += "] ";
        }
        s
    }

    #[test]
    fn a_saved_mirror_reads_back_as_it_was() {
        let root = Path::new("/w");
        let mut bytes = Vec::new();
        encode(&mut bytes, root, &tree()).unwrap();
        assert_eq!(show(&decode(&bytes, root).unwrap()), show(&tree()));
    }

    #[test]
    fn a_bad_file_is_refused_with_its_reason() {
        let root = Path::new("/w");
        let mut good = Vec::new();
        encode(&mut good, root, &tree()).unwrap();
        let mut flipped = good.clone();
        flipped[30] ^= 1;
        let mut other_format = good[..good.len() - 8].to_vec();
        other_format[8] = 9;
        let sum = checksum(&other_format);
        other_format.extend_from_slice(&sum.to_le_bytes());
        let cases: [(&str, Vec<u8>, &Path, &str); 6] = [
            ("empty", Vec::new(), root, "truncated"),
            (
                "truncated",
                good[..good.len() / 2].to_vec(),
                root,
                "truncated or corrupt (its checksum)",
            ),
            (
                "a byte flipped",
                flipped,
                root,
                "truncated or corrupt (its checksum)",
            ),
            (
                "another root",
                good.clone(),
                Path::new("/v"),
                "of another root",
            ),
            (
                "another format",
                other_format,
                root,
                "of another format version",
            ),
            (
                "not ours",
                b"hello, world, a text file".to_vec(),
                root,
                "not a saved index",
            ),
        ];
        for (name, bytes, root, why) in cases {
            match decode(&bytes, root) {
                Ok(_) => panic!("{name}: accepted"),
                Err(e) => assert_eq!(e, why, "{name}"),
            }
        }
    }

    #[test]
    fn every_truncation_of_the_body_is_refused_without_a_panic() {
        let root = Path::new("/w");
        let mut good = Vec::new();
        encode(&mut good, root, &tree()).unwrap();
        let body = &good[..good.len() - 8];
        for n in 0..body.len() {
            assert!(decode_body(&body[..n], root).is_err(), "{n} bytes accepted");
        }
        assert!(decode_body(body, root).is_ok());
    }
}
