//! The model-facing tools on the command line: `glob`, `grep` (text and
//! json formats), `call` and `definitions`.

use super::{CallArgs, Common, GlobArgs, GrepArgs};

/// `dsh-search glob --format text|json`.
pub fn glob(_common: &Common, _args: &GlobArgs) -> u8 {
    super::fail("glob is not implemented yet")
}

/// `dsh-search grep --format text|json`.
pub fn grep(_common: &Common, _args: &GrepArgs) -> u8 {
    super::fail("grep is not implemented yet")
}

/// `dsh-search call TOOL JSON`.
pub fn call(_common: &Common, _args: &CallArgs) -> u8 {
    super::fail("call is not implemented yet")
}

/// `dsh-search definitions`.
pub fn definitions(_common: &Common) -> u8 {
    super::fail("definitions is not implemented yet")
}
