//! The guard's configuration keys (seed `003_…`, "配置"): `disabled`,
//! `maxEditBytes`, `zeroResultBlock`, validated like the tools' keys
//! (`seed-reference.md` §9: integer ≥ 1, else
//! `<owner>: <key> must be a positive integer`).

use serde_json::Value;

/// How the guard behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuardConfig {
    /// Turn every rule off: every call is allowed, nothing is counted.
    ///
    /// By default, `false`.
    pub disabled: bool,
    /// The largest file, in bytes, whose content the edit rule reads; larger
    /// files are allowed unchecked, so that a guard never slows every edit.
    ///
    /// By default, 2,000,000.
    pub max_edit_bytes: u64,
    /// How many greps in a row that found nothing on one target block the
    /// next grep on it.
    ///
    /// By default, 5.
    pub zero_result_block: u32,
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

/// The prefix of every configuration error, like the seed's
/// `tool-fs-search: …`.
const OWNER: &str = "guard";

/// The keys, in the order they are checked.
pub const KEYS: [&str; 3] = ["disabled", "maxEditBytes", "zeroResultBlock"];

impl GuardConfig {
    /// The configuration from the `guard` object of a config file; absent
    /// keys keep their default. Unknown keys and invalid values are errors.
    pub fn from_json(v: &Value) -> Result<GuardConfig, String> {
        let Some(obj) = v.as_object() else {
            return Err(format!("{OWNER}: the configuration must be an object"));
        };
        if let Some(k) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(format!("{OWNER}: unknown configuration key {k:?}"));
        }
        let mut c = GuardConfig::default();
        if let Some(d) = obj.get("disabled") {
            c.disabled = d
                .as_bool()
                .ok_or_else(|| format!("{OWNER}: disabled must be a boolean"))?;
        }
        if let Some(n) = obj.get("maxEditBytes") {
            c.max_edit_bytes = positive_integer(n, u64::MAX)
                .ok_or_else(|| format!("{OWNER}: maxEditBytes must be a positive integer"))?;
        }
        if let Some(n) = obj.get("zeroResultBlock") {
            c.zero_result_block = positive_integer(n, u64::from(u32::MAX))
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| format!("{OWNER}: zeroResultBlock must be a positive integer"))?;
        }
        Ok(c)
    }
}

/// A JSON number that is an integer ≥ 1 and ≤ `max`. `2e6` counts, as it
/// does for JavaScript's `Number.isInteger`.
fn positive_integer(v: &Value, max: u64) -> Option<u64> {
    let n = match v.as_u64() {
        Some(n) => n,
        None => {
            let f = v.as_f64()?;
            // 2^53: the largest integer a JSON reader keeps exactly.
            if f.fract() != 0.0 || !(1.0..=9_007_199_254_740_992.0).contains(&f) {
                return None;
            }
            f as u64
        }
    };
    (1..=max).contains(&n).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_and_overrides() {
        assert_eq!(
            GuardConfig::from_json(&json!({})).unwrap(),
            GuardConfig::default()
        );
        let c = GuardConfig::from_json(
            &json!({"disabled": true, "maxEditBytes": 2e6, "zeroResultBlock": 3}),
        )
        .unwrap();
        assert_eq!(
            c,
            GuardConfig {
                disabled: true,
                max_edit_bytes: 2_000_000,
                zero_result_block: 3
            }
        );
    }

    #[test]
    fn invalid_values_are_rejected_with_the_key() {
        let err = |v: Value| GuardConfig::from_json(&v).unwrap_err();
        assert_eq!(err(json!([])), "guard: the configuration must be an object");
        assert_eq!(
            err(json!({"disabled": "yes"})),
            "guard: disabled must be a boolean"
        );
        for bad in [json!(0), json!(-1), json!(1.5), json!("10"), json!(null)] {
            assert_eq!(
                err(json!({"maxEditBytes": bad})),
                "guard: maxEditBytes must be a positive integer"
            );
        }
        assert_eq!(
            err(json!({"zeroResultBlock": 4294967296u64})),
            "guard: zeroResultBlock must be a positive integer"
        );
        assert_eq!(
            err(json!({"zeroResultBlok": 3})),
            "guard: unknown configuration key \"zeroResultBlok\""
        );
    }
}
