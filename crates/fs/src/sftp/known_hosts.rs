//! The host key checked against `known_hosts` as OpenSSH's `ssh` checks
//! it with `StrictHostKeyChecking=yes` (sshd(8), "SSH_KNOWN_HOSTS FILE
//! FORMAT"; ssh's `hostfile.c` and `match.c`):
//!
//! - a line is `[@marker] hostnames keytype base64-key [comment]`; blank
//!   lines and lines starting with `#` (after blanks) are skipped, and so
//!   is a line whose marker, hostnames or key cannot be read;
//! - `hostnames` is a comma-separated list of patterns (`*` and `?`
//!   wildcards, compared without case): the line names the host when a
//!   pattern matches it and no negated one (`!pattern`) does; or a hashed
//!   name, `|1|salt|hash`, the base64 HMAC-SHA1 of the name keyed by the
//!   salt, which names exactly one host;
//! - the host is named as `host` on port 22 and as `[host]:port` on any
//!   other port, then, if no line names it so, by its plain name;
//! - the key is trusted when a plain line for the host holds it, and no
//!   `@revoked` line for the host does; a plain line with another key is a
//!   changed key. `@cert-authority` lines vouch for host
//!   certificates, which this client does not accept: a host named only
//!   by such a line is not trusted.

use std::fmt::Write as _;

use base64::Engine as _;
use hmac::{KeyInit, Mac};
use russh::keys::PublicKey;

use crate::SSH_PORT;

/// What a line says of the keys it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Marker {
    /// A host key.
    Plain,
    /// `@cert-authority`: a key that signs host certificates.
    CertAuthority,
    /// `@revoked`: a key never to be trusted.
    Revoked,
}

/// One readable line of a `known_hosts` file.
#[derive(Debug)]
pub(crate) struct Entry<'t> {
    /// Its line number (from 1).
    pub(crate) line: usize,
    pub(crate) marker: Marker,
    /// The hostnames field, as written.
    pub(crate) hosts: &'t [u8],
    pub(crate) key: PublicKey,
}

/// What the file says of the server's key.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A plain line for the host holds it, and no `@revoked` line does.
    Trusted,
    /// An `@revoked` line for the host holds it (at this line).
    Revoked(usize),
    /// A plain line for the host holds another key of its type.
    Changed(usize),
    /// No line for the host holds it; the line of an `@cert-authority`
    /// entry for the host, if there is one.
    Unknown { cert_authority: Option<usize> },
}

const BLANKS: &[u8] = b" \t";

/// The readable lines of `text`, in order.
pub(crate) fn entries(text: &[u8]) -> impl Iterator<Item = Entry<'_>> {
    text.split(|&b| b == b'\n')
        .enumerate()
        .filter_map(|(i, line)| entry(i + 1, line))
}

/// One line, or `None` for a comment, a blank line, or a line ssh skips
/// as unreadable.
fn entry(line: usize, text: &[u8]) -> Option<Entry<'_>> {
    let start = text.iter().position(|b| !BLANKS.contains(b))?;
    let mut rest = &text[start..];
    if rest[0] == b'#' || rest == b"\r" {
        return None;
    }
    let marker = marker(&mut rest)?;
    let end = rest
        .iter()
        .position(|b| BLANKS.contains(b))
        .unwrap_or(rest.len());
    let hosts = &rest[..end];
    let mut fields = rest[end..]
        .split(|b| BLANKS.contains(b) || *b == b'\r')
        .filter(|f| !f.is_empty());
    let (kind, blob) = (fields.next()?, fields.next()?);
    if kind.starts_with(b"#") {
        return None;
    }
    let key = russh::keys::parse_public_key_base64(std::str::from_utf8(blob).ok()?).ok()?;
    // ssh refuses a key whose type name is not the blob's.
    let named = key.algorithm();
    let named = named.as_str().as_bytes();
    let rsa = named == b"ssh-rsa" && matches!(kind, b"rsa-sha2-256" | b"rsa-sha2-512");
    if named != kind && !rsa {
        return None;
    }
    Some(Entry {
        line,
        marker,
        hosts,
        key,
    })
}

/// The line's marker, taken off its front with the blanks after it. As ssh
/// reads it (`check_markers`): it ends at the line's first space (else its
/// first tab), only one is allowed, and an unknown one makes the line
/// unreadable (`None`).
fn marker(rest: &mut &[u8]) -> Option<Marker> {
    let mut found = Marker::Plain;
    while rest.first() == Some(&b'@') {
        if found != Marker::Plain {
            return None;
        }
        let end = rest
            .iter()
            .position(|&b| b == b' ')
            .or_else(|| rest.iter().position(|&b| b == b'\t'))?;
        found = match &rest[..end] {
            b"@cert-authority" => Marker::CertAuthority,
            b"@revoked" => Marker::Revoked,
            _ => return None,
        };
        let next = rest[end..]
            .iter()
            .position(|b| !BLANKS.contains(b))
            .map_or(rest.len(), |i| end + i);
        *rest = &rest[next..];
    }
    Some(found)
}

/// How `known_hosts` names the host: `host` on port 22, `[host]:port` on
/// any other, without case.
pub(crate) fn host_name(host: &str, port: u16) -> String {
    let host = host.to_ascii_lowercase();
    if port == SSH_PORT {
        host
    } else {
        format!("[{host}]:{port}")
    }
}

/// Whether the hostnames field `hosts` names `name` (from [`host_name`]).
pub(crate) fn names(hosts: &[u8], name: &str) -> bool {
    if hosts.first() == Some(&b'|') {
        return hashed(hosts, name);
    }
    // `match_pattern_list`: a negated match refuses the line whatever
    // else matches.
    let mut positive = false;
    for pattern in hosts.split(|&b| b == b',') {
        // ssh gives up on the whole list at a pattern this long.
        if pattern.len() >= 1023 {
            return false;
        }
        let (negated, pattern) = match pattern.strip_prefix(b"!") {
            Some(p) => (true, p),
            None => (false, pattern),
        };
        if wildcard(&pattern.to_ascii_lowercase(), name.as_bytes()) {
            if negated {
                return false;
            }
            positive = true;
        }
    }
    positive
}

/// `match_pattern`: `*` matches any run of bytes, `?` any one byte.
fn wildcard(pattern: &[u8], name: &[u8]) -> bool {
    // Iterative, with one backtrack point: the last `*` seen.
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == b'?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p.min(pattern.len())..].iter().all(|&b| b == b'*')
}

/// A hashed name, `|1|salt|hash`: ssh hashes `name` with the field's salt
/// and compares the whole encoded result with the field (`host_hash`), so
/// a field that is not exactly one well-formed hash names nothing.
fn hashed(hosts: &[u8], name: &str) -> bool {
    let b64 = base64::engine::general_purpose::STANDARD;
    let Some(rest) = hosts.strip_prefix(b"|1|") else {
        return false;
    };
    let Some(bar) = rest.iter().position(|&b| b == b'|') else {
        return false;
    };
    let Ok(salt) = b64.decode(&rest[..bar]) else {
        return false;
    };
    if salt.len() != 20 {
        return false;
    }
    let Ok(mut mac) = hmac::Hmac::<sha1::Sha1>::new_from_slice(&salt) else {
        return false;
    };
    mac.update(name.as_bytes());
    let mut encoded = String::from("|1|");
    let _ = write!(
        encoded,
        "{}|{}",
        b64.encode(&salt),
        b64.encode(mac.finalize().into_bytes())
    );
    encoded.as_bytes() == hosts
}

/// What the `known_hosts` text `text` says of `key` for `host` on `port`.
/// On a port other than 22, a host that no line names as `[host]:port`
/// (with a key, revoked or not) is looked up again by its plain name,
/// and trusted if that finds the key (ssh's `check_host_key`: "checking
/// without port identifier").
pub(crate) fn check(text: &[u8], host: &str, port: u16, key: &PublicKey) -> Verdict {
    let verdict = check_name(text, &host_name(host, port), key);
    if port != SSH_PORT && matches!(verdict, Verdict::Unknown { .. }) {
        if let found @ (Verdict::Trusted | Verdict::Revoked(_)) =
            check_name(text, &host_name(host, SSH_PORT), key)
        {
            return found;
        }
    }
    verdict
}

/// [`check`] for the host as `known_hosts` names it (`name`), as ssh's
/// `check_hostkeys_by_key_or_type` decides: among the plain lines for the
/// host, one with the key trusts it, and any other (whatever its key's
/// type) makes it a changed key; an `@revoked` line with the key refuses
/// it whatever else is there.
fn check_name(text: &[u8], name: &str, key: &PublicKey) -> Verdict {
    let (mut trusted, mut revoked, mut changed, mut ca) = (false, None, None, None);
    for e in entries(text).filter(|e| names(e.hosts, name)) {
        let same = e.key.key_data() == key.key_data();
        match e.marker {
            Marker::Revoked if same => revoked = revoked.or(Some(e.line)),
            Marker::Revoked => {}
            Marker::CertAuthority => ca = ca.or(Some(e.line)),
            Marker::Plain if same => trusted = true,
            Marker::Plain => changed = changed.or(Some(e.line)),
        }
    }
    match (revoked, trusted, changed) {
        (Some(line), _, _) => Verdict::Revoked(line),
        (None, true, _) => Verdict::Trusted,
        (None, false, Some(line)) => Verdict::Changed(line),
        (None, false, None) => Verdict::Unknown { cert_authority: ca },
    }
}

/// The fuzzing entry point: every line of `data` read, and each entry's
/// hostnames matched against a few names.
#[cfg(fuzzing)]
pub(crate) fn fuzz(data: &[u8]) {
    for e in entries(data) {
        for (host, port) in [("127.0.0.1", 22), ("example.org", 2222)] {
            let _ = names(e.hosts, &host_name(host, port));
        }
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = names(data, &host_name(text, 22));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! wild {
        ($name:ident, $pattern:expr, $host:expr, $want:expr) => {
            #[test]
            fn $name() {
                assert_eq!(wildcard($pattern, $host), $want);
            }
        };
    }

    wild!(wild_exact, b"a.b", b"a.b", true);
    wild!(wild_star_all, b"*", b"anything", true);
    wild!(
        wild_star_middle,
        b"[127.0.0.*]:22*",
        b"[127.0.0.1]:2222",
        true
    );
    wild!(wild_question, b"h?st", b"host", true);
    wild!(wild_question_not_empty, b"h?st", b"hst", false);
    wild!(wild_backtrack, b"*a*b", b"xaxxab", true);
    wild!(wild_prefix_only, b"abc", b"ab", false);
    wild!(
        wild_star_not_bracket,
        b"127.0.0.1",
        b"[127.0.0.1]:22",
        false
    );

    #[test]
    fn name_lists() {
        let n = "[127.0.0.1]:2222";
        assert!(names(b"[127.0.0.1]:2222", n));
        assert!(names(b"other,[127.0.0.1]:2222", n));
        assert!(!names(b"![127.0.0.1]:2222,[127.0.0.1]:2222", n));
        assert!(!names(b"[127.0.0.1]:2222,!*", n));
        assert!(names(b"!other,*", n));
        assert!(!names(b"127.0.0.1", n));
        assert!(names(b"EXAMPLE.org", &host_name("Example.ORG", 22)));
    }

    #[test]
    fn hashed_names() {
        // `ssh-keygen -H` of `[127.0.0.1]:2222`, computed by hand with
        // the salt of 20 zero bytes.
        let salt = [0u8; 20];
        let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(&salt).unwrap();
        mac.update(b"[127.0.0.1]:2222");
        let b64 = base64::engine::general_purpose::STANDARD;
        let field = format!(
            "|1|{}|{}",
            b64.encode(salt),
            b64.encode(mac.finalize().into_bytes())
        );
        assert!(names(field.as_bytes(), "[127.0.0.1]:2222"));
        assert!(!names(field.as_bytes(), "[127.0.0.1]:2223"));
        assert!(!names(format!("{field},x").as_bytes(), "[127.0.0.1]:2222"));
        assert!(!names(b"|1|AAAA|AAAA", "[127.0.0.1]:2222"));
        assert!(!names(b"|2|x|y", "x"));
    }

    #[test]
    fn markers() {
        let read = |s: &str| {
            let mut r = s.as_bytes();
            marker(&mut r).map(|m| (m, String::from_utf8_lossy(r).into_owned()))
        };
        assert_eq!(read("host k"), Some((Marker::Plain, "host k".into())));
        assert_eq!(
            read("@revoked \t host k"),
            Some((Marker::Revoked, "host k".into()))
        );
        assert_eq!(
            read("@cert-authority h k"),
            Some((Marker::CertAuthority, "h k".into()))
        );
        assert_eq!(read("@revoked @revoked h k"), None);
        assert_eq!(read("@other h k"), None);
        // ssh's marker ends at the first space, wherever it is.
        assert_eq!(read("@revoked\th k"), None);
        assert_eq!(read("@revoked\th"), Some((Marker::Revoked, "h".into())));
    }

    /// `wildcard` written the slow, obvious way: `m[i][j]` is whether the
    /// first `i` bytes of the pattern match the first `j` of the name.
    fn wildcard_model(pattern: &[u8], name: &[u8]) -> bool {
        let mut m = vec![vec![false; name.len() + 1]; pattern.len() + 1];
        m[0][0] = true;
        for (i, &p) in pattern.iter().enumerate() {
            for j in 0..=name.len() {
                m[i + 1][j] = match p {
                    b'*' => m[i][j] || (j > 0 && m[i + 1][j - 1]),
                    _ => j > 0 && m[i][j - 1] && (p == b'?' || p == name[j - 1]),
                };
            }
        }
        m[pattern.len()][name.len()]
    }

    /// `names` as sshd(8) words it: a hashed field names only its one
    /// host (never one made of random bytes); a list names the host when
    /// a pattern matches it and no negated one does; ssh gives up on a
    /// list with a pattern of 1023 bytes or more.
    fn names_model(hosts: &[u8], name: &str) -> bool {
        if hosts.first() == Some(&b'|') {
            return false;
        }
        let patterns: Vec<&[u8]> = hosts.split(|&b| b == b',').collect();
        if patterns.iter().any(|p| p.len() >= 1023) {
            return false;
        }
        let matching = |p: &[u8]| wildcard_model(&p.to_ascii_lowercase(), name.as_bytes());
        let negated = patterns
            .iter()
            .any(|p| p.strip_prefix(b"!").is_some_and(matching));
        let positive = patterns.iter().any(|p| !p.starts_with(b"!") && matching(p));
        positive && !negated
    }

    /// On arbitrary bytes the entry points never panic (the fuzz targets
    /// run them longer) and agree with the models above; a readable line
    /// planted among unreadable ones is read, at its line number, and
    /// nothing else is.
    #[test]
    fn arbitrary_bytes() {
        const NAME: &str = "[127.0.0.1]:2222";
        const PLANTED: &[u8] = b"planted ssh-ed25519 \
            AAAAC3NzaC1lZDI1NTE5AAAAID4SHxcQs96q4DUtUPhN72EYyQsBYEVdO769jWR5Nw6f";
        // `,` and `*` thrice: lists of short patterns, often matching.
        const ALPHABET: &[u8] = b" \t\n,,,!***?|@#1[]:AZaz09+/=.27";
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut junk = |len: usize| -> Vec<u8> {
            (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    ALPHABET[(x % ALPHABET.len() as u64) as usize]
                })
                .collect()
        };
        let (mut named, mut unnamed) = (0, 0);
        for len in 0..2000 {
            let (before, after) = (junk(len % 200), junk(len % 37));
            let text = [&before[..], b"\n", PLANTED, b"\n", &after[..]].concat();
            let line = before.iter().filter(|&&b| b == b'\n').count() + 2;
            let read: Vec<(usize, &[u8])> = entries(&text).map(|e| (e.line, e.hosts)).collect();
            assert_eq!(
                read,
                [(line, &b"planted"[..])],
                "{:?}",
                String::from_utf8_lossy(&text)
            );
            for hosts in before.split(|&b| b == b'\n').chain([&before[..]]) {
                let got = names(hosts, NAME);
                let label = String::from_utf8_lossy(hosts);
                assert_eq!(got, names_model(hosts, NAME), "names({label:?})");
                for pattern in hosts.split(|&b| b == b',') {
                    let p = pattern.to_ascii_lowercase();
                    let want = wildcard_model(&p, NAME.as_bytes());
                    assert_eq!(wildcard(&p, NAME.as_bytes()), want, "wildcard({label:?})");
                }
                if got {
                    named += 1;
                } else {
                    unnamed += 1;
                }
            }
        }
        // Both answers were met often, or the comparison proved little.
        assert!(named > 100 && unnamed > 100, "{named} named, {unnamed} not");
    }
}
