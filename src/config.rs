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

/// The top-level keys, in validation order.
const TOP_KEYS: &[&str] = &[
    "sampleOverCapGlobResults",
    "globMaxResults",
    "grepMaxMatches",
    "grepMaxLineBytes",
    "searchMetaMaxBytes",
    "rawOutputMaxBytes",
    "graceMs",
    "stderrMaxBytes",
    "timeoutMs",
    "readLimit",
    "readMaxLineLength",
    "readMaxBytes",
    "readStreamMinSize",
    "diffBasisMaxBytes",
    "maxInlineBytes",
    "spillRoot",
    "guard",
    "index",
    "indexWatch",
];

const GUARD_KEYS: &[&str] = &["disabled", "maxEditBytes", "zeroResultBlock"];

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
        reject_unknown(obj, TOP_KEYS, "config")?;
        let mut c = Config::default();
        let s = &mut c.search;
        if let Some(v) = obj.get("sampleOverCapGlobResults") {
            s.sample_over_cap_glob_results = v.as_bool().ok_or_else(|| {
                ConfigError::invalid(
                    "sampleOverCapGlobResults",
                    "tool-fs-search: sampleOverCapGlobResults must be a boolean",
                )
            })?;
        }
        let search = "tool-fs-search";
        positive(obj, search, "globMaxResults", &mut s.glob_max_results)?;
        positive(obj, search, "grepMaxMatches", &mut s.grep_max_matches)?;
        positive(obj, search, "grepMaxLineBytes", &mut s.grep_max_line_bytes)?;
        positive(
            obj,
            search,
            "searchMetaMaxBytes",
            &mut s.search_meta_max_bytes,
        )?;
        positive(
            obj,
            search,
            "rawOutputMaxBytes",
            &mut s.raw_output_max_bytes,
        )?;
        positive(obj, search, "graceMs", &mut s.grace_ms)?;
        if s.grace_ms > MAX_TIMER_DELAY_MS {
            return Err(ConfigError::invalid(
                "graceMs",
                format!("tool-fs-search: graceMs must be no greater than {MAX_TIMER_DELAY_MS}"),
            ));
        }
        positive(obj, search, "stderrMaxBytes", &mut s.stderr_max_bytes)?;
        positive(obj, search, "timeoutMs", &mut s.timeout_ms)?;

        let f = &mut c.fs;
        positive(obj, "tool-fs", "readLimit", &mut f.read_limit)?;
        positive(
            obj,
            "tool-fs",
            "readMaxLineLength",
            &mut f.read_max_line_length,
        )?;
        positive(obj, "tool-fs", "readMaxBytes", &mut f.read_max_bytes)?;
        positive(
            obj,
            "tool-fs",
            "readStreamMinSize",
            &mut f.read_stream_min_size,
        )?;
        if let Some(v) = obj.get("diffBasisMaxBytes") {
            f.diff_basis_max_bytes = integer(v)
                .filter(|&n| n >= 1.0 && n <= MAX_DIFF_BASIS_BYTES as f64)
                .map(|n| n as u64)
                .ok_or_else(|| {
                    ConfigError::invalid("diffBasisMaxBytes", format!(
                        "fs-local: diffBasisMaxBytes must be a positive safe integer no greater than {MAX_DIFF_BASIS_BYTES}"
                    ))
                })?;
        }

        if let Some(v) = obj.get("maxInlineBytes") {
            let n = integer(v).filter(|&n| n >= 0.0).ok_or_else(|| {
                ConfigError::invalid(
                    "maxInlineBytes",
                    format!(
                        "spill-policy: maxInlineBytes must be a non-negative integer (got {})",
                        js_string(v)
                    ),
                )
            })?;
            c.spill.max_inline_bytes = Some(saturate(n));
        }
        if let Some(v) = obj.get("spillRoot") {
            let root = v.as_str().filter(|r| !r.is_empty()).ok_or_else(|| {
                ConfigError::invalid(
                    "spillRoot",
                    "spill-local: spillRoot must be a non-empty string",
                )
            })?;
            c.spill.root = Some(PathBuf::from(root));
        }

        if let Some(v) = obj.get("guard") {
            let Value::Object(g) = v else {
                return Err(ConfigError::invalid(
                    "guard",
                    "guard: the guard configuration must be an object",
                ));
            };
            reject_unknown(g, GUARD_KEYS, "guard")?;
            if let Some(v) = g.get("disabled") {
                c.guard.disabled = v.as_bool().ok_or_else(|| {
                    ConfigError::invalid("guard.disabled", "guard: disabled must be a boolean")
                })?;
            }
            positive(g, "guard", "maxEditBytes", &mut c.guard.max_edit_bytes)?;
            positive(
                g,
                "guard",
                "zeroResultBlock",
                &mut c.guard.zero_result_block,
            )?;
        }
        if let Some(v) = obj.get("index") {
            c.index = v
                .as_bool()
                .ok_or_else(|| ConfigError::invalid("index", "config: index must be a boolean"))?;
        }
        if let Some(v) = obj.get("indexWatch") {
            let invalid = || {
                ConfigError::invalid(
                    "indexWatch",
                    "config: indexWatch must be \"os\" or \"none\"",
                )
            };
            c.index_watch = v
                .as_str()
                .ok_or_else(invalid)?
                .parse()
                .map_err(|_| invalid())?;
        }
        Ok(c)
    }
}

fn reject_unknown(
    obj: &Map<String, Value>,
    known: &[&str],
    scope: &str,
) -> Result<(), ConfigError> {
    match obj.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(ConfigError::invalid(
            key_in(scope, k),
            format!(
                "{scope}: unknown configuration key {} (known keys: {})",
                Value::String(k.clone()),
                known.join(", ")
            ),
        )),
        None => Ok(()),
    }
}

/// The key `name` as written under its object: `guard.maxEditBytes` for
/// the guard's, the name alone at the top level (whichever seed scope its
/// message names).
fn key_in(scope: &str, name: &str) -> String {
    if scope == "guard" {
        format!("guard.{name}")
    } else {
        name.to_string()
    }
}

/// `Number.isInteger(v) && v >= 1`, else `<scope>: <name> must be a positive
/// integer`.
fn positive(
    obj: &Map<String, Value>,
    scope: &str,
    name: &str,
    slot: &mut u64,
) -> Result<(), ConfigError> {
    if let Some(v) = obj.get(name) {
        let n = integer(v).filter(|&n| n >= 1.0).ok_or_else(|| {
            ConfigError::invalid(
                key_in(scope, name),
                format!("{scope}: {name} must be a positive integer"),
            )
        })?;
        *slot = saturate(n);
    }
    Ok(())
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
