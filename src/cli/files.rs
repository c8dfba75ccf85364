//! The file tools on the command line: `read`, `write`, `edit`.

use super::{Common, EditArgs, ReadArgs, WriteArgs};

/// `dsh-search read`.
pub fn read(_common: &Common, _args: &ReadArgs) -> u8 {
    super::fail("read is not implemented yet")
}

/// `dsh-search write`.
pub fn write(_common: &Common, _args: &WriteArgs) -> u8 {
    super::fail("write is not implemented yet")
}

/// `dsh-search edit`.
pub fn edit(_common: &Common, _args: &EditArgs) -> u8 {
    super::fail("edit is not implemented yet")
}
