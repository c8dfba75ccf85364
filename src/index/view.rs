//! One call's view of an indexed tree (`docs/index.md`, "How a call is
//! answered"): a [`FileSystem`] whose listings and stats inside the root
//! come from a snapshot of the mirror, and whose reads go to the filesystem
//! it mirrors ("the disk" below: the local disk, a tree in memory, an
//! overlay, a host over SFTP). The engine walks it as it walks any
//! filesystem, so what it prints is what it prints there; the one addition
//! is [`FsHints::known_miss`], the prefilter's answer for the call's
//! pattern (and, where the filesystem reads ahead, the hints of the files
//! it rules out are not passed on).
//!
//! Whatever the mirror does not hold is the disk's: a path outside the root,
//! through a symlink or `..`, ending in a separator; a directory that is not
//! mirrored (a VCS directory, one that could not be listed); an entry whose
//! stat failed.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use super::grams::Query;
use super::mirror::{DirNode, Entry};
use super::source::Source;
use crate::cancel::CancelToken;
use crate::fs::names::{os_bytes, path_bytes};
use crate::fs::{FileSystem, FileType, FsHints, Listing, Metadata};
use crate::sync::RecoverPoison;

mod kept;

use kept::Probe;
pub(crate) use kept::{KeptWalks, WalkLog};

/// A snapshot of the mirror over the filesystem it mirrors (`disk`), with
/// the call's query.
pub(crate) struct View<S: Source> {
    pub(crate) disk: Arc<S>,
    pub(crate) root: PathBuf,
    pub(crate) tree: Arc<DirNode>,
    pub(crate) query: Option<Arc<Query>>,
    /// Counts the files [`FsHints::known_miss`] answered for.
    pub(crate) skipped: Arc<AtomicU64>,
    /// Counts the directories listed from the mirror.
    pub(crate) listed: Arc<AtomicU64>,
    /// The query's answers for directories, kept between calls
    /// ([`Remembered`]).
    pub(crate) remembered: Option<Arc<Remembered>>,
    /// The grep walks kept for this mirror ([`KeptWalks`]), and what this
    /// call's walk read that the mirror does not vouch for.
    pub(crate) walks: Option<Arc<KeptWalks>>,
    pub(crate) log: Mutex<WalkLog>,
}

/// The prefilter's answers for the entries of mirrored directories, for
/// one query, kept between calls: testing every file's bitmap
/// was a quarter of a rare literal's call on the Linux tree, and a
/// directory's answers change only with the directory.
///
/// Keyed by the directory node's address and holding a [`Weak`] to it: a
/// mirrored directory is never changed in place while a `Weak` to it is
/// alive (the mirror changes a directory through `Arc::make_mut`, which
/// moves it to a new node then, and `Arc::get_mut` refuses), and the
/// allocation is not freed, so its address is not reused. A node still
/// held by the mirror (a strong count) at that address is the node the
/// answers were worked out for; one that changed is a new node, and a miss.
#[derive(Default)]
pub(crate) struct Remembered {
    dirs: Mutex<DirAnswers>,
}

/// The prefilter's answers for a directory's entries, by position: a
/// ruled-out file's length.
type Answers = Arc<[Option<u64>]>;

#[derive(Default)]
struct DirAnswers {
    by_node: HashMap<usize, (Weak<DirNode>, Answers)>,
    /// Size at which the nodes the mirror dropped are forgotten.
    purge_at: usize,
}

impl Remembered {
    /// The answers for `node`, worked out by `compute` when not kept.
    fn get(
        &self,
        node: &Arc<DirNode>,
        compute: impl FnOnce() -> Arc<[Option<u64>]>,
    ) -> Arc<[Option<u64>]> {
        let key = Arc::as_ptr(node) as usize;
        {
            let dirs = self.dirs.lock().recover_poison();
            if let Some((weak, answers)) = dirs.by_node.get(&key) {
                if weak.strong_count() > 0 {
                    return answers.clone();
                }
            }
        }
        let answers = compute();
        let mut dirs = self.dirs.lock().recover_poison();
        dirs.by_node
            .insert(key, (Arc::downgrade(node), answers.clone()));
        if dirs.by_node.len() >= dirs.purge_at {
            dirs.by_node.retain(|_, (w, _)| w.strong_count() > 0);
            dirs.purge_at = (2 * dirs.by_node.len()).max(1024);
        }
        answers
    }
}

/// A directory of the view: mirrored (with the filesystem's handle of it,
/// made when a file of it is first hinted or opened, where the filesystem
/// makes one without a round trip; and the prefilter's answers for its
/// entries, [`View::misses`]), or the filesystem's.
pub(crate) enum ViewDir<S: FileSystem> {
    Mirror(
        Arc<DirNode>,
        OnceLock<Option<S::Dir>>,
        OnceLock<Arc<[Option<u64>]>>,
    ),
    Disk(S::Dir),
}

/// The mirrored metadata the view answers with: not a regular file's of
/// more than one link, which is stat'ed on the disk at every call. Its
/// other names are stat'ed again at any change the feed reports
/// (`mirror::apply`), but a write through a name the mirror does not follow
/// (outside the root, or in an overlay's lower layer under a name its upper
/// layer shadows) is reported to no one.
fn vouched(meta: Option<Metadata>) -> Option<Metadata> {
    meta.filter(|m| !(m.kind == FileType::File && m.links > 1))
}

fn mirrored<S: FileSystem>(node: Arc<DirNode>) -> ViewDir<S> {
    ViewDir::Mirror(node, OnceLock::new(), OnceLock::new())
}

/// What a path names in the mirror.
enum Found<'t> {
    Root,
    Entry(&'t Entry),
}

impl<S: Source> View<S> {
    /// The mirror's answer for `path`, or `None`: ask the disk.
    fn lookup(&self, path: &Path) -> Option<Found<'_>> {
        // `X/` and `X/.` name X only when it is a directory (`file/` is
        // ENOTDIR on the disk), which the components would not say: they
        // drop both. The walk's root is often spelled so (`paths::Root`).
        let mut bytes = path_bytes(path);
        let mut must_be_dir = false;
        loop {
            if let Some(rest) = bytes.strip_suffix(b"/") {
                bytes = rest;
            } else if let Some(rest) = bytes.strip_suffix(b"/.") {
                bytes = rest;
            } else {
                break;
            }
            must_be_dir = true;
        }
        let found = self.lookup_lexical(&crate::fs::names::path(bytes))?;
        match found {
            Found::Entry(Entry { dir: None, .. }) if must_be_dir => None,
            found => Some(found),
        }
    }

    fn lookup_lexical(&self, path: &Path) -> Option<Found<'_>> {
        let rest = path.strip_prefix(&self.root).ok()?;
        let mut node: &DirNode = &self.tree;
        let mut comps = rest.components().peekable();
        if comps.peek().is_none() {
            return Some(Found::Root);
        }
        while let Some(c) = comps.next() {
            let Component::Normal(name) = c else {
                return None;
            };
            let entry = node.get(os_bytes(name))?;
            if comps.peek().is_none() {
                return Some(Found::Entry(entry));
            }
            node = entry.dir.as_deref()?;
        }
        None
    }

    fn mirrored_meta(&self, path: &Path, follow: bool) -> Option<Metadata> {
        match self.lookup(path)? {
            Found::Entry(e) => vouched(e.meta).filter(|m| !(follow && m.kind == FileType::Symlink)),
            Found::Root => None,
        }
    }

    /// The filesystem's handle of a mirrored directory, if it makes one
    /// cheaply.
    fn handle<'d>(&self, made: &'d OnceLock<Option<S::Dir>>, path: &Path) -> Option<&'d S::Dir> {
        made.get_or_init(|| self.disk.mirror_dir(path)).as_ref()
    }

    /// The length of the regular file `name` of a mirrored directory when
    /// the prefilter rules it out for the call's query: the mirror holds
    /// it as plain text of exactly its current size, and the query's
    /// trigrams are not all in it.
    fn ruled_out(&self, node: &DirNode, name: &OsStr) -> Option<u64> {
        self.rules_out(node.get(os_bytes(name))?)
    }

    /// [`View::ruled_out`] for every entry of a directory, by position,
    /// worked out at once when grep's walk asks for its first file: one
    /// pass over the entries, whose reads of the files' trigram bitmaps
    /// (scattered in memory, one cache miss each) overlap, rather than one
    /// chain of dependent reads per file between the walk's other work;
    /// and kept for the next call of the same query while the directory
    /// is unchanged ([`Remembered`]).
    fn misses<'d>(
        &self,
        node: &Arc<DirNode>,
        made: &'d OnceLock<Arc<[Option<u64>]>>,
    ) -> &'d [Option<u64>] {
        made.get_or_init(|| {
            let compute = || node.entries.iter().map(|e| self.rules_out(e)).collect();
            match &self.remembered {
                Some(r) => r.get(node, compute),
                None => compute(),
            }
        })
    }

    /// The length of the mirrored regular file `entry` when the prefilter
    /// rules it out ([`View::ruled_out`]).
    fn rules_out(&self, entry: &Entry) -> Option<u64> {
        let query = self.query.as_ref()?;
        let meta = entry.meta?;
        let content = entry.content.as_ref()?;
        if meta.kind != FileType::File || content.len != meta.len {
            return None;
        }
        if query.admits(&content.grams) {
            return None;
        }
        Some(meta.len)
    }
}

impl<S: Source> View<S> {
    /// Whether the mirror vouches for the content of the file `path`: a
    /// regular file of one name in a mirrored directory, whose every write
    /// the feed reports (and so changes the mirror).
    fn vouches_content(&self, path: &Path) -> bool {
        matches!(
            self.lookup(path),
            Some(Found::Entry(Entry { meta, .. }))
                if vouched(*meta).is_some_and(|m| m.kind == FileType::File)
        )
    }
}

impl<S: Source> FileSystem for View<S> {
    type Dir = ViewDir<S>;
    type File = S::File;

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        let got = self.disk.canonicalize(path);
        if self.logging() {
            let was = got.as_ref().map(PathBuf::clone).map_err(io::Error::kind);
            self.probe(Probe::Canonical(path.to_path_buf(), was));
        }
        got
    }

    fn current_dir(&self, workdir: &Path) -> io::Result<PathBuf> {
        let got = self.disk.current_dir(workdir);
        if self.logging() {
            let was = got.as_ref().map(PathBuf::clone).map_err(io::Error::kind);
            self.probe(Probe::CurrentDir(workdir.to_path_buf(), was));
        }
        got
    }

    fn metadata(&self, path: &Path) -> io::Result<Metadata> {
        match self.mirrored_meta(path, true) {
            Some(m) => Ok(m),
            None => self.stat_disk(path, true),
        }
    }

    fn symlink_metadata(&self, path: &Path) -> io::Result<Metadata> {
        match self.mirrored_meta(path, false) {
            Some(m) => Ok(m),
            None => self.stat_disk(path, false),
        }
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        self.disk.read_link(path)
    }

    fn open_dir(&self, path: &Path) -> io::Result<ViewDir<S>> {
        match self.lookup(path) {
            Some(Found::Root) => Ok(mirrored(self.tree.clone())),
            Some(Found::Entry(Entry { dir: Some(d), .. })) => Ok(mirrored(d.clone())),
            _ => {
                self.unkept();
                self.disk.open_dir(path).map(ViewDir::Disk)
            }
        }
    }

    fn open_dir_at(
        &self,
        parent: &ViewDir<S>,
        parent_path: &Path,
        name: &OsStr,
    ) -> io::Result<ViewDir<S>> {
        match parent {
            ViewDir::Mirror(node, ..) => match node.get(os_bytes(name)) {
                Some(Entry { dir: Some(d), .. }) => Ok(mirrored(d.clone())),
                _ => {
                    self.unkept();
                    self.disk
                        .open_dir(&parent_path.join(name))
                        .map(ViewDir::Disk)
                }
            },
            ViewDir::Disk(d) => {
                self.unkept();
                self.disk
                    .open_dir_at(d, parent_path, name)
                    .map(ViewDir::Disk)
            }
        }
    }

    fn list(&self, dir: &ViewDir<S>, listing: &mut Listing) {
        match dir {
            ViewDir::Mirror(node, ..) => {
                self.listed.fetch_add(1, Ordering::Relaxed);
                listing.clear();
                // grep's walk uses a listing's metadata only as a hint of
                // what it will open (`FsHints::will_open`), which only a
                // filesystem that reads ahead takes; without one, the copy
                // is the walk's largest write.
                if self.query.is_some() && !self.disk.lists_ahead() {
                    for e in &node.entries {
                        listing.push(&e.name, e.kind);
                    }
                    return;
                }
                for e in &node.entries {
                    match vouched(e.meta) {
                        Some(m) => listing.push_with_metadata(&e.name, e.kind, m),
                        None => listing.push(&e.name, e.kind),
                    }
                }
            }
            ViewDir::Disk(d) => self.disk.list(d, listing),
        }
    }

    fn metadata_at(
        &self,
        dir: &ViewDir<S>,
        dir_path: &Path,
        name: &OsStr,
        follow: bool,
    ) -> io::Result<Metadata> {
        match dir {
            ViewDir::Mirror(node, ..) => {
                let m = vouched(node.get(os_bytes(name)).and_then(|e| e.meta));
                match m.filter(|m| !(follow && m.kind == FileType::Symlink)) {
                    Some(m) => Ok(m),
                    None => self.stat_disk(&dir_path.join(name), follow),
                }
            }
            ViewDir::Disk(d) => {
                self.unkept();
                self.disk.metadata_at(d, dir_path, name, follow)
            }
        }
    }

    fn open_at(&self, dir: &ViewDir<S>, dir_path: &Path, name: &OsStr) -> io::Result<S::File> {
        match dir {
            ViewDir::Mirror(_, made, _) => match self.handle(made, dir_path) {
                Some(h) => self.disk.open_at(h, dir_path, name),
                None => self.disk.open(&dir_path.join(name), &CancelToken::new()),
            },
            ViewDir::Disk(d) => self.disk.open_at(d, dir_path, name),
        }
    }

    fn open(&self, path: &Path, cancel: &CancelToken) -> io::Result<S::File> {
        self.disk.open(path, cancel)
    }

    fn read_file(&self, path: &Path, max: u64) -> io::Result<(Metadata, Option<Vec<u8>>)> {
        self.disk.read_file(path, max)
    }

    fn read_control(&self, path: &Path) -> io::Result<Vec<u8>> {
        let read = self.disk.read_control(path);
        if self.logging() && !self.vouches_content(path) {
            let was = read.as_ref().map(Vec::clone).map_err(io::Error::kind);
            self.probe(Probe::Control(path.to_path_buf(), was));
        }
        read
    }

    fn git_global_excludes(&self, workdir: &Path) -> Option<(PathBuf, Vec<u8>)> {
        self.disk.git_global_excludes(workdir)
    }
}

impl<S: Source> FsHints for View<S> {
    fn will_open(
        &self,
        dir: &ViewDir<S>,
        dir_path: &Path,
        name: &OsStr,
        metadata: Option<&Metadata>,
    ) {
        match dir {
            ViewDir::Mirror(node, made, _) => {
                // No handle, no read ahead (the local disk): nothing to do.
                let Some(h) = self.handle(made, dir_path) else {
                    return;
                };
                // Only a candidate: a file the prefilter rules out is never
                // opened, so never read ahead either.
                if self.ruled_out(node, name).is_none() {
                    self.disk.will_open(h, dir_path, name, metadata);
                }
            }
            ViewDir::Disk(d) => self.disk.will_open(d, dir_path, name, metadata),
        }
    }

    /// A mirrored directory holds nothing open and is found in its
    /// parent's entries, while its whole path is looked up from the root
    /// one name at a time: glob's walk opens each through its parent as
    /// soon as the parent is listed. (A directory the mirror does not hold
    /// is then opened ahead on the disk too; there are few: the VCS
    /// directories, which glob does not walk, and the unlistable ones.)
    fn lists_ahead(&self) -> bool {
        true
    }

    fn will_list_tree(
        &self,
        dir: &ViewDir<S>,
        dir_path: &Path,
        name: &OsStr,
        left_out: &'static [&'static [u8]],
    ) {
        if let ViewDir::Disk(d) = dir {
            self.disk.will_list_tree(d, dir_path, name, left_out);
        }
    }

    fn known_miss(
        &self,
        dir: &ViewDir<S>,
        _dir_path: &Path,
        name: &OsStr,
        at: usize,
    ) -> Option<u64> {
        let ViewDir::Mirror(node, _, misses) = dir else {
            return None;
        };
        // `at` is where the engine listed the name: the entry there when it
        // is the one named (always, as the view lists a mirrored directory
        // in its entries' order), else a lookup by name.
        let name = os_bytes(name);
        let len = match node.entries.get(at) {
            Some(e) if *e.name == *name => self.misses(node, misses)[at],
            _ => self.rules_out(node.get(name)?),
        }?;
        self.skipped.fetch_add(1, Ordering::Relaxed);
        Some(len)
    }

    fn contents<'f>(&self, file: &'f S::File) -> Option<&'f [u8]> {
        self.disk.contents(file)
    }

    fn known_nul_free(&self, file: &S::File) -> bool {
        self.disk.known_nul_free(file)
    }
}

impl super::Index {
    /// The view a call walks, over the tree at `root` on the local disk as
    /// the index mirrors it once built, with no query (no file is ruled
    /// out), and no watcher kept: for the filesystem conformance suite
    /// (`tests/fs_conformance.rs`), which holds it, like every filesystem
    /// of the seam, to the disk's answers.
    #[doc(hidden)]
    pub fn local_view(root: &Path) -> io::Result<impl FsHints> {
        let disk = Arc::new(crate::fs::LocalFs::new());
        let root = disk.index_root(root)?;
        let mut feed = disk.feed(&root, None)?;
        let tree = super::mirror::Scanner::new(&*disk, &mut feed, &root)
            .scan_root(None)
            .map_err(|lost| io::Error::other(lost.0))?;
        Ok(View {
            disk,
            root,
            tree,
            query: None,
            skipped: Arc::default(),
            listed: Arc::default(),
            remembered: None,
            walks: None,
            log: Mutex::default(),
        })
    }
}
