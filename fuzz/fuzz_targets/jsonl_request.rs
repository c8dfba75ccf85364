//! `dsh-search serve`'s request decoder, the very file the server runs:
//! any line decodes to a request or a rejection, never a panic; a line the
//! envelope reads an id from keeps it as its JSON text.
#![no_main]
#![allow(dead_code)]

#[path = "../../cli/src/server/decode.rs"]
mod decode;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = decode::jsonl_request(data);
    let _ = decode::too_many_values(data);
    if let Some(id) = decode::raw_id(data) {
        // The id is echoed as sent: it must itself be JSON text. Its
        // syntax, read as `RawValue` reads it: a number too large for an
        // f64 is JSON that serde_json's `Value` refuses.
        assert!(
            serde_json::from_str::<serde::de::IgnoredAny>(&id).is_ok(),
            "{id}"
        );
    }
});
