//! How the search tools show what rg printed, as the original tools do on
//! Node: `path.relative` for display paths (`seed-reference.md` §2.3) and
//! the UTF-8-safe line preview (§3.3).

use std::path::Path;

/// The display form of a path rg printed (`seed-reference.md` §2.3,
/// `toWorkdirRelative`): a relative path is returned unchanged; an absolute
/// one is made relative to `workdir` the way Node's `path.relative` does
/// (both sides normalized lexically), unless it lies outside the workdir,
/// in which case the original is kept. The workdir itself displays as `.`.
pub(super) fn display_path(path: &str, workdir: &Path) -> String {
    if !path.starts_with('/') {
        return path.to_string();
    }
    let workdir = std::path::absolute(workdir).unwrap_or_else(|_| workdir.to_path_buf());
    let base = workdir.to_string_lossy();
    let from = normalize(&base);
    let to = normalize(path);
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = vec![".."; from.len() - common];
    parts.extend(&to[common..]);
    let rel = parts.join("/");
    if rel.is_empty() {
        ".".to_string()
    } else if rel == ".." || rel.starts_with("../") {
        path.to_string()
    } else {
        rel
    }
}

/// The segments of an absolute path after lexical normalization: empty and
/// `.` segments dropped, `..` popping (never above the root).
fn normalize(path: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            s => out.push(s),
        }
    }
    out
}

/// The literal suffix of a cut line (`seed-reference.md` §3.3).
pub(super) const LINE_TRUNCATED: &str = " (line truncated)";

/// `previewLine`: a line of at most `max_bytes` UTF-8 bytes unchanged;
/// otherwise its first `max_bytes` bytes, without a character cut in half,
/// and ` (line truncated)`.
pub(super) fn preview_line(line: &str, max_bytes: usize) -> String {
    if line.len() <= max_bytes {
        return line.to_string();
    }
    // For valid UTF-8 the seed's step-back over continuation bytes lands on
    // the previous character boundary.
    let mut end = max_bytes;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{LINE_TRUNCATED}", &line[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_paths() {
        let w = Path::new("/w");
        assert_eq!(display_path("src/a.ts", w), "src/a.ts");
        assert_eq!(display_path("./src/a.ts", w), "./src/a.ts");
        assert_eq!(display_path("/w/src/a.ts", w), "src/a.ts");
        assert_eq!(display_path("/w", w), ".");
        assert_eq!(display_path("/w/", w), ".");
        assert_eq!(display_path("/w//src/./b/../a.ts", w), "src/a.ts");
        assert_eq!(display_path("/w/../up.ts", w), "/w/../up.ts");
        assert_eq!(display_path("/w-sibling/b.ts", w), "/w-sibling/b.ts");
        assert_eq!(display_path("/", w), "/");
        assert_eq!(display_path("/x", Path::new("/")), "x");
        assert_eq!(display_path("/w/a", Path::new("/w/sub/..")), "a");
        assert_eq!(display_path("/w/sub/../a", Path::new("/w/")), "a");
    }

    #[test]
    fn previews() {
        assert_eq!(preview_line("aéaéaéaé", 7), "aéaéa (line truncated)");
        assert_eq!(preview_line("éa", 1), " (line truncated)");
        assert_eq!(preview_line("abc", 3), "abc");
        assert_eq!(preview_line("abcd", 3), "abc (line truncated)");
        assert_eq!(preview_line("a😀", 4), "a (line truncated)");
    }
}
