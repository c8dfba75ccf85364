//! `dsh-search bench`: both backends side by side on the same tree.

use clap::Args;

use super::Common;

/// `dsh-search bench` options.
#[derive(Debug, Args)]
pub struct BenchArgs {}

/// `dsh-search bench`.
pub fn run(_common: &Common, _args: &BenchArgs) -> u8 {
    super::fail("bench is not implemented yet")
}
