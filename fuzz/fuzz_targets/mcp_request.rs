//! `dsh-search mcp`'s line decoder, the very files the server runs: any
//! line is classified (a message, or an error answer), never a panic.
#![no_main]
#![allow(dead_code)]

#[path = "../../cli/src/server/decode.rs"]
mod decode;
#[path = "../../cli/src/server/mcp_decode.rs"]
mod mcp_decode;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = mcp_decode::mcp_line(data);
});
