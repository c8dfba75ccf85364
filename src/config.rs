//! Every configuration key of the tools and the guard, in one place, with
//! the seed's defaults and validation messages (`seed-reference.md` §9).
//!
//! A configuration file (`--config FILE.json`) is one JSON object. The keys
//! of the search tools (§9.1), the file tools (§9.2), the local filesystem
//! (§9.3), the spill policy (§9.5) and the local spill store sit at the top
//! level, camelCase as in the seed; the guard's keys sit under `guard`:
//!
//! ```json
//! {"sampleOverCapGlobResults": false, "globMaxResults": 100, "timeoutMs": 30000,
//!  "readLimit": 2000, "maxInlineBytes": 50000,
//!  "guard": {"disabled": false, "maxEditBytes": 2000000, "zeroResultBlock": 5}}
//! ```
//!
//! Every key is optional; an absent key takes the deployment default
//! (`contract.md` §4: head mode, a 30,000 ms timeout, spill-policy at
//! 50,000 bytes). Unknown keys and invalid values are rejected.
//!
//! Each key is one row of one table (`KEYS`, and `GUARD_KEYS` under
//! `guard`): its name, the seed's scope its messages name and how its value
//! is read into its field. The table drives the parse, the rejection of
//! unknown keys and a test that `docs/tools.md` lists exactly these keys;
//! a new key is a row there, its field here and its line in the docs.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Why a configuration was refused, with the file or the key it concerns.
/// Its text is the one the command line, the servers and the Node binding
/// print (the seed's validation messages, `seed-reference.md` §9).
#[derive(Debug)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read (missing, not a regular file, too large,
    /// not UTF-8).
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The file is not JSON.
    Json {
        /// The file.
        path: PathBuf,
        /// Where and why the parse failed.
        source: serde_json::Error,
    },
    /// A key is unknown or holds a value it cannot take, or the
    /// configuration (or its `guard`) is not an object.
    Invalid {
        /// The key as written, under its object (`guard.maxEditBytes`);
        /// `guard` or the empty string when the object itself is wrong.
        key: String,
        /// The seed's message, naming the key and what it must be.
        message: String,
    },
}

impl ConfigError {
    fn invalid(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            key: key.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Read { path, source } => {
                write!(f, "cannot read config file {}: {source}", path.display())
            }
            ConfigError::Json { path, source } => {
                write!(
                    f,
                    "config file {} is not valid JSON: {source}",
                    path.display()
                )
            }
            ConfigError::Invalid { message, .. } => f.write_str(message),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::Read { source, .. } => Some(source),
            ConfigError::Json { source, .. } => Some(source),
            ConfigError::Invalid { .. } => None,
        }
    }
}

/// The largest timer delay a JavaScript runtime accepts
/// (`MAX_TIMER_DELAY_MS`, `seed-reference.md` §9.5).
pub const MAX_TIMER_DELAY_MS: u64 = 2_147_483_647;

/// The largest `diffBasisMaxBytes`: min(Buffer max length, max string
/// length) of the original runtime, which is V8's string limit on 64-bit
/// hosts, 2^29 - 24 (`seed-reference.md` §9.3).
pub const MAX_DIFF_BASIS_BYTES: u64 = 536_870_888;

/// The keys of `tool-fs-search` (`seed-reference.md` §9.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchConfig {
    /// Sample an over-cap glob result across top-level entries instead of
    /// keeping its modification-time-ordered head. The shipped deployment
    /// runs head mode (`false`).
    pub sample_over_cap_glob_results: bool,
    /// Paths a glob shows inline (`globMaxResults`, 100).
    pub glob_max_results: u64,
    /// Matches a grep shows inline (`grepMaxMatches`, 250).
    pub grep_max_matches: u64,
    /// Bytes of one matched line shown before ` (line truncated)`
    /// (`grepMaxLineBytes`, 2000).
    pub grep_max_line_bytes: u64,
    /// Cap on the serialized presentation meta (`searchMetaMaxBytes`, 65,536).
    pub search_meta_max_bytes: u64,
    /// The raw-output budget (`rawOutputMaxBytes`, 20,000,000).
    pub raw_output_max_bytes: u64,
    /// SIGTERM-to-SIGKILL delay for a stopped rg (`graceMs`, 3000).
    pub grace_ms: u64,
    /// stderr bytes kept for error messages (`stderrMaxBytes`, 65,536).
    pub stderr_max_bytes: u64,
    /// The tool timeout of glob and grep (`timeoutMs`, 30,000).
    pub timeout_ms: u64,
}

impl Default for SearchConfig {
    fn default() -> SearchConfig {
        SearchConfig {
            sample_over_cap_glob_results: false,
            glob_max_results: 100,
            grep_max_matches: 250,
            grep_max_line_bytes: 2000,
            search_meta_max_bytes: 65_536,
            raw_output_max_bytes: crate::request::DEFAULT_RAW_OUTPUT_MAX_BYTES,
            grace_ms: 3000,
            stderr_max_bytes: 65_536,
            timeout_ms: 30_000,
        }
    }
}

/// The keys of `tool-fs` (`seed-reference.md` §9.2) and `fs-local` (§9.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsConfig {
    /// Default and maximum `limit` of read (`readLimit`, 2000).
    pub read_limit: u64,
    /// UTF-16 units of one read line before truncation
    /// (`readMaxLineLength`, 2000).
    pub read_max_line_length: u64,
    /// Bytes of selected lines one read returns (`readMaxBytes`, 51,200).
    pub read_max_bytes: u64,
    /// File size from which read streams (`readStreamMinSize`, 10 MiB).
    pub read_stream_min_size: u64,
    /// Size from which a mutation keeps no diff basis
    /// (`diffBasisMaxBytes`, 10 MiB).
    pub diff_basis_max_bytes: u64,
}

impl Default for FsConfig {
    fn default() -> FsConfig {
        FsConfig {
            read_limit: 2000,
            read_max_line_length: 2000,
            read_max_bytes: 51_200,
            read_stream_min_size: 10_485_760,
            diff_basis_max_bytes: 10_485_760,
        }
    }
}

/// spill-policy and spill-local (`seed-reference.md` §3.9, §9.5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpillConfig {
    /// Replace a direct call's text larger than this many UTF-8 bytes with a
    /// head/tail preview and a spill reference (`maxInlineBytes`). `None`:
    /// the policy is off. The deployment default is 50,000.
    pub max_inline_bytes: Option<u64>,
    /// The local spill store's root (`spillRoot`). `None`: a private
    /// `dsh-spill-` directory under the temp dir.
    pub root: Option<PathBuf>,
}

impl Default for SpillConfig {
    fn default() -> SpillConfig {
        SpillConfig {
            max_inline_bytes: Some(50_000),
            root: None,
        }
    }
}

/// The search-path guard's keys (`contract.md` §7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuardConfig {
    /// Turn the guard off (`disabled`, false).
    pub disabled: bool,
    /// Largest file edit's occurrence check reads (`maxEditBytes`, 2,000,000).
    pub max_edit_bytes: u64,
    /// Zero-result greps in a row, per target, before the next is denied
    /// (`zeroResultBlock`, 5).
    pub zero_result_block: u64,
}

impl Default for GuardConfig {
    fn default() -> GuardConfig {
        GuardConfig {
            disabled: false,
            max_edit_bytes: 2_000_000,
            zero_result_block: 5,
        }
    }
}

/// The whole configuration. [`Config::default`] is the deployment default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// glob and grep.
    pub search: SearchConfig,
    /// read, write and edit.
    pub fs: FsConfig,
    /// The spill policy and the local spill store.
    pub spill: SpillConfig,
    /// The guard.
    pub guard: GuardConfig,
    /// Keep a live index of the workspace (`index`, `false`;
    /// `docs/index.md`), where the workspace allows one: the command
    /// line's `--index` as a key. A key of this crate, not of the seed.
    pub index: bool,
    /// How the index learns of changes (`indexWatch`, `"os"`;
    /// `docs/index.md`, "Where there is no watcher"): `"os"`, the system's
    /// watcher where there is one; `"none"`, the mirror validated at each
    /// call. The command line's `--index-watch` as a key.
    pub index_watch: crate::IndexWatch,
}

/// How one key's value is checked and stored.
enum Parse {
    /// A boolean: else `<scope>: <name> must be a boolean`.
    Bool(fn(&mut Config) -> &mut bool),
    /// `Number.isInteger(v) && v >= 1`: else `<scope>: <name> must be a
    /// positive integer`.
    Positive(fn(&mut Config) -> &mut u64),
    /// An object of keys of its own: else `<scope>: the <name>
    /// configuration must be an object`.
    Object(&'static [Key]),
    /// A check of its own, whose error is the whole message.
    Other(fn(&Value, &mut Config) -> Result<(), String>),
}

/// One configuration key: the one place its name, the seed's scope its
/// messages name and its parse are written. [`KEYS`] drives the parse, the
/// rejection of unknown keys and the test that `docs/tools.md` lists
/// exactly these keys; the value lands in its field of [`Config`].
struct Key {
    /// The name, camelCase as in the seed, within its object.
    name: &'static str,
    /// The seed's scope that opens its messages (`seed-reference.md` §9).
    scope: &'static str,
    /// How the value is read.
    parse: Parse,
}

const fn key(name: &'static str, scope: &'static str, parse: Parse) -> Key {
    Key { name, scope, parse }
}

const SEARCH: &str = "tool-fs-search";
const FS: &str = "tool-fs";

/// The top-level keys, in the seed's table order: the first invalid key in
/// this order is the one reported.
const KEYS: &[Key] = &[
    key(
        "sampleOverCapGlobResults",
        SEARCH,
        Parse::Bool(|c| &mut c.search.sample_over_cap_glob_results),
    ),
    key(
        "globMaxResults",
        SEARCH,
        Parse::Positive(|c| &mut c.search.glob_max_results),
    ),
    key(
        "grepMaxMatches",
        SEARCH,
        Parse::Positive(|c| &mut c.search.grep_max_matches),
    ),
    key(
        "grepMaxLineBytes",
        SEARCH,
        Parse::Positive(|c| &mut c.search.grep_max_line_bytes),
    ),
    key(
        "searchMetaMaxBytes",
        SEARCH,
        Parse::Positive(|c| &mut c.search.search_meta_max_bytes),
    ),
    key(
        "rawOutputMaxBytes",
        SEARCH,
        Parse::Positive(|c| &mut c.search.raw_output_max_bytes),
    ),
    key("graceMs", SEARCH, Parse::Other(grace_ms)),
    key(
        "stderrMaxBytes",
        SEARCH,
        Parse::Positive(|c| &mut c.search.stderr_max_bytes),
    ),
    key(
        "timeoutMs",
        SEARCH,
        Parse::Positive(|c| &mut c.search.timeout_ms),
    ),
    key("readLimit", FS, Parse::Positive(|c| &mut c.fs.read_limit)),
    key(
        "readMaxLineLength",
        FS,
        Parse::Positive(|c| &mut c.fs.read_max_line_length),
    ),
    key(
        "readMaxBytes",
        FS,
        Parse::Positive(|c| &mut c.fs.read_max_bytes),
    ),
    key(
        "readStreamMinSize",
        FS,
        Parse::Positive(|c| &mut c.fs.read_stream_min_size),
    ),
    key(
        "diffBasisMaxBytes",
        "fs-local",
        Parse::Other(diff_basis_max_bytes),
    ),
    key(
        "maxInlineBytes",
        "spill-policy",
        Parse::Other(max_inline_bytes),
    ),
    key("spillRoot", "spill-local", Parse::Other(spill_root)),
    key("guard", "guard", Parse::Object(GUARD_KEYS)),
    key("index", "config", Parse::Bool(|c| &mut c.index)),
    key("indexWatch", "config", Parse::Other(index_watch)),
];

/// The keys of the `guard` object (`contract.md` §7).
const GUARD_KEYS: &[Key] = &[
    key("disabled", "guard", Parse::Bool(|c| &mut c.guard.disabled)),
    key(
        "maxEditBytes",
        "guard",
        Parse::Positive(|c| &mut c.guard.max_edit_bytes),
    ),
    key(
        "zeroResultBlock",
        "guard",
        Parse::Positive(|c| &mut c.guard.zero_result_block),
    ),
];

impl Config {
    /// Read and validate a JSON configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = read_config_file(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let value: Value = serde_json::from_str(&text).map_err(|source| ConfigError::Json {
            path: path.to_path_buf(),
            source,
        })?;
        Config::from_json(&value)
    }

    /// Validate a configuration object. Checks run in the seed's table
    /// order, so the first invalid key is the one reported.
    pub fn from_json(value: &Value) -> Result<Config, ConfigError> {
        let Value::Object(obj) = value else {
            return Err(ConfigError::invalid(
                "",
                "config: the configuration must be a JSON object",
            ));
        };
        let mut c = Config::default();
        apply(KEYS, obj, "config", "", &mut c)?;
        Ok(c)
    }
}

/// Check `obj` against `keys` and store what it sets in `c`: first any key
/// not in `keys` (`<scope>: unknown configuration key …`), then each key in
/// the table's order. `prefix` is how the keys are written under their
/// object in [`ConfigError::Invalid`]'s `key` (`guard.`).
fn apply(
    keys: &[Key],
    obj: &Map<String, Value>,
    scope: &str,
    prefix: &str,
    c: &mut Config,
) -> Result<(), ConfigError> {
    if let Some(k) = obj.keys().find(|k| !keys.iter().any(|key| key.name == *k)) {
        let known: Vec<&str> = keys.iter().map(|key| key.name).collect();
        return Err(ConfigError::invalid(
            format!("{prefix}{k}"),
            format!(
                "{scope}: unknown configuration key {} (known keys: {})",
                Value::String(k.clone()),
                known.join(", ")
            ),
        ));
    }
    for key in keys {
        let Some(v) = obj.get(key.name) else {
            continue;
        };
        let (name, scope) = (key.name, key.scope);
        let invalid = |message: String| ConfigError::invalid(format!("{prefix}{name}"), message);
        match &key.parse {
            Parse::Bool(slot) => {
                *slot(c) = v
                    .as_bool()
                    .ok_or_else(|| invalid(format!("{scope}: {name} must be a boolean")))?;
            }
            Parse::Positive(slot) => {
                *slot(c) = positive(v).ok_or_else(|| {
                    invalid(format!("{scope}: {name} must be a positive integer"))
                })?;
            }
            Parse::Object(inner) => {
                let Value::Object(inner_obj) = v else {
                    return Err(invalid(format!(
                        "{scope}: the {name} configuration must be an object"
                    )));
                };
                apply(inner, inner_obj, scope, &format!("{prefix}{name}."), c)?;
            }
            Parse::Other(parse) => parse(v, c).map_err(invalid)?,
        }
    }
    Ok(())
}

/// `graceMs`: a positive integer no greater than [`MAX_TIMER_DELAY_MS`].
fn grace_ms(v: &Value, c: &mut Config) -> Result<(), String> {
    let n = positive(v).ok_or_else(|| format!("{SEARCH}: graceMs must be a positive integer"))?;
    if n > MAX_TIMER_DELAY_MS {
        return Err(format!(
            "tool-fs-search: graceMs must be no greater than {MAX_TIMER_DELAY_MS}"
        ));
    }
    c.search.grace_ms = n;
    Ok(())
}

/// `diffBasisMaxBytes`: a positive integer no greater than
/// [`MAX_DIFF_BASIS_BYTES`].
fn diff_basis_max_bytes(v: &Value, c: &mut Config) -> Result<(), String> {
    c.fs.diff_basis_max_bytes = integer(v)
        .filter(|&n| n >= 1.0 && n <= MAX_DIFF_BASIS_BYTES as f64)
        .map(|n| n as u64)
        .ok_or_else(|| format!(
            "fs-local: diffBasisMaxBytes must be a positive safe integer no greater than {MAX_DIFF_BASIS_BYTES}"
        ))?;
    Ok(())
}

/// `maxInlineBytes`: a non-negative integer, the value quoted as
/// JavaScript's `String(v)` when it is not one.
fn max_inline_bytes(v: &Value, c: &mut Config) -> Result<(), String> {
    let n = integer(v).filter(|&n| n >= 0.0).ok_or_else(|| {
        format!(
            "spill-policy: maxInlineBytes must be a non-negative integer (got {})",
            js_string(v)
        )
    })?;
    c.spill.max_inline_bytes = Some(saturate(n));
    Ok(())
}

/// `spillRoot`: a non-empty string.
fn spill_root(v: &Value, c: &mut Config) -> Result<(), String> {
    let root = v
        .as_str()
        .filter(|r| !r.is_empty())
        .ok_or_else(|| "spill-local: spillRoot must be a non-empty string".to_string())?;
    c.spill.root = Some(PathBuf::from(root));
    Ok(())
}

/// `"os"` or `"none"` ([`crate::IndexWatch`]).
fn index_watch(v: &Value, c: &mut Config) -> Result<(), String> {
    c.index_watch = v
        .as_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| "config: indexWatch must be \"os\" or \"none\"".to_string())?;
    Ok(())
}

/// `Number.isInteger(v) && v >= 1`: the value, saturated to `u64`.
fn positive(v: &Value) -> Option<u64> {
    integer(v).filter(|&n| n >= 1.0).map(saturate)
}

/// The value as a number when it is an integer in JavaScript's sense
/// (`5.0` is one, `1.5` is not).
fn integer(v: &Value) -> Option<f64> {
    let n = v.as_f64()?;
    (n.is_finite() && n.fract() == 0.0).then_some(n)
}

fn saturate(n: f64) -> u64 {
    if n >= u64::MAX as f64 {
        u64::MAX
    } else {
        n as u64
    }
}

/// JavaScript's `String(v)` for a JSON value, as interpolated in the
/// spill-policy message.
fn js_string(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e21 => format!("{f:.0}"),
            _ => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .map(|x| match x {
                Value::Null => String::new(),
                x => js_string(x),
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".to_string(),
    }
}

/// The largest configuration file read: far beyond any real one, and a
/// bound for a path that names `/dev/zero` or a huge file by mistake.
const CONFIG_MAX_BYTES: u64 = 16 * 1024 * 1024;

/// Read a configuration file: a regular file (symlinks followed) of at most
/// [`CONFIG_MAX_BYTES`], as UTF-8. Opened without blocking and checked on
/// the open file, so a FIFO (or a device) is refused at once instead of
/// waiting for a writer forever.
fn read_config_file(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(CONFIG_MAX_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > CONFIG_MAX_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {CONFIG_MAX_BYTES} bytes"
        )));
    }
    String::from_utf8(bytes).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn err(v: Value) -> String {
        Config::from_json(&v).unwrap_err().to_string()
    }

    #[test]
    fn defaults_are_the_deployment() {
        let c = Config::from_json(&json!({})).unwrap();
        assert_eq!(c, Config::default());
        assert!(!c.search.sample_over_cap_glob_results);
        assert_eq!(c.search.glob_max_results, 100);
        assert_eq!(c.search.timeout_ms, 30_000);
        assert_eq!(c.spill.max_inline_bytes, Some(50_000));
        assert_eq!(c.guard.max_edit_bytes, 2_000_000);
    }

    // seed-reference.md §8.1 "config validation".
    #[test]
    fn positive_integer_messages() {
        for (key, v) in [
            ("globMaxResults", json!(0)),
            ("grepMaxMatches", json!(-1)),
            ("grepMaxLineBytes", json!(1.5)),
            ("rawOutputMaxBytes", json!(0)),
            ("graceMs", json!(0)),
            ("stderrMaxBytes", json!(-1)),
            ("timeoutMs", json!(-100)),
            ("searchMetaMaxBytes", json!("10")),
        ] {
            let mut m = Map::new();
            m.insert(key.to_string(), v);
            assert_eq!(
                err(Value::Object(m)),
                format!("tool-fs-search: {key} must be a positive integer")
            );
        }
        assert_eq!(
            err(json!({"graceMs": 2147483648u64})),
            "tool-fs-search: graceMs must be no greater than 2147483647"
        );
        let c = Config::from_json(&json!({"graceMs": 2147483647u64, "globMaxResults": 4.0}));
        assert_eq!(c.unwrap().search.glob_max_results, 4);
    }

    #[test]
    fn table_order_decides_which_error() {
        assert_eq!(
            err(json!({"timeoutMs": 0, "globMaxResults": 0})),
            "tool-fs-search: globMaxResults must be a positive integer"
        );
    }

    #[test]
    fn fs_and_spill_and_guard_messages() {
        assert_eq!(
            err(json!({"readLimit": 0})),
            "tool-fs: readLimit must be a positive integer"
        );
        assert_eq!(
            err(json!({"diffBasisMaxBytes": 536870889u64})),
            "fs-local: diffBasisMaxBytes must be a positive safe integer no greater than 536870888"
        );
        assert_eq!(
            err(json!({"maxInlineBytes": -1})),
            "spill-policy: maxInlineBytes must be a non-negative integer (got -1)"
        );
        assert_eq!(
            err(json!({"maxInlineBytes": 1.5})),
            "spill-policy: maxInlineBytes must be a non-negative integer (got 1.5)"
        );
        assert_eq!(
            err(json!({"maxInlineBytes": "x"})),
            "spill-policy: maxInlineBytes must be a non-negative integer (got x)"
        );
        let c = Config::from_json(&json!({"maxInlineBytes": 0})).unwrap();
        assert_eq!(c.spill.max_inline_bytes, Some(0));
        assert_eq!(
            err(json!({"guard": {"maxEditBytes": 0}})),
            "guard: maxEditBytes must be a positive integer"
        );
        assert_eq!(
            err(json!({"guard": {"disabled": "yes"}})),
            "guard: disabled must be a boolean"
        );
        let c = Config::from_json(&json!({"guard": {"disabled": true, "zeroResultBlock": 2}}));
        let g = c.unwrap().guard;
        assert!(g.disabled);
        assert_eq!(g.zero_result_block, 2);
    }

    #[test]
    fn index_is_a_boolean_key_off_by_default() {
        assert!(!Config::default().index);
        assert!(Config::from_json(&json!({"index": true})).unwrap().index);
        assert_eq!(
            err(json!({"index": "yes"})),
            "config: index must be a boolean"
        );
    }

    #[test]
    fn index_watch_is_os_or_none() {
        assert_eq!(Config::default().index_watch, crate::IndexWatch::Os);
        for (value, want) in [
            ("os", crate::IndexWatch::Os),
            ("none", crate::IndexWatch::None),
        ] {
            let c = Config::from_json(&json!({"indexWatch": value})).unwrap();
            assert_eq!(c.index_watch, want, "{value}");
        }
        for bad in [
            json!("inotify"),
            json!(""),
            json!("None"),
            json!(true),
            json!(null),
        ] {
            assert_eq!(
                err(json!({"indexWatch": bad})),
                "config: indexWatch must be \"os\" or \"none\"",
                "{bad}"
            );
        }
    }

    #[test]
    fn unknown_keys_are_rejected() {
        assert!(err(json!({"globMaxResult": 1})).starts_with(
            "config: unknown configuration key \"globMaxResult\" (known keys: sampleOverCapGlobResults, "
        ));
        assert!(err(json!({"guard": {"max": 1}}))
            .starts_with("guard: unknown configuration key \"max\""));
        assert_eq!(
            err(json!([])),
            "config: the configuration must be a JSON object"
        );
    }

    /// The keys as `docs/tools.md` writes them: `guard.maxEditBytes` for a
    /// key of the guard's object.
    fn documented_names(keys: &[Key], prefix: &str) -> Vec<String> {
        let mut names = Vec::new();
        for key in keys {
            match &key.parse {
                Parse::Object(inner) => {
                    names.extend(documented_names(inner, &format!("{prefix}{}.", key.name)))
                }
                _ => names.push(format!("{prefix}{}", key.name)),
            }
        }
        names
    }

    /// The table of `docs/tools.md`'s "Configuration" section names every
    /// key of [`KEYS`], in its order, and no other.
    #[test]
    fn docs_list_exactly_the_keys() {
        let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/tools.md"))
            .expect("docs/tools.md");
        let section = docs
            .split("\n## ")
            .find(|s| s.starts_with("Configuration\n"))
            .expect("a Configuration section");
        let listed: Vec<String> = section
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split_once("` |"))
            .map(|(name, _)| name.to_string())
            .collect();
        assert_eq!(listed, documented_names(KEYS, ""));
    }

    /// Every row parses a valid value into its own field: a value set
    /// through the table lands where the key says.
    #[test]
    fn every_key_sets_its_field() {
        let c = Config::from_json(&json!({
            "sampleOverCapGlobResults": true, "globMaxResults": 11, "grepMaxMatches": 12,
            "grepMaxLineBytes": 13, "searchMetaMaxBytes": 14, "rawOutputMaxBytes": 15,
            "graceMs": 16, "stderrMaxBytes": 17, "timeoutMs": 18, "readLimit": 19,
            "readMaxLineLength": 20, "readMaxBytes": 21, "readStreamMinSize": 22,
            "diffBasisMaxBytes": 23, "maxInlineBytes": 24, "spillRoot": "/s",
            "guard": {"disabled": true, "maxEditBytes": 25, "zeroResultBlock": 26},
            "index": true
        }))
        .unwrap();
        let s = &c.search;
        assert!(s.sample_over_cap_glob_results);
        assert_eq!(
            [
                s.glob_max_results,
                s.grep_max_matches,
                s.grep_max_line_bytes,
                s.search_meta_max_bytes,
                s.raw_output_max_bytes,
                s.grace_ms,
                s.stderr_max_bytes,
                s.timeout_ms,
                c.fs.read_limit,
                c.fs.read_max_line_length,
                c.fs.read_max_bytes,
                c.fs.read_stream_min_size,
                c.fs.diff_basis_max_bytes,
                c.spill.max_inline_bytes.unwrap(),
                c.guard.max_edit_bytes,
                c.guard.zero_result_block,
            ],
            [11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26]
        );
        assert_eq!(c.spill.root.as_deref(), Some(Path::new("/s")));
        assert!(c.guard.disabled && c.index);
    }

    /// The key each refusal concerns, as written under its object.
    macro_rules! refused_key {
        ($name:ident, $config:expr, $key:expr) => {
            #[test]
            fn $name() {
                match Config::from_json(&$config).unwrap_err() {
                    ConfigError::Invalid { key, .. } => assert_eq!(key, $key),
                    e => panic!("not Invalid: {e:?}"),
                }
            }
        };
    }

    refused_key!(key_of_a_positive, json!({"readLimit": 0}), "readLimit");
    refused_key!(key_of_grace, json!({"graceMs": 2147483648u64}), "graceMs");
    refused_key!(key_of_a_boolean, json!({"index": 1}), "index");
    refused_key!(key_of_index_watch, json!({"indexWatch": "x"}), "indexWatch");
    refused_key!(key_of_spill_root, json!({"spillRoot": ""}), "spillRoot");
    refused_key!(key_of_an_unknown, json!({"nope": 1}), "nope");
    refused_key!(
        key_in_guard,
        json!({"guard": {"maxEditBytes": 0}}),
        "guard.maxEditBytes"
    );
    refused_key!(key_unknown_in_guard, json!({"guard": {"x": 0}}), "guard.x");
    refused_key!(key_of_guard_itself, json!({"guard": 1}), "guard");
    refused_key!(key_of_the_whole, json!(1), "");

    /// A file that cannot be read, or is not JSON: the error holds the
    /// path, and says what it always said.
    #[test]
    fn file_errors_hold_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.json");
        let e = Config::load(&missing).unwrap_err();
        assert!(
            matches!(&e, ConfigError::Read { path, .. } if *path == missing),
            "{e:?}"
        );
        assert!(e
            .to_string()
            .starts_with(&format!("cannot read config file {}: ", missing.display())));
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{").unwrap();
        let e = Config::load(&bad).unwrap_err();
        assert!(
            matches!(&e, ConfigError::Json { path, .. } if *path == bad),
            "{e:?}"
        );
        assert!(e.to_string().starts_with(&format!(
            "config file {} is not valid JSON: ",
            bad.display()
        )));
    }
}
