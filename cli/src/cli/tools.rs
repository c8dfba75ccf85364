//! The model-facing tools on the command line: `glob`, `grep` (text and
//! json formats), `call` and `definitions` (`contract.md` §8).
//!
//! A CLI call is a direct call: over-cap results spill to the local store
//! (when `--session` names an owner) and the result carries its meta.

use std::ffi::OsString;

use dsh_search::tool::definitions;
use serde_json::{json, Map, Value};

use super::{CallArgs, GlobArgs, GrepArgs};
use crate::setup::{fail, load_config, print, run_call, Common, Format};

/// The tools' `path`: text (a JSON string), unlike the raw invocation's.
fn text_path(path: &Option<OsString>) -> Result<Option<&str>, u8> {
    match path {
        None => Ok(None),
        Some(p) => p.to_str().map(Some).ok_or_else(|| {
            fail(format_args!(
                "the path {} is not UTF-8: the tools take text paths (--format raw takes any)",
                p.to_string_lossy()
            ))
        }),
    }
}

/// The arguments glob and grep share: `pattern`, and `path` when given
/// (as UTF-8 text; else the exit code of the refusal, said on stderr).
fn search_args(pattern: &str, path: &Option<OsString>) -> Result<Map<String, Value>, u8> {
    let mut obj = Map::new();
    obj.insert("pattern".into(), json!(pattern));
    if let Some(p) = text_path(path)? {
        obj.insert("path".into(), json!(p));
    }
    Ok(obj)
}

/// `dsh-search glob --format text|json`.
pub(crate) fn glob(common: &Common, args: &GlobArgs) -> u8 {
    match search_args(&args.pattern, &args.path) {
        Ok(obj) => run_call(common, "glob", &Value::Object(obj), args.format),
        Err(code) => code,
    }
}

/// `dsh-search grep --format text|json`.
pub(crate) fn grep(common: &Common, args: &GrepArgs) -> u8 {
    let mut obj = match search_args(&args.pattern, &args.path) {
        Ok(obj) => obj,
        Err(code) => return code,
    };
    if let Some(i) = &args.include {
        obj.insert("include".into(), json!(i));
    }
    run_call(common, "grep", &Value::Object(obj), args.format)
}

/// `dsh-search call TOOL JSON`.
pub(crate) fn call(common: &Common, args: &CallArgs) -> u8 {
    if args.format == Format::Raw {
        return fail("--format raw is only available for glob and grep");
    }
    let value: Value = match serde_json::from_str(&args.arguments) {
        Ok(v) => v,
        Err(e) => return fail(format!("the arguments are not valid JSON: {e}")),
    };
    run_call(common, &args.tool, &value, args.format)
}

/// `dsh-search definitions`.
pub(crate) fn definitions(common: &Common) -> u8 {
    let config = match load_config(common) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    print(&definitions::to_json(&config));
    0
}
