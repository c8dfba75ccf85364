//! The kept walks (`docs/index.md`, "How a call is answered"): a grep
//! call's walk of the view, and a glob call's whole answer, kept while the
//! mirror is unchanged and used again by a later call of the same key,
//! once the few reads the walk made off the mirror ([`Probe`]) are checked
//! to read the same. The engine decides what to keep and when to replay it
//! ([`Keeper`], `backend/native/kept.rs`); this module is the view's side:
//! noting the reads off the mirror ([`WalkLog`]), and the kept walks and
//! answers themselves ([`KeptWalks`]).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::{mirrored, vouched, View, ViewDir};
use crate::backend::{Keeper, Outside, Walked};
use crate::fs::names::{os_bytes, path_bytes};
use crate::fs::Metadata;
use crate::index::mirror::DirNode;
use crate::index::source::Source;
use crate::outcome::{GlobResults, Outcome, Status};
use crate::request::GlobRequest;
use crate::sync::RecoverPoison;

/// What a walk read from the disk rather than the mirror, noted from
/// [`Keeper::walk_starts`] on, so that a kept walk is used again only
/// while those reads still read the same.
#[derive(Default)]
pub(crate) struct WalkLog {
    on: bool,
    probes: Vec<Probe>,
    /// A read that cannot be checked again cheaply (a directory listed
    /// from the disk): the walk is not kept.
    unkept: bool,
}

/// How many disk reads a kept walk checks again at each call, at most.
const PROBES_MAX: usize = 64;

/// One read of the disk a kept walk depends on.
#[derive(Clone, PartialEq)]
pub(super) enum Probe {
    /// An ignore file (or a `.git` file, a `commondir`) the mirror does not
    /// vouch for: below an unmirrored directory (a nested repository's
    /// `.git/info/exclude`), a link, a file of several names.
    Control(PathBuf, Result<Vec<u8>, io::ErrorKind>),
    /// A stat the mirror could not answer (`follow`: links followed).
    Stat(PathBuf, bool, Result<Metadata, io::ErrorKind>),
    /// A path resolved ([`FileSystem::canonicalize`](crate::fs::FileSystem::canonicalize)), and a workdir
    /// ([`FileSystem::current_dir`](crate::fs::FileSystem::current_dir)): outside the mirror, and what glob's
    /// printed paths are made from.
    Canonical(PathBuf, Result<PathBuf, io::ErrorKind>),
    CurrentDir(PathBuf, Result<PathBuf, io::ErrorKind>),
}

impl Probe {
    /// Whether the disk still answers as it did.
    fn holds<S: Source>(&self, disk: &S) -> bool {
        let kind = |e: io::Error| e.kind();
        match self {
            Probe::Control(path, was) => disk.read_control(path).map_err(kind) == *was,
            Probe::Stat(path, true, was) => disk.metadata(path).map_err(kind) == *was,
            Probe::Stat(path, false, was) => disk.symlink_metadata(path).map_err(kind) == *was,
            Probe::Canonical(path, was) => disk.canonicalize(path).map_err(kind) == *was,
            Probe::CurrentDir(path, was) => disk.current_dir(path).map_err(kind) == *was,
        }
    }
}

/// The grep walks kept for one mirror (the engine's side: `backend/native/kept.rs`): each with the tree it
/// walked (held: a changed mirror is a new root node, `Arc::make_mut`, and
/// the old one cannot be freed and its address reused while held), its key
/// and the disk reads to check again.
#[derive(Default)]
pub(crate) struct KeptWalks {
    walks: Mutex<Vec<KeptWalk>>,
    /// glob's answers, whole: glob's walk reads nothing but the tree's
    /// names and metadata, so its answer is kept rather than its walk.
    globs: Mutex<Vec<KeptGlob>>,
    /// Calls that used a kept walk.
    reused: AtomicU64,
}

impl KeptWalks {
    /// How many calls used a kept walk.
    pub(crate) fn reused(&self) -> u64 {
        self.reused.load(Ordering::Relaxed)
    }
}

/// A glob call's answer, for the same request over the same tree.
struct KeptGlob {
    tree: Arc<DirNode>,
    key: GlobKey,
    probes: Arc<[Probe]>,
    outcome: Arc<Outcome<GlobResults>>,
}

/// What a glob's answer depends on besides the tree.
#[derive(PartialEq)]
struct GlobKey {
    pattern: String,
    path: Option<Vec<u8>>,
    workdir: Vec<u8>,
    raw_budget: Option<u64>,
}

impl GlobKey {
    fn of(req: &GlobRequest) -> GlobKey {
        GlobKey {
            pattern: req.pattern.clone(),
            path: req.path.as_deref().map(|p| os_bytes(p).to_vec()),
            workdir: path_bytes(&req.workdir).to_vec(),
            raw_budget: req.raw_budget,
        }
    }
}

struct KeptWalk {
    tree: Arc<DirNode>,
    key: Outside,
    probes: Arc<[Probe]>,
    walk: Arc<Walked<Arc<DirNode>>>,
}

/// How many walks are kept (different roots, globs or workdirs), the most
/// recent first; each holds two numbers per file of its tree (on the Linux
/// tree about 0.7 MB).
const WALKS_KEPT: usize = 8;

impl<S: Source> View<S> {
    /// Whether this call's walk is being noted ([`WalkLog`]).
    pub(super) fn logging(&self) -> bool {
        self.walks.is_some() && self.log.lock().recover_poison().on
    }

    pub(super) fn probe(&self, probe: Probe) {
        let mut log = self.log.lock().recover_poison();
        if log.probes.len() >= PROBES_MAX {
            log.unkept = true;
        } else {
            log.probes.push(probe);
        }
    }

    /// A read from the disk the walk cannot be kept over.
    pub(super) fn unkept(&self) {
        if self.walks.is_some() {
            self.log.lock().recover_poison().unkept = true;
        }
    }

    /// A stat the mirror does not answer, from the disk (noted).
    pub(super) fn stat_disk(&self, path: &Path, follow: bool) -> io::Result<Metadata> {
        let stat = if follow {
            self.disk.metadata(path)
        } else {
            self.disk.symlink_metadata(path)
        };
        if self.logging() {
            let was = stat.as_ref().map(|m| *m).map_err(io::Error::kind);
            self.probe(Probe::Stat(path.to_path_buf(), follow, was));
        }
        stat
    }
}

impl<S: Source> View<S> {
    /// Note every read off the mirror from now on (a glob call's, whose
    /// answer is kept whole: [`View::keep_glob`]).
    pub(crate) fn log_all(&self) {
        Keeper::walk_starts(self);
    }

    /// The answer kept for `req` over this tree, if its reads off the
    /// mirror still read the same.
    pub(crate) fn kept_glob(&self, req: &GlobRequest) -> Option<Outcome<GlobResults>> {
        let walks = self.walks.as_ref()?;
        let key = GlobKey::of(req);
        let (probes, outcome) = {
            let mut kept = walks.globs.lock().recover_poison();
            kept.retain(|g| Arc::ptr_eq(&g.tree, &self.tree));
            let i = kept.iter().position(|g| g.key == key)?;
            let g = kept.remove(i);
            let found = (g.probes.clone(), g.outcome.clone());
            kept.insert(0, g);
            found
        };
        if probes.iter().all(|p| p.holds(&*self.disk)) {
            walks.reused.fetch_add(1, Ordering::Relaxed);
            return Some((*outcome).clone());
        }
        let mut kept = walks.globs.lock().recover_poison();
        kept.retain(|g| !Arc::ptr_eq(&g.outcome, &outcome));
        None
    }

    /// Keep glob's answer `outcome` for `req`: a whole one (rg exited 0
    /// or 1) or one stopped at the request's budget (part of the key),
    /// over reads of the mirror and few others. A stopped answer depends
    /// on nothing but what its walk read, all of it checked again at use,
    /// so a replay gives one of the answers a new walk could give.
    pub(crate) fn keep_glob(&self, req: &GlobRequest, outcome: &Outcome<GlobResults>) {
        let Some(walks) = &self.walks else {
            return;
        };
        let log = std::mem::take(&mut *self.log.lock().recover_poison());
        let whole = matches!(outcome.status, Status::Exited(0 | 1) | Status::OverBudget);
        if log.unkept || !whole || req.cancel.is_cancelled() {
            return;
        }
        let key = GlobKey::of(req);
        let mut kept = walks.globs.lock().recover_poison();
        kept.retain(|g| Arc::ptr_eq(&g.tree, &self.tree) && g.key != key);
        kept.insert(
            0,
            KeptGlob {
                tree: self.tree.clone(),
                key,
                probes: log.probes.into(),
                outcome: Arc::new(outcome.clone()),
            },
        );
        kept.truncate(WALKS_KEPT);
    }
}

impl<S: Source> Keeper<View<S>> for View<S> {
    type Dir = Arc<DirNode>;

    fn keep(&self, dir: &ViewDir<S>) -> Option<Arc<DirNode>> {
        match dir {
            ViewDir::Mirror(node, ..) => Some(node.clone()),
            ViewDir::Disk(_) => None,
        }
    }

    fn handle(&self, dir: &Arc<DirNode>) -> ViewDir<S> {
        mirrored(dir.clone())
    }

    fn name<'d>(&self, dir: &'d Arc<DirNode>, at: usize) -> Option<&'d [u8]> {
        dir.entries.get(at).map(|e| &*e.name)
    }

    fn metadata(&self, dir: &Arc<DirNode>, at: usize) -> Option<Metadata> {
        vouched(dir.entries.get(at)?.meta)
    }

    fn walk_starts(&self) {
        let mut log = self.log.lock().recover_poison();
        *log = WalkLog::default();
        log.on = true;
    }

    fn find(&self, key: &Outside) -> Option<Arc<Walked<Arc<DirNode>>>> {
        let walks = self.walks.as_ref()?;
        let found = {
            let mut kept = walks.walks.lock().recover_poison();
            // Walks of another tree are of no use to any later call.
            kept.retain(|w| Arc::ptr_eq(&w.tree, &self.tree));
            let i = kept.iter().position(|w| w.key == *key)?;
            let w = kept.remove(i);
            let found = (w.probes.clone(), w.walk.clone());
            kept.insert(0, w);
            found
        };
        let (probes, walk) = found;
        if probes.iter().all(|p| p.holds(&*self.disk)) {
            walks.reused.fetch_add(1, Ordering::Relaxed);
            return Some(walk);
        }
        let mut kept = walks.walks.lock().recover_poison();
        kept.retain(|w| !Arc::ptr_eq(&w.walk, &walk));
        None
    }

    fn keep_walk(&self, key: Outside, walk: Walked<Arc<DirNode>>) {
        let Some(walks) = &self.walks else {
            return;
        };
        let log = std::mem::take(&mut *self.log.lock().recover_poison());
        if log.unkept {
            return;
        }
        let mut kept = walks.walks.lock().recover_poison();
        kept.retain(|w| Arc::ptr_eq(&w.tree, &self.tree) && w.key != key);
        kept.insert(
            0,
            KeptWalk {
                tree: self.tree.clone(),
                key,
                probes: log.probes.into(),
                walk: Arc::new(walk),
            },
        );
        kept.truncate(WALKS_KEPT);
    }

    fn query(&self) -> Option<Arc<dyn std::any::Any + Send + Sync>> {
        let r = self.remembered.clone()?;
        Some(r)
    }

    fn ruled_out(&self, files: u64) {
        self.skipped.fetch_add(files, Ordering::Relaxed);
    }
}
