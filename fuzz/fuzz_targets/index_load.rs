//! A saved index (`docs/index.md`, "Restart without a rebuild"): any bytes
//! are refused or read, never a panic or an allocation the input cannot
//! back; what is read writes back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    dsh_search::fuzzing::index_load(data);
});
