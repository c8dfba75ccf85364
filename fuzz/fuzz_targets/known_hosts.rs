//! `known_hosts` parsing (markers, negation, hashed names, ports): any
//! text is read line by line and matched, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    dsh_search::fuzzing::known_hosts(data);
});
