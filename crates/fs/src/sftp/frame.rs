//! The SFTP packets in a session channel's data: each is a `uint32`
//! length, then that many bytes, the type byte onwards
//! (draft-ietf-secsh-filexfer-02 §3), and the channel may cut the stream
//! at any byte.
//!
//! A packet longer than OpenSSH's own limit ends the session (a broken
//! server, or text a login shell printed before the server started):
//! nothing a server says makes the client buffer more than [`MAX_PACKET`]
//! bytes of a packet. A packet inside one chunk of the channel's data is a
//! slice of it, not a copy; a packet cut across chunks is gathered in one
//! buffer of its announced length, each byte copied into it once.

use std::fmt;

use bytes::{Buf, Bytes};

/// The longest packet taken (its length field, which counts the type byte
/// onwards): OpenSSH's `SFTP_MAX_MSG_LENGTH` (`sftp.h`, 256 KiB), over
/// which its client's `get_msg` fails with "Received message too long".
/// OpenSSH's `sftp-server` never sends more, and the reads asked of any
/// server are at most 255 KiB of data (`session::SERVED_AT_MOST`).
pub(crate) const MAX_PACKET: u32 = 256 * 1024;

/// A packet's length over [`MAX_PACKET`]: the stream cannot be read on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TooLong {
    /// The length the packet announced.
    pub(crate) len: u32,
}

impl fmt::Display for TooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the server sent an SFTP packet of {} bytes, over the limit of {MAX_PACKET} \
             (OpenSSH's SFTP_MAX_MSG_LENGTH)",
            self.len
        )
    }
}

/// The length a packet's header announces, if it is within the limit.
fn announced(head: &[u8]) -> Result<usize, TooLong> {
    let len = u32::from_be_bytes(head[..4].try_into().unwrap());
    if len > MAX_PACKET {
        return Err(TooLong { len });
    }
    Ok(len as usize)
}

/// Cuts a channel's data into packets (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Framer {
    /// The start of a packet that the chunks so far did not complete,
    /// header included. Once its header is whole, its capacity is the
    /// packet's whole length: what later chunks append never moves it.
    partial: Vec<u8>,
}

impl Framer {
    /// Take one chunk of the channel's data: the packets it completes are
    /// appended to `out` (the type byte onwards), in order. After an error
    /// the stream is lost, and the framer is not to be used again.
    pub(crate) fn push(&mut self, mut data: Bytes, out: &mut Vec<Bytes>) -> Result<(), TooLong> {
        if !self.partial.is_empty() {
            if let Some(packet) = self.complete(&mut data)? {
                out.push(packet);
            }
        }
        if !self.partial.is_empty() {
            // The whole chunk went to the packet begun earlier.
            return Ok(());
        }
        while let Some(head) = data.get(..4) {
            let len = announced(head)?;
            if data.len() - 4 < len {
                break;
            }
            out.push(data.slice(4..4 + len));
            data.advance(4 + len);
        }
        if let Some(head) = data.get(..4) {
            // Checked by the loop above.
            self.partial.reserve_exact(4 + announced(head)?);
        }
        self.partial.extend_from_slice(&data);
        Ok(())
    }

    /// Append to the packet begun in an earlier chunk what of `data` it
    /// still lacks, and return it once whole: its header first, then its
    /// body, the buffer grown to the whole length once the header is in.
    fn complete(&mut self, data: &mut Bytes) -> Result<Option<Bytes>, TooLong> {
        if self.partial.len() < 4 {
            self.fill(data, 4);
            if self.partial.len() < 4 {
                return Ok(None);
            }
        }
        let whole = 4 + announced(&self.partial)?;
        self.partial.reserve_exact(whole - self.partial.len());
        self.fill(data, whole);
        if self.partial.len() < whole {
            return Ok(None);
        }
        // `Bytes::from` takes the vector's buffer as it is.
        let packet = Bytes::from(std::mem::take(&mut self.partial));
        Ok(Some(packet.slice(4..)))
    }

    /// Move the front of `data` to the partial packet, up to `len` bytes
    /// in all.
    fn fill(&mut self, data: &mut Bytes, len: usize) {
        let take = (len - self.partial.len()).min(data.len());
        self.partial.extend_from_slice(&data[..take]);
        data.advance(take);
    }
}

/// The fuzzing entry point: `data` is the channel's stream after a byte
/// that seeds the sizes of the chunks it comes in. Whatever the cuts, the
/// packets taken and the length refused are those of the stream whole.
#[cfg(any(test, fuzzing))]
pub(crate) fn fuzz(data: &[u8]) {
    if let Some((&seed, stream)) = data.split_first() {
        assert_eq!(cut(stream, seed), cut(stream, 0));
    }
}

/// `stream` pushed through a framer in chunks whose sizes `seed` picks (0:
/// one chunk): the packets taken, and the error if any.
#[cfg(any(test, fuzzing))]
fn cut(stream: &[u8], seed: u8) -> (Vec<Bytes>, Option<TooLong>) {
    let mut framer = Framer::default();
    let mut out = Vec::new();
    let mut at = 0;
    let mut x = u32::from(seed) | 0x100;
    while at < stream.len() {
        let size = if seed == 0 {
            stream.len()
        } else {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            1 + (x % 64) as usize
        };
        let end = (at + size).min(stream.len());
        if let Err(e) = framer.push(Bytes::copy_from_slice(&stream[at..end]), &mut out) {
            return (out, Some(e));
        }
        at = end;
    }
    (out, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A packet on the wire: its length, then `body`.
    fn wire(body: &[u8]) -> Vec<u8> {
        [&(body.len() as u32).to_be_bytes()[..], body].concat()
    }

    /// The chunks pushed in turn; `$want` is the packets taken, then
    /// whether a packet is left begun, or the length refused.
    macro_rules! frames {
        ($name:ident, [$($chunk:expr),* $(,)?], $want:expr) => {
            #[test]
            fn $name() {
                let mut framer = Framer::default();
                let mut out = Vec::new();
                let mut res = Ok(());
                for chunk in [$(Vec::<u8>::from($chunk)),*] {
                    res = framer.push(Bytes::from(chunk), &mut out);
                    if res.is_err() {
                        break;
                    }
                }
                let packets: Vec<Vec<u8>> = out.iter().map(|p| p.to_vec()).collect();
                let got = match res {
                    Ok(()) => Ok((packets, !framer.partial.is_empty())),
                    Err(e) => Err((packets, e.len)),
                };
                let want: Result<(Vec<&[u8]>, bool), (Vec<&[u8]>, u32)> = $want;
                let want = want
                    .map(|(p, begun)| (p.iter().map(|p| p.to_vec()).collect::<Vec<_>>(), begun))
                    .map_err(|(p, len)| (p.iter().map(|p| p.to_vec()).collect::<Vec<_>>(), len));
                assert_eq!(got, want);
            }
        };
    }

    frames!(one_whole, [wire(b"\x65abc")], Ok((vec![b"\x65abc"], false)));
    frames!(
        two_whole,
        [[wire(b"\x65a"), wire(b"\x66bc")].concat()],
        Ok((vec![b"\x65a", b"\x66bc"], false))
    );
    frames!(
        empty_packet,
        [wire(b""), wire(b"x")],
        Ok((vec![b"", b"x"], false))
    );
    frames!(
        empty_packet_cut,
        [vec![0, 0], vec![0, 0]],
        Ok((vec![b""], false))
    );
    frames!(
        header_cut,
        [vec![0, 0], vec![0, 3, b'a'], b"bc"],
        Ok((vec![b"abc"], false))
    );
    frames!(
        body_cut_thrice,
        [vec![0, 0, 0, 6, b'a'], b"bc", b"de", b"f"],
        Ok((vec![b"abcdef"], false))
    );
    frames!(
        cut_then_whole_in_one_chunk,
        [
            vec![0, 0, 0, 2, b'a'],
            [&b"b"[..], &wire(b"cd"), &[0, 0]].concat()
        ],
        Ok((vec![b"ab", b"cd"], true))
    );
    frames!(left_begun, [vec![0, 0, 0, 9, b'a']], Ok((vec![], true)));
    frames!(
        at_the_limit,
        [
            MAX_PACKET.to_be_bytes().to_vec(),
            vec![7; MAX_PACKET as usize - 1],
            vec![7]
        ],
        Ok((vec![&[7; MAX_PACKET as usize][..]], false))
    );
    frames!(
        over_the_limit,
        [(MAX_PACKET + 1).to_be_bytes().to_vec()],
        Err((vec![], MAX_PACKET + 1))
    );
    // Refused on its header alone: nothing of its body is waited for.
    frames!(
        huge,
        [vec![0xff, 0xff, 0xff, 0xff, b'x']],
        Err((vec![], u32::MAX))
    );
    frames!(
        huge_header_cut,
        [vec![0xff], vec![0xff, 0xff], vec![0xff]],
        Err((vec![], u32::MAX))
    );
    frames!(
        huge_after_a_whole_one,
        [[&wire(b"ok")[..], &[0x40, 0, 0, 0]].concat()],
        Err((vec![b"ok"], 0x4000_0000))
    );
    // What a login shell's "Welcome" looks like as a length.
    frames!(
        shell_text,
        [b"Welcome to the host\n".to_vec()],
        Err((vec![], u32::from_be_bytes(*b"Welc")))
    );
    frames!(
        huge_after_a_cut_one,
        [vec![0, 0, 0, 2, b'o'], vec![b'k', 0xff, 0xff, 0xff, 0xff]],
        Err((vec![b"ok"], u32::MAX))
    );

    /// A packet cut across chunks is gathered in one buffer, allocated
    /// at its whole length once its header is in and never moved: each
    /// byte is copied once, however many chunks it comes in.
    #[test]
    fn cut_packet_gathered_in_place() {
        let body: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
        let stream = wire(&body);
        let mut framer = Framer::default();
        let mut out = Vec::new();
        framer
            .push(Bytes::copy_from_slice(&stream[..10]), &mut out)
            .unwrap();
        assert!(framer.partial.capacity() >= stream.len());
        let at = framer.partial.as_ptr();
        for piece in stream[10..].chunks(32 * 1024) {
            assert_eq!(framer.partial.as_ptr(), at);
            framer
                .push(Bytes::copy_from_slice(piece), &mut out)
                .unwrap();
        }
        assert_eq!(out.len(), 1);
        assert_eq!(out[0], body);
        assert_eq!(out[0].as_ptr(), at.wrapping_add(4));
    }

    /// A whole packet inside a chunk is a slice of the chunk.
    #[test]
    fn whole_packet_not_copied() {
        let chunk = Bytes::from([wire(b"one"), wire(b"two")].concat());
        let mut out = Vec::new();
        Framer::default().push(chunk.clone(), &mut out).unwrap();
        assert_eq!(out[1].as_ptr(), chunk[11..].as_ptr());
    }

    /// Whatever the cuts, the packets taken are the stream's (up to a
    /// length over the limit, which every cut refuses alike): what the
    /// fuzz target checks, on streams of valid, empty and huge packets.
    #[test]
    fn any_cuts() {
        let mut x = 0x9e37_79b9u32;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        let mut refused = 0;
        for _ in 0..300 {
            let mut stream = Vec::new();
            for _ in 0..next() % 8 {
                match next() % 10 {
                    0 => stream.extend(wire(b"")),
                    1 => stream.extend(u32::MAX.to_be_bytes()),
                    _ => stream.extend(wire(&vec![b'p'; (next() % 300) as usize])),
                }
            }
            let whole = cut(&stream, 0);
            refused += usize::from(whole.1.is_some());
            for seed in 1..=8 {
                assert_eq!(cut(&stream, seed), whole, "{stream:?} cut by {seed}");
            }
        }
        assert!(refused > 50, "{refused} streams refused");
    }

    /// The fuzz target's seed corpus passes its check, and its huge
    /// length is refused on the header, whatever the cuts.
    #[test]
    fn fuzz_corpus() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/corpus/sftp_stream");
        let mut seeds = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            fuzz(&std::fs::read(entry.unwrap().path()).unwrap());
            seeds += 1;
        }
        assert!(seeds >= 6, "{seeds} seeds in {dir}");
        let huge = std::fs::read(format!("{dir}/seed-01")).unwrap();
        for seed in 0..=u8::MAX {
            let (packets, refused) = cut(&huge[1..], seed);
            assert_eq!(
                (packets.len(), refused),
                (0, Some(TooLong { len: u32::MAX }))
            );
        }
    }
}
