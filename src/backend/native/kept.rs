//! A grep walk kept between calls (`docs/index.md`, "Kept walks"): what
//! the walk below a directory root yielded (its files, in order, and its
//! errors), kept by a filesystem that can vouch that nothing the walk read
//! has changed since (the index's view of an unchanged mirror), so that
//! the next call of the same walk does not list a directory or decide an
//! entry again. With it, for each prefilter query, the files the
//! prefilter does not rule out: a call of a rare literal over an unchanged
//! tree then costs the reads of the root's and its parents' ignore files
//! (read at every call: [`Outside`]) and the search of its few candidates.
//!
//! A kept walk stands for the walk only where the same [`Outside`] (globs,
//! workdir, root, the rules read outside the walked tree) meets the same
//! tree: the [`Keeper`] says when the tree is the same, and checks again
//! whatever the walk read that the tree does not vouch for.

use std::any::Any;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use crate::event::Stats;
use crate::fs::names::{os_str, path_buf, path_bytes};
use crate::fs::{FsHints, Metadata};
use crate::sync::RecoverPoison;

use super::messages::Messages;
use super::paths::{too_long_for_rg_len, Root};
use super::rgignore::Outside;
use super::serial_walk::{Dir, Haystack, Output};
use super::worker::clean_miss;

/// A filesystem that keeps walks: it says which listed directories it can
/// hand out again in a later call, keeps the walks, and gives one back
/// only while the tree it walked is unchanged.
pub(crate) trait Keeper<F: FsHints>: Sync {
    /// What a kept walk holds of a directory to make its handle again.
    type Dir: Send + Sync;
    /// Whether it keeps any walk (the scan's [`NeverKept`] does not).
    const KEEPS: bool = true;
    /// `dir` as kept, or `None` when it cannot be: the walk is not kept.
    fn keep(&self, dir: &F::Dir) -> Option<Self::Dir>;
    /// A handle of a kept directory for this call.
    fn handle(&self, dir: &Self::Dir) -> F::Dir;
    /// The name at position `at` of the kept directory's listing.
    fn name<'d>(&self, dir: &'d Self::Dir, at: usize) -> Option<&'d [u8]>;
    /// What the listing of the kept directory says of its entry at `at`
    /// (the size a filesystem that reads ahead takes from it), if anything.
    fn metadata(&self, dir: &Self::Dir, at: usize) -> Option<Metadata>;
    /// The walk below the root starts (its reads are watched from now on:
    /// one the keeper cannot check again later means it is not kept).
    fn walk_starts(&self);
    /// The walk kept under `key` for this call's tree, if it still holds.
    fn find(&self, key: &Outside) -> Option<Arc<Walked<Self::Dir>>>;
    /// Keep the walk just made (unless it read what cannot be checked).
    fn keep_walk(&self, key: Outside, walk: Walked<Self::Dir>);
    /// The call's prefilter query, by identity: the candidates of a kept
    /// walk are kept per query.
    fn query(&self) -> Option<QueryId>;
    /// Count `files` ruled out from kept candidates (the filesystem counts
    /// those its `known_miss` answers).
    fn ruled_out(&self, files: u64);
}

/// No directory kept: every call walks.
pub(crate) struct NeverKept;

/// Nothing (a kept directory of [`NeverKept`]: there is none).
pub(crate) enum Nothing {}

impl<F: FsHints> Keeper<F> for NeverKept {
    type Dir = Nothing;
    const KEEPS: bool = false;
    fn keep(&self, _: &F::Dir) -> Option<Nothing> {
        None
    }
    fn handle(&self, dir: &Nothing) -> F::Dir {
        match *dir {}
    }
    fn name<'d>(&self, dir: &'d Nothing, _: usize) -> Option<&'d [u8]> {
        match *dir {}
    }
    fn metadata(&self, dir: &Nothing, _: usize) -> Option<Metadata> {
        match *dir {}
    }
    fn walk_starts(&self) {}
    fn find(&self, _: &Outside) -> Option<Arc<Walked<Nothing>>> {
        None
    }
    fn keep_walk(&self, _: Outside, _: Walked<Nothing>) {}
    fn query(&self) -> Option<QueryId> {
        None
    }
    fn ruled_out(&self, _: u64) {}
}

/// A directory of a kept walk with files in it.
struct KeptDir<D> {
    kept: D,
    /// Its absolute path.
    abs: PathBuf,
    /// Its path as rg walks it, with the separator a name follows.
    rg_prefix: Vec<u8>,
}

/// What the walk below a root yielded.
pub(crate) struct Walked<D> {
    dirs: Vec<KeptDir<D>>,
    /// Each file: its directory in `dirs` and its position there.
    files: Vec<(u32, u32)>,
    /// The walk's errors, rendered.
    errors: Messages,
    /// The ignore-file messages of the directories below the root.
    ignore_messages: Vec<(String, bool)>,
    /// The candidates per prefilter query, the most recent first.
    candidates: Mutex<Vec<(QueryId, Arc<Candidates>)>>,
}

/// A prefilter query, by identity ([`Keeper::query`]).
type QueryId = Arc<dyn Any + Send + Sync>;

/// How many queries' candidates a kept walk holds.
const QUERIES_KEPT: usize = 8;

/// The files of a kept walk that one query does not rule out.
struct Candidates {
    files: Vec<u32>,
    /// The others, counted as searched.
    missed: Stats,
    ruled_out: u64,
}

impl<D> Walked<D> {
    /// The ignore-file messages of the directories below the root.
    pub(crate) fn ignore_messages(&self) -> &[(String, bool)] {
        &self.ignore_messages
    }

    fn rg_path(&self, dir: &KeptDir<D>, name: &[u8]) -> PathBuf {
        let mut v = Vec::with_capacity(dir.rg_prefix.len() + name.len());
        v.extend_from_slice(&dir.rg_prefix);
        v.extend_from_slice(name);
        path_buf(v)
    }
}

/// The walk's output, passed on to `out` and, while it can be kept,
/// recorded.
pub(crate) struct Recorder<'a, F: FsHints, K: Keeper<F>, O: Output<F>> {
    pub(crate) out: &'a mut O,
    keeper: &'a K,
    root: &'a Root,
    walked: Option<Walked<K::Dir>>,
    /// The directory of the last file recorded (held: a directory freed
    /// could be followed by another at its address).
    last: Option<Arc<Dir<F>>>,
}

impl<'a, F: FsHints, K: Keeper<F>, O: Output<F>> Recorder<'a, F, K, O> {
    /// Passing on to `out`, recording nothing until [`Recorder::start`].
    pub(crate) fn new(out: &'a mut O, keeper: &'a K, root: &'a Root) -> Self {
        Recorder {
            out,
            keeper,
            root,
            walked: None,
            last: None,
        }
    }

    /// Record from now on.
    pub(crate) fn start(&mut self) {
        self.keeper.walk_starts();
        self.walked = Some(Walked {
            dirs: Vec::new(),
            files: Vec::new(),
            errors: Messages::default(),
            ignore_messages: Vec::new(),
            candidates: Mutex::new(Vec::new()),
        });
    }

    /// The walk recorded, if it was whole, every directory could be kept
    /// and the filesystem stayed reachable.
    pub(crate) fn finish(self) -> Option<Walked<K::Dir>> {
        if self.out.stopped() {
            return None;
        }
        // An error of the whole filesystem (a host lost) is no answer to
        // keep, whatever the mirror says.
        self.walked.filter(|w| !w.errors.met_unavailable())
    }

    fn record(&mut self, file: &Haystack<F>) -> Option<()> {
        let walked = self.walked.as_mut()?;
        let same = matches!(&self.last, Some(d) if Arc::ptr_eq(d, &file.dir));
        if !same {
            let kept = self.keeper.keep(file.dir.handle())?;
            let name = self.keeper.name(&kept, file.at)?;
            let prefix = path_bytes(&file.rg_path).strip_suffix(name)?.to_vec();
            self.last = Some(file.dir.clone());
            walked.dirs.push(KeptDir {
                kept,
                abs: file.dir.path().to_path_buf(),
                rg_prefix: prefix,
            });
        }
        let d = walked.dirs.last()?;
        // The name the keeper holds at that position is the file's, and
        // the path rg walks is the directory's with it: else not kept.
        let name = self.keeper.name(&d.kept, file.at)?;
        if path_bytes(&file.rg_path).strip_suffix(name)? != d.rg_prefix.as_slice() {
            return None;
        }
        let at = u32::try_from(file.at).ok()?;
        let index = u32::try_from(walked.dirs.len() - 1).ok()?;
        walked.files.push((index, at));
        Some(())
    }
}

impl<F: FsHints, K: Keeper<F>, O: Output<F>> Output<F> for Recorder<'_, F, K, O> {
    fn file(&mut self, file: Haystack<F>) {
        if self.walked.is_some() && self.record(&file).is_none() {
            self.walked = None;
        }
        self.out.file(file);
    }

    fn error(&mut self, err: ignore::Error) {
        if let Some(w) = &mut self.walked {
            w.errors.walk_error(&err, self.root);
        }
        self.out.error(err);
    }

    fn stopped(&self) -> bool {
        self.out.stopped()
    }

    fn stopped_at(&self, i: usize) -> bool {
        self.out.stopped_at(i)
    }

    fn release_dirs(&mut self) -> bool {
        self.out.release_dirs()
    }

    fn ruled_out(&mut self, files: u64, missed: &Stats) {
        self.walked = None;
        self.out.ruled_out(files, missed);
    }

    fn kept_errors(&mut self, msgs: &Messages) {
        self.walked = None;
        self.out.kept_errors(msgs);
    }
}

/// Keep `walked` (the walk below the root `ignore_rules` decided for,
/// whose messages from the `from`-th on are the walk's).
pub(crate) fn keep<F: FsHints, K: Keeper<F>>(
    keeper: &K,
    key: Outside,
    mut walked: Walked<K::Dir>,
    ignore_messages: Vec<(String, bool)>,
) {
    walked.ignore_messages = ignore_messages;
    keeper.keep_walk(key, walked);
}

/// Hand `out` what the kept walk `walked` yields for this call: its
/// errors, the files the call's prefilter rules out as one count, and each
/// candidate as the walk would (hinted, then handed over), its directory's
/// handle made once. The ignore-file messages are the caller's to add.
pub(crate) fn replay<F: FsHints, K: Keeper<F>>(
    fs: &F,
    keeper: &K,
    walked: &Walked<K::Dir>,
    live: &Arc<AtomicUsize>,
    out: &mut impl Output<F>,
) {
    out.kept_errors(&walked.errors);
    let candidates = candidates(fs, keeper, walked);
    if candidates.ruled_out > 0 {
        out.ruled_out(candidates.ruled_out, &candidates.missed);
    }
    let mut dir: Option<(u32, Arc<Dir<F>>)> = None;
    for &i in &candidates.files {
        if out.stopped() {
            return;
        }
        let (d, at) = walked.files[i as usize];
        let kd = &walked.dirs[d as usize];
        let Some(name) = keeper.name(&kd.kept, at as usize) else {
            continue;
        };
        let handle = match &dir {
            Some((held, h)) if *held == d => h.clone(),
            _ => {
                // The last directory's files are all handed over.
                dir.take();
                while live.load(std::sync::atomic::Ordering::Relaxed)
                    >= super::serial_walk::MAX_LIVE_DIRS
                    && out.release_dirs()
                {}
                let h = Dir::new(keeper.handle(&kd.kept), kd.abs.clone(), live);
                dir = Some((d, h.clone()));
                h
            }
        };
        let meta = keeper.metadata(&kd.kept, at as usize);
        fs.will_open(handle.handle(), &kd.abs, &os_str(name), meta.as_ref());
        let rg_path = walked.rg_path(kd, name);
        out.file(Haystack::new(handle, rg_path, name.len(), at as usize));
    }
}

/// The candidates of `walked` for the call's query: kept, or worked out
/// by asking the filesystem's prefilter about each file, as the walk asks
/// it ([`FsHints::known_miss`]; a path too long for rg is left to the
/// search, which reports it).
fn candidates<F: FsHints, K: Keeper<F>>(
    fs: &F,
    keeper: &K,
    walked: &Walked<K::Dir>,
) -> Arc<Candidates> {
    let query = keeper.query();
    if let Some(q) = &query {
        let mut kept = walked.candidates.lock().recover_poison();
        if let Some(i) = kept.iter().position(|(k, _)| Arc::ptr_eq(k, q)) {
            let entry = kept.remove(i);
            let c = entry.1.clone();
            kept.insert(0, entry);
            keeper.ruled_out(c.ruled_out);
            return c;
        }
    }
    let mut c = Candidates {
        files: Vec::new(),
        missed: Stats::default(),
        ruled_out: 0,
    };
    let mut dir: Option<(u32, F::Dir)> = None;
    for (i, &(d, at)) in walked.files.iter().enumerate() {
        let kd = &walked.dirs[d as usize];
        let name = keeper.name(&kd.kept, at as usize).unwrap_or_default();
        if !matches!(&dir, Some((held, _)) if *held == d) {
            dir = Some((d, keeper.handle(&kd.kept)));
        }
        let Some((_, handle)) = &dir else {
            continue;
        };
        let missed = if too_long_for_rg_len(kd.rg_prefix.len() + name.len()) {
            None
        } else {
            fs.known_miss(handle, &kd.abs, &os_str(name), at as usize)
        };
        match missed {
            Some(len) => {
                c.missed.add(&clean_miss(len).stats);
                c.ruled_out += 1;
            }
            None => c.files.push(i as u32),
        }
    }
    let c = Arc::new(c);
    if let Some(q) = query {
        let mut kept = walked.candidates.lock().recover_poison();
        kept.insert(0, (q, c.clone()));
        kept.truncate(QUERIES_KEPT);
    }
    c
}
