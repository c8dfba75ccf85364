//! The model-facing tools on the command line: `glob`, `grep` (text and
//! json formats), `call` and `definitions` (`contract.md` §8).
//!
//! A CLI call is a direct call: over-cap results spill to the local store
//! (when `--session` names an owner) and the result carries its meta.

use dsh_search::tool::definitions;
use serde_json::{json, Map, Value};

use super::setup::{load_config, print, run_call};
use super::{CallArgs, Common, Format, GlobArgs, GrepArgs};

/// `dsh-search glob --format text|json`.
pub(crate) fn glob(common: &Common, args: &GlobArgs) -> u8 {
    let mut obj = Map::new();
    obj.insert("pattern".into(), json!(args.pattern));
    if let Some(p) = &args.path {
        obj.insert("path".into(), json!(p));
    }
    run_call(common, "glob", &Value::Object(obj), args.format)
}

/// `dsh-search grep --format text|json`.
pub(crate) fn grep(common: &Common, args: &GrepArgs) -> u8 {
    let mut obj = Map::new();
    obj.insert("pattern".into(), json!(args.pattern));
    if let Some(p) = &args.path {
        obj.insert("path".into(), json!(p));
    }
    if let Some(i) = &args.include {
        obj.insert("include".into(), json!(i));
    }
    run_call(common, "grep", &Value::Object(obj), args.format)
}

/// `dsh-search call TOOL JSON`.
pub(crate) fn call(common: &Common, args: &CallArgs) -> u8 {
    if args.format == Format::Raw {
        return super::fail("--format raw is only available for glob and grep");
    }
    let value: Value = match serde_json::from_str(&args.arguments) {
        Ok(v) => v,
        Err(e) => return super::fail(format!("the arguments are not valid JSON: {e}")),
    };
    run_call(common, &args.tool, &value, args.format)
}

/// `dsh-search definitions`.
pub(crate) fn definitions(common: &Common) -> u8 {
    let config = match load_config(common) {
        Ok(c) => c,
        Err(e) => return super::fail(e),
    };
    print(&definitions::to_json(&config));
    0
}
