//! Strict text decoding as fs-local does it (`seed-reference.md` §6.1):
//! a NUL in the first 8192 bytes means binary, anything but valid UTF-8 is
//! rejected, and a leading UTF-8 BOM is stripped.

/// How many leading bytes are checked for a NUL.
pub const BINARY_SNIFF_BYTES: usize = 8192;

const BOM: &[u8] = b"\xEF\xBB\xBF";

use dsh_search_base::cancel::CancelToken;

/// Why bytes are not text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotText {
    /// A NUL byte where it is not allowed.
    Binary,
    /// Not valid UTF-8.
    InvalidUtf8,
}

impl NotText {
    /// The seed's words: `binary file` or `invalid UTF-8 text`.
    pub fn as_str(self) -> &'static str {
        match self {
            NotText::Binary => "binary file",
            NotText::InvalidUtf8 => "invalid UTF-8 text",
        }
    }
}

/// Decode a whole file: NUL in the first [`BINARY_SNIFF_BYTES`] bytes is
/// binary (`nul_anywhere`: in any byte, as `edit` checks), then strict UTF-8
/// with the BOM stripped.
pub fn decode_strict(bytes: &[u8], nul_anywhere: bool) -> Result<&str, NotText> {
    let sniff = if nul_anywhere {
        bytes
    } else {
        &bytes[..bytes.len().min(BINARY_SNIFF_BYTES)]
    };
    if memchr::memchr(0, sniff).is_some() {
        return Err(NotText::Binary);
    }
    let text = std::str::from_utf8(bytes).map_err(|_| NotText::InvalidUtf8)?;
    Ok(text.strip_prefix('\u{FEFF}').unwrap_or(text))
}

/// [`decode_strict`] with a NUL anywhere binary (as `edit` decodes), for a
/// whole file of up to hundreds of MiB: the NUL scan looks at `cancel`
/// every MiB. `None` once `cancel` is set.
pub fn decode_whole<'a>(bytes: &'a [u8], cancel: &CancelToken) -> Option<Result<&'a str, NotText>> {
    for window in bytes.chunks(1 << 20) {
        if cancel.is_cancelled() {
            return None;
        }
        if memchr::memchr(0, window).is_some() {
            return Some(Err(NotText::Binary));
        }
    }
    if cancel.is_cancelled() {
        return None;
    }
    Some(decode_strict(bytes, false))
}

/// The streaming form of [`decode_strict`] (NUL checked in the first
/// [`BINARY_SNIFF_BYTES`] bytes only): feed byte chunks, get text chunks that
/// never split a character.
#[derive(Debug, Default)]
pub(super) struct TextDecoder {
    seen: usize,
    /// Bytes of an incomplete character (or of a possible BOM) held back.
    pending: Vec<u8>,
    bom_checked: bool,
    buf: String,
}

impl TextDecoder {
    /// A decoder at the start of a file.
    pub(super) fn new() -> TextDecoder {
        TextDecoder::default()
    }

    /// Decode the next chunk; the returned text is valid until the next call.
    pub(super) fn push(&mut self, chunk: &[u8]) -> Result<&str, NotText> {
        if self.seen < BINARY_SNIFF_BYTES {
            let n = chunk.len().min(BINARY_SNIFF_BYTES - self.seen);
            if memchr::memchr(0, &chunk[..n]).is_some() {
                return Err(NotText::Binary);
            }
        }
        self.seen = self.seen.saturating_add(chunk.len());
        self.pending.extend_from_slice(chunk);
        if !self.bom_checked {
            if self.pending.len() < BOM.len() && BOM.starts_with(&self.pending) {
                return Ok("");
            }
            if self.pending.starts_with(BOM) {
                self.pending.drain(..BOM.len());
            }
            self.bom_checked = true;
        }
        self.buf.clear();
        let valid = match std::str::from_utf8(&self.pending) {
            Ok(s) => s.len(),
            // `error_len() == None`: an incomplete character at the end,
            // completed by the next chunk.
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => return Err(NotText::InvalidUtf8),
        };
        let text = std::str::from_utf8(&self.pending[..valid]).map_err(|_| NotText::InvalidUtf8)?;
        self.buf.push_str(text);
        self.pending.drain(..valid);
        Ok(&self.buf)
    }

    /// End of input: anything held back is an error (a truncated character),
    /// except a file that is only a partial BOM.
    pub(super) fn finish(&mut self) -> Result<(), NotText> {
        if self.pending.is_empty() {
            return Ok(());
        }
        // A truncated character at the end, or a file that is only a strict
        // prefix of the BOM: neither is valid UTF-8.
        Err(NotText::InvalidUtf8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(chunks: &[&[u8]]) -> Result<String, NotText> {
        let mut d = TextDecoder::new();
        let mut out = String::new();
        for c in chunks {
            out.push_str(d.push(c)?);
        }
        d.finish()?;
        Ok(out)
    }

    #[test]
    fn strict_strips_bom() {
        assert_eq!(decode_strict(b"\xEF\xBB\xBFhi", false), Ok("hi"));
    }

    #[test]
    fn nul_after_sniff_window_is_text() {
        let mut bytes = vec![b'a'; BINARY_SNIFF_BYTES];
        bytes.push(0);
        assert!(decode_strict(&bytes, false).is_ok());
        assert_eq!(decode_strict(&bytes, true), Err(NotText::Binary));
        assert_eq!(
            stream(&[&bytes[..5000], &bytes[5000..]]).unwrap().len(),
            bytes.len()
        );
    }

    #[test]
    fn nul_inside_sniff_window_across_chunks() {
        let mut bytes = vec![b'a'; 8000];
        bytes.push(0);
        assert_eq!(
            stream(&[&bytes[..7999], &bytes[7999..]]),
            Err(NotText::Binary)
        );
    }

    #[test]
    fn streamed_char_split_across_chunks() {
        assert_eq!(
            stream(&[b"\xEF", b"\xBB", b"\xBFa\xC3", b"\xA9"]).unwrap(),
            "a\u{e9}"
        );
    }

    #[test]
    fn streamed_invalid_and_truncated() {
        assert_eq!(stream(&[b"a\xFFb"]), Err(NotText::InvalidUtf8));
        assert_eq!(stream(&[b"a\xC3"]), Err(NotText::InvalidUtf8));
        assert_eq!(stream(&[b"\xEF\xBB"]), Err(NotText::InvalidUtf8));
    }
}
