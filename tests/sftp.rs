//! Remote workspaces over SFTP against a real OpenSSH `sshd` on 127.0.0.1
//! (`docs/contract.md` §11, `tests/util/sshd.rs`).

use std::path::Path;

use dsh_search::cancel::CancelToken;
use dsh_search::fs::{FileSystem, Listing, WriteGuard};

use crate::util::sshd;

#[test]
fn sftp_seam_basics() {
    let td = tempfile::tempdir().unwrap();
    let root = td.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("d/e")).unwrap();
    std::fs::write(root.join("a.txt"), "hello\n").unwrap();
    let big: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(root.join("d/big.bin"), &big).unwrap();
    std::os::unix::fs::symlink("a.txt", root.join("link")).unwrap();
    let fs = sshd::shared_fs();
    assert_eq!(
        fs.canonicalize(&root.join("link")).unwrap(),
        root.join("a.txt")
    );
    let m = fs.metadata(&root.join("a.txt")).unwrap();
    assert!(m.kind.is_file());
    assert_eq!(m.len, 6);
    assert!(fs
        .symlink_metadata(&root.join("link"))
        .unwrap()
        .kind
        .is_symlink());
    assert_eq!(
        fs.read_link(&root.join("link")).unwrap(),
        Path::new("a.txt")
    );
    let dir = fs.open_dir(&root).unwrap();
    let mut listing = Listing::new();
    fs.list(&dir, &mut listing);
    assert!(listing.error().is_none());
    let mut names: Vec<String> = listing
        .iter()
        .map(|(n, _)| String::from_utf8_lossy(n).into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a.txt", "d", "link"]);
    let mut data = Vec::new();
    std::io::Read::read_to_end(
        &mut fs
            .open(&root.join("d/big.bin"), &CancelToken::new())
            .unwrap(),
        &mut data,
    )
    .unwrap();
    assert!(data == big, "the 1 MB file reads back whole");
    let err = fs.metadata(&root.join("missing")).unwrap_err();
    assert_eq!(err.to_string(), "No such file or directory (os error 2)");
    let w = fs
        .write(
            &root.join("new/dir/f.txt"),
            b"x\n",
            &WriteGuard::CreateIfAbsent,
            &CancelToken::new(),
        )
        .unwrap();
    assert!(!w.replaced);
    assert_eq!(std::fs::read(root.join("new/dir/f.txt")).unwrap(), b"x\n");
    assert!(matches!(
        fs.write(
            &root.join("new/dir/f.txt"),
            b"y\n",
            &WriteGuard::CreateIfAbsent,
            &CancelToken::new()
        ),
        Err(dsh_search::fs::WriteError::Exists)
    ));
    let v = w.metadata.version();
    let w2 = fs
        .write(
            &root.join("new/dir/f.txt"),
            b"yy\n",
            &WriteGuard::ReplaceIfVersion(v.clone()),
            &CancelToken::new(),
        )
        .unwrap();
    assert!(w2.replaced);
    assert!(matches!(
        fs.write(
            &root.join("new/dir/f.txt"),
            b"z\n",
            &WriteGuard::ReplaceIfVersion(v),
            &CancelToken::new()
        ),
        Err(dsh_search::fs::WriteError::Stale)
    ));
    assert_eq!(std::fs::read(root.join("new/dir/f.txt")).unwrap(), b"yy\n");
    let names: Vec<_> = std::fs::read_dir(root.join("new/dir"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "no staged file left: {names:?}");
}

/// The conformance tables over SFTP (`util::sftp_share`): every third case
/// of each, the native engine over the shared `sshd` against rg on the
/// same tree, raw and at the tool level.
#[test]
fn sftp_conformance_tables() {
    use crate::conformance as c;
    crate::util::sftp_share(3, 1, || {
        c::basic_glob();
        c::basic_grep();
        c::ignore_files_outside_a_repo();
        c::repositories();
        c::vcs_dirs();
        c::encodings_and_binaries();
        c::haystack_edges();
        c::odd_names();
        c::special_files();
        c::mtime_ties();
        c::mtime_ties_many_dirs();
        c::nothing_searched();
        c::permissions();
        c::double_dot_slash_paths();
        c::relative_gitdir_worktree();
    });
}

/// A share of the random trees over SFTP: every tenth tree, every tenth
/// case of it.
#[test]
fn sftp_random_trees() {
    crate::util::sftp_share(10, 10, crate::random_trees::random_trees_match_rg);
}
