//! The SFTP client's reply decoder: the first byte is the packet type, the
//! rest its body (after the id); any bytes decode or fail with an error,
//! never a panic or an allocation the body's length does not bound.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    dsh_search::fuzzing::sftp_reply(data);
});
