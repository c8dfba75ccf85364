//! The SFTP client's framing of a session channel's data: the first byte
//! seeds the sizes of the chunks the rest comes in; however it is cut, the
//! packets taken are the same, and a length over OpenSSH's limit is
//! refused on its header, never buffered.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    dsh_search::fuzzing::sftp_stream(data);
});
