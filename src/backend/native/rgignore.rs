//! rg's ignore decisions (`--glob` overrides, `.rgignore`, `.ignore`,
//! `.gitignore`, `info/exclude`, the global excludes file, hidden entries)
//! computed on the path strings rg itself walks.
//!
//! ignore 0.4.29 matches ignore files by stripping byte prefixes of the
//! walked path (`dir.rs: Ignore::matched`, `matched_ignore`;
//! `gitignore.rs: Gitignore::strip`), and rg walks paths relative to its
//! CWD. The engine walks absolute paths (it never uses the process's current
//! directory), and on those the crate's stripping lines up where rg's does
//! not: a path typed with two leading `./` (`./.`, `././src`) makes rg match
//! every ignore file at or below the root against the path relative to the
//! CWD. The crate also resolves a relative `gitdir:` in a `.git` file and a
//! relative `core.excludesFile` against the process's current directory,
//! which for rg is the workdir. So for the grep walk the crate's own filters
//! are turned off and this module decides every entry through
//! `WalkBuilder::filter_entry`, with matchers built by the crate's public
//! `GitignoreBuilder` on rg's strings and files read at their absolute paths.

use crate::sync::RecoverPoison;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::overrides::Override;
use ignore::{Error, Match};

use crate::fs::names::{path as bytes_path, path_bytes};
use crate::fs::{FsHints, Listing};

use super::globstack::{nesting_bound, nesting_bound_lines, with_stack_for, MAX_NESTING, TOO_DEEP};
use super::messages::{at_path, walk_error};
use super::paths::Root;

/// The ignore files of one directory (`dir.rs: IgnoreInner`).
struct Rules {
    custom: Arc<Gitignore>,
    ignore: Arc<Gitignore>,
    git: Arc<Gitignore>,
    exclude: Arc<Gitignore>,
    has_git: bool,
}

/// The matcher of no file: what rg builds for an ignore file it cannot
/// read.
fn empty() -> Arc<Gitignore> {
    static EMPTY: std::sync::OnceLock<Arc<Gitignore>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(|| Arc::new(Gitignore::empty())).clone()
}

/// A matcher built from an ignore file, and the errors building it gave.
type Built = (Arc<Gitignore>, Vec<Error>);

/// The matchers built from ignore files, by everything a build depends on:
/// the directory it is rooted at, the path its errors name and the file's
/// bytes. The paths are keys as bytes, never as `Path`s: `Path` equality
/// compares components, so `./././sub` and `./sub` would be one key, and
/// rg roots the matcher at the string as walked (its prefix stripping
/// tells them apart). A call that reads a file with the same bytes as an earlier call
/// gets the same matcher and the same errors without compiling its globs
/// again (the compile, not the read, is most of an ignore file's cost: a
/// long-lived workspace reads the same few hundred files at every call).
/// Bounded: emptied when it holds more than [`MEMO_MAX_BYTES`] of files
/// and paths (a compiled matcher takes a few times its file's bytes; the
/// Linux tree's ignore files, about 500, are under 100 KiB). Each engine
/// keeps its own ([`IgnoreMemo`]).
#[derive(Default)]
pub(crate) struct Memo {
    built: std::collections::HashMap<MemoKey, Built>,
    bytes: usize,
}

/// An ignore file's root as walked, the path its errors name, its bytes.
type MemoKey = (Vec<u8>, Vec<u8>, Vec<u8>);

const MEMO_MAX_BYTES: usize = 2 << 20;

/// An engine's [`Memo`], shared by the walks of its calls.
pub(crate) type IgnoreMemo = Arc<Mutex<Memo>>;

impl Memo {
    /// How many matchers are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.built.len()
    }
}

/// A directory at or below the search root, with its ancestors up to it.
pub(crate) struct Node {
    rules: Rules,
    /// The directory as rg walks it (the typed root joined with names).
    rg_dir: PathBuf,
    /// Whether this directory or one between it and the root is a repo.
    any_git: bool,
    parent: Option<Arc<Node>>,
}

impl Node {
    /// The directory as rg walks it.
    pub(crate) fn rg_dir(&self) -> &Path {
        &self.rg_dir
    }
}

/// One grep call's ignore state, shared by the walker's threads.
pub(crate) struct RgIgnore {
    root: Root,
    real_workdir: PathBuf,
    overrides: Override,
    global: Gitignore,
    /// The global excludes file the filesystem named, and its bytes.
    global_source: Option<(PathBuf, Vec<u8>)>,
    /// `add_parents`: the canonical root and its ancestors' rules, nearest
    /// first; `None` when the root cannot be canonicalized.
    abs_base: Option<PathBuf>,
    parents: Vec<Rules>,
    parents_any_git: bool,
    /// Whether no parent has an ignore rule: then matching them is skipped
    /// (an empty matcher answers `None`), and with it a path join per entry.
    parents_empty: bool,
    root_node: Arc<Node>,
    /// Ignore-file errors: (message, whether rg counts it as an error).
    messages: Mutex<Vec<(String, bool)>>,
    /// Where the matchers of the files read are kept for later calls
    /// (the engine's).
    memo: IgnoreMemo,
}

/// [`RgIgnore::outside`].
pub(crate) struct Outside {
    globs: Vec<String>,
    workdir: Vec<u8>,
    given: Vec<u8>,
    walk: Vec<u8>,
    implicit: bool,
    abs_base: Option<Vec<u8>>,
    /// The parents' rules from `/` down, then the root's.
    rules: Vec<([Arc<Gitignore>; 4], bool)>,
    global: Option<(PathBuf, Vec<u8>)>,
}

impl PartialEq for Outside {
    fn eq(&self, other: &Outside) -> bool {
        let same_rules = |a: &([Arc<Gitignore>; 4], bool), b: &([Arc<Gitignore>; 4], bool)| {
            a.1 == b.1 && a.0.iter().zip(&b.0).all(|(x, y)| Arc::ptr_eq(x, y))
        };
        self.globs == other.globs
            && self.workdir == other.workdir
            && self.given == other.given
            && self.walk == other.walk
            && self.implicit == other.implicit
            && self.abs_base == other.abs_base
            && self.rules.len() == other.rules.len()
            && self
                .rules
                .iter()
                .zip(&other.rules)
                .all(|(a, b)| same_rules(a, b))
            && self.global == other.global
    }
}

enum M {
    None,
    Ignore,
    Whitelist,
}

fn to_match<T>(m: Match<T>) -> M {
    match m {
        Match::None => M::None,
        Match::Ignore(_) => M::Ignore,
        Match::Whitelist(_) => M::Whitelist,
    }
}

/// `pathutil.rs: strip_prefix`: byte-wise on Unix; on Windows
/// `Path::strip_prefix`, component by component (`./x` and `.\\x` both
/// lose `./`, and `/w` is not a prefix of `/wx`).
fn strip_if<'a>(prefix: &[u8], path: &'a Path) -> std::borrow::Cow<'a, Path> {
    #[cfg(windows)]
    {
        use std::borrow::Cow;
        match path.strip_prefix(bytes_path(prefix).as_ref()) {
            Ok(r) => Cow::Borrowed(r),
            Err(_) => Cow::Borrowed(path),
        }
    }
    #[cfg(not(windows))]
    match path_bytes(path).strip_prefix(prefix) {
        Some(r) => bytes_path(r),
        None => std::borrow::Cow::Borrowed(path),
    }
}

/// Several errors of one directory are reported as one message, the way
/// `PartialErrorBuilder::into_error_option` combines them.
fn combine(mut errs: Vec<Error>) -> Option<Error> {
    match errs.len() {
        0 => None,
        1 => errs.pop(),
        _ => Some(Error::Partial(errs)),
    }
}

/// `dir.rs: create_gitignore`: a matcher rooted at rg's directory string,
/// read from `file`, its errors naming the file `shown` (what rg calls it);
/// I/O errors are dropped.
///
/// Most directories hold none of the names, so an absent file costs one
/// failed read and no matcher is built: rg stats the name first
/// (`create_gitignore`) and builds an empty matcher, whose `matched`
/// answers `None` like [`Gitignore::empty`]. Any read error means the
/// crate's `add` would fail with an I/O error, which is dropped too.
///
/// The file is read with [`FileSystem::read_control`], which never blocks:
/// rg opens these files with a plain blocking `open`, so a FIFO named
/// `.gitignore` hangs it until a writer shows up; the rg backend can kill
/// that rg, but nothing could interrupt a thread of this process blocked in
/// `open(2)`. Such a file is read as absent instead: the one place where
/// the engine deliberately does not copy rg (which never finishes there).
fn create<F: FsHints>(
    fs: &F,
    memo: &IgnoreMemo,
    rg_dir: &Path,
    file: &Path,
    shown: &Path,
    errs: &mut Vec<Error>,
) -> Arc<Gitignore> {
    let Ok(data) = fs.read_control(file) else {
        return empty();
    };
    let key = (
        path_bytes(rg_dir).to_vec(),
        path_bytes(shown).to_vec(),
        data,
    );
    if let Some((gi, built_errs)) = memo.lock().recover_poison().built.get(&key) {
        errs.extend(built_errs.iter().cloned());
        return gi.clone();
    }
    let (gi, built_errs) = compile(rg_dir, &key.2, shown);
    errs.extend(built_errs.iter().cloned());
    let size = key.0.len() + key.1.len() + key.2.len();
    let mut memo = memo.lock().recover_poison();
    if memo.bytes + size > MEMO_MAX_BYTES {
        memo.built.clear();
        memo.bytes = 0;
    }
    memo.bytes += size;
    memo.built.insert(key, (gi.clone(), built_errs));
    gi
}

/// The matcher of one ignore file's bytes, rooted at `rg_dir`, with the
/// errors that name it `shown`.
fn compile(rg_dir: &Path, data: &[u8], shown: &Path) -> Built {
    // The builder lives and dies on a stack deep enough for the file's
    // globs (`globstack`).
    with_stack_for(nesting_bound_lines(data), || {
        let mut errs = Vec::new();
        let mut b = GitignoreBuilder::new(rg_dir);
        if let Some(e) = add_lines(&mut b, data, shown) {
            if !e.is_io() {
                errs.push(e);
            }
        }
        match b.build() {
            Ok(gi) => (Arc::new(gi), errs),
            Err(e) => {
                errs.push(e);
                (empty(), errs)
            }
        }
    })
    .unwrap_or_else(|why| {
        let err = at_path(Error::Io(std::io::Error::other(why)), shown);
        (empty(), vec![err])
    })
}

/// `GitignoreBuilder::add` (ignore 0.4.29 `gitignore.rs: add`) on a file
/// read already, with its errors naming it `shown`: line by line
/// (`BufRead::lines`), a UTF-8 BOM trimmed from the first, a read error (a
/// line that is not UTF-8) ending the file; each error tagged with the path
/// and the line number (`Error::tagged`), several combined.
fn add_lines(b: &mut GitignoreBuilder, data: &[u8], shown: &Path) -> Option<Error> {
    let tagged = |err: Error, line: u64| {
        let err = Error::WithLineNumber {
            line,
            err: Box::new(err),
        };
        if shown.as_os_str().is_empty() {
            err
        } else {
            at_path(err, shown)
        }
    };
    let mut errs = Vec::new();
    for (i, line) in data.lines().enumerate() {
        let lineno = (i + 1) as u64;
        let line = match line {
            Ok(line) => line,
            Err(e) => {
                errs.push(tagged(Error::Io(e), lineno));
                break;
            }
        };
        let line = if i == 0 {
            line.trim_start_matches('\u{feff}')
        } else {
            &line
        };
        // Deeper than any glob rg could be handed: refused uncompiled
        // (rg itself overflows its walker's stack on such a line).
        if nesting_bound(line) > MAX_NESTING {
            let err = Error::Glob {
                glob: Some(line.to_string()),
                err: TOO_DEEP.to_string(),
            };
            errs.push(tagged(err, lineno));
            continue;
        }
        if let Err(e) = b.add_line(Some(shown.to_path_buf()), line) {
            errs.push(tagged(e, lineno));
        }
    }
    combine(errs)
}

/// The first line of a control file (`BufRead::lines`, as
/// `resolve_git_commondir` reads it).
fn first_line(data: &[u8]) -> Option<Result<String, std::io::Error>> {
    data.lines().next()
}

impl Rules {
    /// `dir.rs: add_child_path_with_found_ignore_files` for the directory
    /// rg walks as `rg_dir`, found at `abs`. Relative `gitdir:`/`commondir`
    /// paths are resolved against the workdir, rg's CWD.
    ///
    /// `listed` is the directory's listing when the caller has read it;
    /// otherwise it is read here.
    fn build<F: FsHints>(
        fs: &F,
        memo: &IgnoreMemo,
        rg_dir: &Path,
        abs: &Path,
        real_workdir: &Path,
        listed: Option<NamesPresent>,
        errs: &mut Vec<Error>,
    ) -> Rules {
        let listed = listed.or_else(|| NamesPresent::read(fs, abs));
        let maybe = |name: &[u8]| listed.as_ref().is_none_or(|l| l.has(name));
        let git_type = maybe(b".git")
            .then(|| fs.metadata(&abs.join(".git")).ok().map(|m| m.kind))
            .flatten();
        // `.jj` only counts when there is no `.git` (`has_git`).
        let has_jj = git_type.is_none() && maybe(b".jj") && fs.metadata(&abs.join(".jj")).is_ok();
        let mut create_if = |name: &str| {
            if maybe(name.as_bytes()) {
                let file = abs.join(name);
                create(fs, memo, rg_dir, &file, &file, errs)
            } else {
                empty()
            }
        };
        let custom = create_if(".rgignore");
        let ignore = create_if(".ignore");
        let git = create_if(".gitignore");
        let exclude = match git_type {
            // Without a `.git`, `.git/info/exclude` cannot exist: rg's stat
            // of it fails and it builds an empty matcher.
            None => empty(),
            Some(t) => match commondir(fs, abs, real_workdir, t.is_file()) {
                Ok((dir, shown)) => create(
                    fs,
                    memo,
                    rg_dir,
                    &dir.join("info/exclude"),
                    &shown.join("info/exclude"),
                    errs,
                ),
                Err(e) => {
                    errs.extend(e);
                    empty()
                }
            },
        };
        Rules {
            custom,
            ignore,
            git,
            exclude,
            has_git: git_type.is_some() || has_jj,
        }
    }
}

/// Which of the names rg looks up in a directory its listing holds.
///
/// rg's parallel walker looks up only the names of the listing it has just
/// read (ignore 0.4.29 `dir.rs: add_child_with_entries`). The engine's
/// own walk (`serial_walk`) notes them while listing a directory; for the
/// parents and the crate's walker (a symlinked root) one listing of the
/// directory (`open`, two `getdents64`, `close`) answers all five. A name
/// the listing holds is then looked up; when the listing cannot be read,
/// every name is looked up.
#[derive(Clone, Copy, Default)]
pub(crate) struct NamesPresent(u8);

const NAMES: [&[u8]; 5] = [b".git", b".jj", b".rgignore", b".ignore", b".gitignore"];

impl NamesPresent {
    fn read<F: FsHints>(fs: &F, abs: &Path) -> Option<NamesPresent> {
        let dir = fs.open_dir(abs).ok()?;
        let mut listing = Listing::new();
        fs.list(&dir, &mut listing);
        if listing.error().is_some() {
            return None;
        }
        let mut listed = NamesPresent::default();
        for (name, _) in listing.iter() {
            listed.note(name);
        }
        Some(listed)
    }

    /// Note one name of the directory's listing.
    pub(crate) fn note(&mut self, name: &[u8]) {
        if let Some(i) = NAMES.iter().position(|n| *n == name) {
            self.0 |= 1 << i;
        }
    }

    fn has(&self, name: &[u8]) -> bool {
        NAMES
            .iter()
            .position(|n| *n == name)
            .is_none_or(|i| self.0 & (1 << i) != 0)
    }
}

/// An I/O error about `path`.
fn with_path(e: std::io::Error, path: &Path) -> Error {
    at_path(Error::Io(e), path)
}

/// `dir.rs: resolve_git_commondir`, with the workdir standing in for
/// the process's current directory.
fn commondir<F: FsHints>(
    fs: &F,
    abs: &Path,
    real_workdir: &Path,
    dot_git_is_file: bool,
) -> Result<(PathBuf, PathBuf), Option<Error>> {
    let git = abs.join(".git");
    if !dot_git_is_file {
        return Ok((git.clone(), git));
    }
    let data = fs
        .read_control(&git)
        .map_err(|e| Some(with_path(e, &git)))?;
    let line = match first_line(&data) {
        Some(Ok(l)) => l,
        Some(Err(e)) => return Err(Some(with_path(e, &git))),
        None => return Err(None),
    };
    let Some(real) = line.strip_prefix("gitdir: ") else {
        return Err(None);
    };
    // rg names these files by the paths as written (relative ones resolved
    // against its CWD when opened); the engine opens them below `real_workdir`.
    let shown_real = PathBuf::from(real);
    let real = real_workdir.join(&shown_real);
    let file = real.join("commondir");
    let Ok(data) = fs.read_control(&file) else {
        return Err(None);
    };
    let line = match first_line(&data) {
        Some(Ok(l)) => l,
        Some(Err(e)) => return Err(Some(with_path(e, &shown_real.join("commondir")))),
        None => return Err(None),
    };
    Ok(if line.starts_with('.') {
        (real.join(&line), shown_real.join(&line))
    } else {
        (real_workdir.join(&line), PathBuf::from(line))
    })
}

impl RgIgnore {
    /// The state for walking `root` (a directory, whose listing the caller
    /// has read when `listed` is given) from the workdir `real_workdir` with the
    /// include globs `overrides`. Errors of the parents' ignore files are
    /// recorded here, as the walker reports them.
    pub(crate) fn with_root_listing<F: FsHints>(
        fs: &F,
        root: &Root,
        real_workdir: &Path,
        overrides: Override,
        memo: &IgnoreMemo,
        listed: Option<NamesPresent>,
    ) -> RgIgnore {
        let walk = root.walk_path();
        let mut parents = Vec::new();
        let mut parent_errs = Vec::new();
        // The workdir is canonical already: a root that is the workdir
        // (no path, `.`, `./`) needs no second resolution. Not on Windows,
        // where the workdir is the path as given and `canonicalize` returns
        // the verbatim form that rg.exe names the parents' files by.
        let is_wc = cfg!(not(windows))
            && path_bytes(walk)
                .strip_prefix(path_bytes(real_workdir))
                .is_some_and(|rest| rest.is_empty() || rest == b"/");
        let abs_base = if is_wc {
            Some(real_workdir.to_path_buf())
        } else {
            fs.canonicalize(walk).ok()
        };
        if let Some(base) = &abs_base {
            // Built from `/` down, as `add_parents` does (the order of its
            // errors), matched nearest first.
            let ancestors: Vec<&Path> = base.ancestors().skip(1).collect();
            for p in ancestors.into_iter().rev() {
                // `has_git` as `add_parents` computes it (`.git` or `.jj`
                // exists, links followed), from the names the listing holds.
                parents.push(Rules::build(
                    fs,
                    memo,
                    p,
                    p,
                    real_workdir,
                    None,
                    &mut parent_errs,
                ));
            }
            parents.reverse();
        }
        let parents_any_git = parents.iter().any(|r| r.has_git);
        let parents_empty = parents.iter().all(|r| {
            r.custom.is_empty() && r.ignore.is_empty() && r.git.is_empty() && r.exclude.is_empty()
        });
        let mut messages = Vec::new();
        if let Some(e) = combine(parent_errs) {
            // Parents are read at their absolute paths, also when the walk
            // root lies below one (`.git/` names `<real_workdir>/.git/info/exclude`).
            messages.push((e.to_string(), true));
        }
        let mut root_errs = Vec::new();
        let rules = Rules::build(
            fs,
            memo,
            root.given(),
            walk,
            real_workdir,
            listed,
            &mut root_errs,
        );
        if let Some(e) = combine(root_errs) {
            messages.push((walk_error(&e, root), false));
        }
        let root_node = Arc::new(Node {
            any_git: rules.has_git,
            rules,
            rg_dir: root.given().to_path_buf(),
            parent: None,
        });
        let global_source = fs.git_global_excludes(real_workdir);
        RgIgnore {
            root: root.clone(),
            real_workdir: real_workdir.to_path_buf(),
            overrides,
            global: global(global_source.as_ref(), real_workdir),
            global_source,
            abs_base,
            parents,
            parents_any_git,
            parents_empty,
            root_node,
            messages: Mutex::new(messages),
            memo: memo.clone(),
        }
    }

    /// The messages to print: (text, whether it makes rg exit 2).
    pub(crate) fn take_messages(&self) -> Vec<(String, bool)> {
        std::mem::take(&mut *self.messages.lock().recover_poison())
    }

    /// How many messages are waiting ([`RgIgnore::take_messages`]).
    pub(crate) fn messages_len(&self) -> usize {
        self.messages.lock().recover_poison().len()
    }

    /// The messages waiting from the `from`-th on.
    pub(crate) fn messages_from(&self, from: usize) -> Vec<(String, bool)> {
        let messages = self.messages.lock().recover_poison();
        messages.get(from..).unwrap_or_default().to_vec()
    }

    /// Add messages (a kept walk's, `kept.rs`) after those waiting.
    pub(crate) fn add_messages(&self, more: &[(String, bool)]) {
        self.messages
            .lock()
            .recover_poison()
            .extend_from_slice(more);
    }

    /// What the walk's decisions below the root depend on besides the
    /// tree below it: the include globs, the workdir, the root as typed,
    /// and the rules read outside that tree (the parents' ignore files,
    /// the global excludes file) and at the root (its own files, read at
    /// every call). Two calls with equal `Outside`s over the same tree
    /// decide every entry alike (`kept.rs`). Matchers compare by identity:
    /// built from the same bytes they are the same matcher (the memo);
    /// held here, one freed cannot be mistaken for a new one at its address.
    pub(crate) fn outside(&self, globs: &[String]) -> Outside {
        let rules = |r: &Rules| {
            [
                r.custom.clone(),
                r.ignore.clone(),
                r.git.clone(),
                r.exclude.clone(),
            ]
        };
        Outside {
            globs: globs.to_vec(),
            workdir: path_bytes(&self.real_workdir).to_vec(),
            given: path_bytes(self.root.given()).to_vec(),
            walk: path_bytes(self.root.walk_path()).to_vec(),
            implicit: self.root.is_implicit(),
            abs_base: self.abs_base.as_deref().map(|p| path_bytes(p).to_vec()),
            rules: self
                .parents
                .iter()
                .chain(std::iter::once(&self.root_node.rules))
                .map(|r| (rules(r), r.has_git))
                .collect(),
            global: self.global_source.clone(),
        }
    }

    /// A directory's ignore-file errors, as one message that does not
    /// change the exit code (`ignore_message!`).
    fn report(&self, errs: Vec<Error>) {
        if let Some(e) = combine(errs) {
            let msg = walk_error(&e, &self.root);
            self.messages.lock().recover_poison().push((msg, false));
        }
    }

    /// The search root.
    pub(crate) fn root(&self) -> &Root {
        &self.root
    }

    /// The root directory's rules.
    pub(crate) fn root_node(&self) -> &Arc<Node> {
        &self.root_node
    }

    /// The rules of `abs`, a directory below `parent` that rg walks as
    /// `rg_dir` and whose listing is `listed`, its ignore-file errors
    /// reported (`Work::read_dir`: rg reads them when it lists the
    /// directory, whatever becomes of its entries).
    pub(crate) fn enter<F: FsHints>(
        &self,
        fs: &F,
        parent: &Arc<Node>,
        abs: &Path,
        rg_dir: PathBuf,
        listed: NamesPresent,
    ) -> Arc<Node> {
        let mut errs = Vec::new();
        let rules = Rules::build(
            fs,
            &self.memo,
            &rg_dir,
            abs,
            &self.real_workdir,
            Some(listed),
            &mut errs,
        );
        self.report(errs);
        Arc::new(Node {
            any_git: rules.has_git || parent.any_git,
            rules,
            rg_dir,
            parent: Some(parent.clone()),
        })
    }

    /// Whether rg keeps the entry `name` of the directory `node`, walked as
    /// `rg_path` (its directory's `rg_dir` joined with `name`);
    /// `hidden_attr`: the listing marked it hidden by its attributes.
    pub(crate) fn decide(
        &self,
        node: &Arc<Node>,
        rg_path: &Path,
        name: &[u8],
        is_dir: bool,
        hidden_attr: bool,
    ) -> bool {
        let path = strip_if(b"./", rg_path);
        let path: &Path = &path;
        if !self.overrides.is_empty() {
            match to_match(self.overrides.matched(path, is_dir)) {
                M::Ignore => return false,
                M::Whitelist => return true,
                M::None => {}
            }
        }
        match self.matched_ignore(node, path, is_dir) {
            M::Ignore => false,
            M::Whitelist => true,
            M::None => !hidden_attr && !is_hidden(name),
        }
    }

    fn matched_ignore(&self, node: &Arc<Node>, path: &Path, is_dir: bool) -> M {
        let any_git = node.any_git || self.parents_any_git;
        let mut m = [M::None, M::None, M::None, M::None];
        let mut saw_git = false;
        let mut check = |r: &Rules, p: &Path, saw_git: &mut bool| {
            if matches!(m[0], M::None) {
                m[0] = to_match(r.custom.matched(p, is_dir));
            }
            if matches!(m[1], M::None) {
                m[1] = to_match(r.ignore.matched(p, is_dir));
            }
            if any_git && !*saw_git && matches!(m[2], M::None) {
                m[2] = to_match(r.git.matched(p, is_dir));
            }
            if any_git && !*saw_git && matches!(m[3], M::None) {
                m[3] = to_match(r.exclude.matched(p, is_dir));
            }
            *saw_git = *saw_git || r.has_git;
        };
        let mut n = Some(node);
        let mut last = node;
        while let Some(nd) = n {
            check(&nd.rules, path, &mut saw_git);
            last = nd;
            n = nd.parent.as_ref();
        }
        if let Some(base) = self.abs_base.as_ref().filter(|_| !self.parents_empty) {
            // `matched_ignore`: the path below the root, joined to the
            // canonical root.
            let p = if last.rg_dir.as_path() == Path::new(".") {
                base.join(path)
            } else {
                let dir = strip_if(b"./", &last.rg_dir);
                let rel = strip_if(path_bytes(&dir), path);
                base.join(strip_if(b"/", &rel))
            };
            for r in &self.parents {
                check(r, &p, &mut saw_git);
            }
        }
        let global = if any_git {
            to_match(self.global.matched(path, is_dir))
        } else {
            M::None
        };
        let [c, i, g, x] = m;
        for r in [c, i, g, x, global] {
            if !matches!(r, M::None) {
                return r;
            }
        }
        M::None
    }
}

/// `pathutil.rs: is_hidden` on the file name (`file_name`). On Windows,
/// the name starts with `.` (`Path::file_name`, then `to_str`: a name with
/// an unpaired surrogate is not hidden by its name); the attribute is the
/// listing's ([`crate::fs::Listing::is_hidden`]).
#[cfg(windows)]
fn is_hidden(b: &[u8]) -> bool {
    b.first() == Some(&b'.') && std::str::from_utf8(b).is_ok()
}

/// `pathutil.rs: is_hidden` on the file name (`file_name`).
#[cfg(not(windows))]
fn is_hidden(b: &[u8]) -> bool {
    if b.is_empty() || b.ends_with(b".") {
        return false;
    }
    let name = match b.iter().rposition(|&c| c == b'/') {
        Some(i) => &b[i + 1..],
        None => b,
    };
    name.first() == Some(&b'.')
}

/// `GitignoreBuilder::build_global` rooted at the CWD (`dir.rs:
/// build_with_cwd`), from the excludes file the workspace's filesystem
/// names (a relative one resolved against the workdir); its errors are
/// only logged by rg.
fn global(source: Option<&(PathBuf, Vec<u8>)>, real_workdir: &Path) -> Gitignore {
    let Some((path, data)) = source else {
        return Gitignore::empty();
    };
    with_stack_for(nesting_bound_lines(data), || {
        let mut b = GitignoreBuilder::new(real_workdir);
        let _ = add_lines(&mut b, data, path);
        b.build().unwrap_or_else(|_| Gitignore::empty())
    })
    .unwrap_or_else(|_| Gitignore::empty())
}
