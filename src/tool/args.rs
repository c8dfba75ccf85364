//! Argument checking in the two steps of the original registry: schema
//! validation against a tool's parameters (`seed-reference.md` §4.3,
//! `ToolArgsError`), then the search tools' own checks (§4.2, plain errors).

use serde_json::{Map, Value};

use crate::js::is_blank;
use crate::tool::result::ToolError;

/// A JSON Schema type a parameter can have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonType {
    /// `"string"`.
    String,
    /// `"number"`: any JSON number.
    Number,
    /// `"boolean"`.
    Boolean,
}

impl JsonType {
    /// The schema's `type` keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            JsonType::String => "string",
            JsonType::Number => "number",
            JsonType::Boolean => "boolean",
        }
    }

    fn accepts(self, v: &Value) -> bool {
        match self {
            JsonType::String => v.is_string(),
            JsonType::Number => v.is_number(),
            JsonType::Boolean => v.is_boolean(),
        }
    }
}

/// One property of a tool's parameter schema, in declaration order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// The property name.
    pub name: &'static str,
    /// Its type.
    pub ty: JsonType,
    /// Whether it is listed in `required`.
    pub required: bool,
    /// Its `description` (interpolated).
    pub description: String,
}

/// The `ToolArgsError` for a list of violations.
fn args_error(violations: &[String]) -> ToolError {
    ToolError::coded(
        "ToolArgsError",
        "INVALID_ARGS",
        format!("invalid arguments: {}", violations.join("; ")),
    )
}

/// Validate `args` against the parameters. The root object is open (extra
/// properties pass); `null` for a property is a type violation; every
/// violation is reported, in declaration order, joined by `; `.
pub(super) fn validate<'a>(
    params: &[Param],
    args: &'a Value,
) -> Result<&'a Map<String, Value>, ToolError> {
    let Value::Object(obj) = args else {
        return Err(args_error(&["\"arguments\" must be an object".to_string()]));
    };
    let mut violations = Vec::new();
    for p in params {
        match obj.get(p.name) {
            None if p.required => {
                violations.push(format!("missing required property \"{}\"", p.name))
            }
            None => {}
            Some(v) if !p.ty.accepts(v) => {
                violations.push(format!("\"{}\" must be a {}", p.name, p.ty.keyword()))
            }
            Some(_) => {}
        }
    }
    if violations.is_empty() {
        Ok(obj)
    } else {
        Err(args_error(&violations))
    }
}

/// A string property of validated arguments.
fn string(obj: &Map<String, Value>, name: &str) -> Option<String> {
    obj.get(name).and_then(Value::as_str).map(str::to_string)
}

/// glob's arguments after schema validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct GlobArgs {
    /// The glob, verbatim.
    pub pattern: String,
    /// The search path, verbatim.
    pub path: Option<String>,
}

/// grep's arguments after schema validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct GrepArgs {
    /// The regex, verbatim.
    pub pattern: String,
    /// The search path, verbatim.
    pub path: Option<String>,
    /// The include glob, verbatim.
    pub include: Option<String>,
}

impl GlobArgs {
    /// Take validated arguments and run glob's own checks (§4.2).
    pub(super) fn from_validated(obj: &Map<String, Value>) -> Result<GlobArgs, ToolError> {
        let args = GlobArgs {
            pattern: string(obj, "pattern").unwrap_or_default(),
            path: string(obj, "path"),
        };
        if is_blank(&args.pattern) {
            return Err(ToolError::plain("pattern must be a non-empty string"));
        }
        check_path(args.path.as_deref())?;
        Ok(args)
    }
}

impl GrepArgs {
    /// Take validated arguments and run grep's own checks (§4.2).
    pub(super) fn from_validated(obj: &Map<String, Value>) -> Result<GrepArgs, ToolError> {
        let args = GrepArgs {
            pattern: string(obj, "pattern").unwrap_or_default(),
            path: string(obj, "path"),
            include: string(obj, "include"),
        };
        // Only the empty pattern is refused: a whitespace-only pattern is a
        // regex like any other.
        if args.pattern.is_empty() {
            return Err(ToolError::plain("pattern must be a non-empty string"));
        }
        check_path(args.path.as_deref())?;
        if let Some(include) = &args.include {
            check_include(include)?;
        }
        Ok(args)
    }
}

fn check_path(path: Option<&str>) -> Result<(), ToolError> {
    match path {
        Some(p) if is_blank(p) => Err(ToolError::plain(
            "path must be a non-empty string when given",
        )),
        _ => Ok(()),
    }
}

/// grep's `include` checks, in the seed's order: blank, negated (before any
/// trimming), then a comma at brace depth 0. The scan does not know
/// backslash escapes and never lets the depth go below 0.
fn check_include(include: &str) -> Result<(), ToolError> {
    if is_blank(include) {
        return Err(ToolError::plain(
            "include must be a non-empty glob when given",
        ));
    }
    if include.starts_with('!') {
        return Err(ToolError::plain(
            "include must be a positive glob filter; negated patterns (\"!\u{2026}\") are not supported",
        ));
    }
    let mut depth = 0usize;
    for c in include.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                return Err(ToolError::plain(
                    "include must be one glob, not a comma-separated list (use {a,b} alternation instead)",
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn grep_params() -> Vec<Param> {
        let p = |name, required| Param {
            name,
            ty: JsonType::String,
            required,
            description: String::new(),
        };
        vec![p("pattern", true), p("path", false), p("include", false)]
    }

    fn invalid(v: Value) -> String {
        validate(&grep_params(), &v).unwrap_err().message
    }

    #[test]
    fn schema_violations() {
        assert_eq!(
            invalid(json!({})),
            "invalid arguments: missing required property \"pattern\""
        );
        assert_eq!(
            invalid(json!([])),
            "invalid arguments: \"arguments\" must be an object"
        );
        assert_eq!(
            invalid(json!(null)),
            "invalid arguments: \"arguments\" must be an object"
        );
        assert_eq!(
            invalid(json!({"pattern": 1, "path": null, "include": ["a"]})),
            "invalid arguments: \"pattern\" must be a string; \"path\" must be a string; \"include\" must be a string"
        );
        let e = validate(&grep_params(), &json!({})).unwrap_err();
        assert_eq!(e.code(), Some("INVALID_ARGS"));
        assert_eq!(e.info.unwrap().name, "ToolArgsError");
        assert!(validate(&grep_params(), &json!({"pattern": "x", "extra": 1})).is_ok());
    }

    fn grep_err(v: Value) -> String {
        let obj = validate(&grep_params(), &v).unwrap();
        GrepArgs::from_validated(obj).unwrap_err().message
    }

    fn grep_ok(v: Value) -> GrepArgs {
        GrepArgs::from_validated(validate(&grep_params(), &v).unwrap()).unwrap()
    }

    #[test]
    fn grep_checks() {
        assert_eq!(
            grep_err(json!({"pattern": ""})),
            "pattern must be a non-empty string"
        );
        assert_eq!(grep_ok(json!({"pattern": "  "})).pattern, "  ");
        assert_eq!(
            grep_err(json!({"pattern": "x", "path": " \u{FEFF}"})),
            "path must be a non-empty string when given"
        );
        assert_eq!(
            grep_err(json!({"pattern": "x", "include": "\u{3000}"})),
            "include must be a non-empty glob when given"
        );
        assert_eq!(
            grep_err(json!({"pattern": "x", "include": "!*.ts"})),
            "include must be a positive glob filter; negated patterns (\"!…\") are not supported"
        );
        // A leading space hides the `!`: the check runs before trimming.
        grep_ok(json!({"pattern": "x", "include": " !*.ts"}));
        let list =
            "include must be one glob, not a comma-separated list (use {a,b} alternation instead)";
        assert_eq!(
            grep_err(json!({"pattern": "x", "include": "*.ts,*.js"})),
            list
        );
        assert_eq!(grep_err(json!({"pattern": "x", "include": "}a,b{"})), list);
        grep_ok(json!({"pattern": "x", "include": "*.{ts,tsx}"}));
        grep_ok(json!({"pattern": "x", "include": "\\{a,b"}));
        // U+0085 is not JavaScript whitespace.
        grep_ok(json!({"pattern": "x", "path": "\u{0085}"}));
    }

    #[test]
    fn glob_checks() {
        let params = &grep_params()[..2];
        let err = |v: Value| {
            GlobArgs::from_validated(validate(params, &v).unwrap())
                .unwrap_err()
                .message
        };
        assert_eq!(
            err(json!({"pattern": " \n"})),
            "pattern must be a non-empty string"
        );
        assert_eq!(
            err(json!({"pattern": "*", "path": ""})),
            "path must be a non-empty string when given"
        );
        let ok = GlobArgs::from_validated(
            validate(params, &json!({"pattern": " * ", "path": " a"})).unwrap(),
        );
        assert_eq!(
            ok.unwrap(),
            GlobArgs {
                pattern: " * ".into(),
                path: Some(" a".into())
            }
        );
    }
}
