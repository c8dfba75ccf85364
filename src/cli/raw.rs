//! `--format raw`: print exactly what rg prints for the invocation.

use super::{Common, GlobArgs, GrepArgs};

/// `dsh-search glob --format raw`.
pub fn glob(_common: &Common, _args: &GlobArgs) -> u8 {
    super::fail("glob --format raw is not implemented yet")
}

/// `dsh-search grep --format raw`.
pub fn grep(_common: &Common, _args: &GrepArgs) -> u8 {
    super::fail("grep --format raw is not implemented yet")
}
