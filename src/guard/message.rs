//! Every text the guard shows the model, written once.
//!
//! Each is one line that names what was wrong and what to do next
//! (`contract.md` §7). Model-controlled strings and file names are quoted as
//! JSON strings by [`quote`]: control, bidi and zero-width characters are
//! escaped, so a denial is always one clean line, and the glob call it
//! suggests can be copied as is.

use super::target::Nearest;

/// The quoting of file names and model strings, shared with the tools'
/// texts (`quoting`).
pub(crate) use crate::quoting::quote;

/// The glob call that lists directory `dir` (display form): the `path`
/// argument is left out for the workdir itself.
pub(crate) fn glob_call(dir: &str) -> String {
    if dir == "." {
        r#"glob {"pattern":"*"}"#.to_string()
    } else {
        format!(r#"glob {{"pattern":"*","path":{}}}"#, quote(dir))
    }
}

/// glob, grep or read named a path that does not exist.
/// `arg` is the argument name (`path` or `file_path`), `raw` its value.
pub(crate) fn missing_path(arg: &str, raw: &str, near: &Nearest) -> String {
    let raw = quote(raw);
    match near {
        Nearest::Dir { dir, closest } if closest.is_empty() => format!(
            "{arg} {raw} does not exist; the nearest existing directory, {}, is empty; \
             list the workdir with {}, then retry with a path that exists",
            quote(dir),
            glob_call("."),
        ),
        Nearest::Dir { dir, closest } => format!(
            "{arg} {raw} does not exist; the nearest existing directory is {}, \
             whose closest entries are {}; list it with {}, then retry with a path that exists",
            quote(dir),
            closest
                .iter()
                .map(|c| quote(c))
                .collect::<Vec<_>>()
                .join(", "),
            glob_call(dir),
        ),
        Nearest::File { file, parent } => format!(
            "{arg} {raw} does not exist: {} is a file, not a directory; \
             use that file itself, or list {} with {}",
            quote(file),
            quote(parent),
            glob_call(parent),
        ),
    }
}

/// edit's `old_string` is not in the file (counted as edit counts).
pub(crate) fn edit_not_found(file: &str) -> String {
    format!(
        "old_string was not found in {}; the file may have changed since you read it: \
         read it again, then rebuild old_string from its current content",
        quote(file),
    )
}

/// edit's `old_string` is in the file `count` (> 1) times and `replace_all`
/// is not set.
pub(crate) fn edit_ambiguous(file: &str, count: usize) -> String {
    format!(
        "old_string matches {count} times in {}; include more surrounding lines to make it \
         unique, or set replace_all to true to replace every occurrence",
        quote(file),
    )
}

/// grep found nothing `count` times in a row in `target` (display form).
pub(crate) fn zero_result_block(target: &str, count: u32) -> String {
    format!(
        "grep found no matches in {} {count} times in a row; stop searching it with new \
         patterns: read the file directly, use another source, or report that nothing was found",
        quote(target),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_escapes_controls_bidi_and_zero_width() {
        assert_eq!(quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quote("x\ny\u{1b}[0m"), r#""x\ny\u001b[0m""#);
        assert_eq!(quote("evil\u{202E}txt.rs"), r#""evil\u202etxt.rs""#);
        assert_eq!(quote("a\u{200B}b\u{FEFF}"), r#""a\u200bb\ufeff""#);
        assert_eq!(quote("\u{85}"), r#""\u0085""#);
        assert_eq!(quote("日本語/файл"), "\"日本語/файл\"");
    }

    #[test]
    fn quote_is_valid_json_for_the_same_string() {
        for s in ["plain", "ctl\u{7}", "bidi\u{2067}", "q\"\\", "\u{FFFD}"] {
            let back: String = serde_json::from_str(&quote(s)).unwrap();
            assert_eq!(back, s);
        }
    }

    #[test]
    fn glob_call_for_the_workdir_omits_path() {
        assert_eq!(glob_call("."), r#"glob {"pattern":"*"}"#);
        assert_eq!(glob_call("src"), r#"glob {"pattern":"*","path":"src"}"#);
    }
}
