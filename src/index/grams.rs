//! The content prefilter (`docs/index.md`, "The prefilter"): each file's
//! byte trigrams hashed into a small bitmap, and a query planned from the
//! pattern's syntax tree that every match requires of a file's trigrams.
//!
//! Exactness rests on one implication: if the pattern matches somewhere in
//! a file, the file holds every trigram of one of the strings the query
//! names. The query is planned from the pattern parsed as grep-regex parses
//! it (`matcher::build`: multi-line, Unicode, no octal), so a match of rg's
//! regex is a match of this syntax tree (grep-regex only narrows it: the
//! line terminator is taken out of classes). Case-insensitive flags are in
//! the tree as classes (Unicode simple case folding included, `(?i)k`
//! is `[Kk\u{212A}]`), expanded here like any class. Whatever the planner
//! cannot bound (a large class, a repetition that may be absent, a string
//! shorter than three bytes) asks nothing: the file stays a candidate.

use std::collections::BTreeSet;

use regex_syntax::hir::{Class, Hir, HirKind};

/// Bitmap bits per distinct trigram of a file. Each trigram sets two bits
/// (two hashes): a trigram absent from the file tests present with
/// probability about `(1 - e^(-2/BITS_PER_GRAM))^2` (11% at 5: less than
/// one hash gave at 8 bits, 12%, in 5/8 of the memory), and a query of
/// several trigrams multiplies those (a rare 8-byte literal: six trigrams,
/// 2e-6). A false positive costs one file searched, never a wrong answer.
const BITS_PER_GRAM: usize = 5;

/// A file's trigrams, hashed (one hash per trigram) into a bitmap sized by
/// how many distinct trigrams the file has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Grams {
    bits: Box<[u64]>,
}

/// A trigram as a number: its three bytes, big-endian.
fn gram(b: &[u8]) -> u32 {
    (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2])
}

impl Grams {
    /// The bitmap of `data`'s trigrams. `seen` is scratch space of 2^24
    /// bits that the caller keeps between files (all clear on entry and on
    /// return).
    pub(crate) fn of(data: &[u8], seen: &mut Vec<u64>) -> Grams {
        if seen.len() != 1 << 18 {
            *seen = vec![0; 1 << 18];
        }
        let mut distinct: Vec<u32> = Vec::new();
        for w in data.windows(3) {
            let g = gram(w);
            let (word, bit) = ((g >> 6) as usize, 1u64 << (g & 63));
            if seen[word] & bit == 0 {
                seen[word] |= bit;
                distinct.push(g);
            }
        }
        let words = (distinct.len() * BITS_PER_GRAM).div_ceil(64).max(1);
        let mut bits = vec![0u64; words].into_boxed_slice();
        let m = (words * 64) as u64;
        for &g in &distinct {
            seen[(g >> 6) as usize] = 0;
            for at in slots(g, m) {
                bits[(at / 64) as usize] |= 1 << (at % 64);
            }
        }
        Grams { bits }
    }

    /// Whether the file may hold trigram `g` (false: it does not).
    fn may_hold(&self, g: u32) -> bool {
        slots(g, (self.bits.len() * 64) as u64)
            .iter()
            .all(|&at| self.bits[(at / 64) as usize] & (1 << (at % 64)) != 0)
    }

    /// The bitmap's words, to be saved (`saved.rs`).
    pub(crate) fn words(&self) -> &[u64] {
        &self.bits
    }

    /// A bitmap saved by [`Grams::words`]; at least one word.
    pub(crate) fn from_words(bits: Box<[u64]>) -> Grams {
        debug_assert!(!bits.is_empty());
        Grams { bits }
    }

    /// The bytes the bitmap takes.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.bits.len() * 8
    }
}

/// The two bits trigram `g` sets in a bitmap of `m` bits (two
/// multiplicative hashes, each multiply-shifted into range). The saved
/// index's format says which hashing its bitmaps were made with
/// (`saved.rs: FORMAT`).
fn slots(g: u32, m: u64) -> [u64; 2] {
    let h1 = u64::from(g).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
    let h2 = u64::from(g).wrapping_mul(0xC2B2_AE3D_27D4_EB4F) >> 32;
    [(h1 * m) >> 32, (h2 * m) >> 32]
}

/// What a file must hold for the pattern to match in it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Query {
    /// Nothing known: every file may match.
    All,
    /// No file can match (the pattern matches nothing: an empty class).
    Nothing,
    /// The file holds this trigram.
    Gram(u32),
    /// All of these hold.
    And(Vec<Query>),
    /// One of these holds.
    Or(Vec<Query>),
}

impl Query {
    /// Whether a file with these trigrams may match.
    pub(crate) fn admits(&self, grams: &Grams) -> bool {
        match self {
            Query::All => true,
            Query::Nothing => false,
            Query::Gram(g) => grams.may_hold(*g),
            Query::And(qs) => qs.iter().all(|q| q.admits(grams)),
            Query::Or(qs) => qs.iter().any(|q| q.admits(grams)),
        }
    }

    fn and(qs: Vec<Query>) -> Query {
        let mut out = Vec::new();
        for q in qs {
            match q {
                Query::All => {}
                Query::Nothing => return Query::Nothing,
                Query::And(inner) => out.extend(inner),
                q => out.push(q),
            }
        }
        match out.len() {
            0 => Query::All,
            1 => out.pop().expect("one"),
            _ => Query::And(out),
        }
    }

    fn or(qs: Vec<Query>) -> Query {
        let mut out = Vec::new();
        for q in qs {
            match q {
                Query::All => return Query::All,
                Query::Nothing => {}
                Query::Or(inner) => out.extend(inner),
                q => out.push(q),
            }
        }
        match out.len() {
            0 => Query::Nothing,
            1 => out.pop().expect("one"),
            _ => Query::Or(out),
        }
    }

    /// What one of `strings` occurring requires: each string's trigrams;
    /// a string shorter than three bytes requires nothing.
    fn any_of(strings: &BTreeSet<Vec<u8>>) -> Query {
        Query::or(
            strings
                .iter()
                .map(|s| {
                    if s.len() < 3 {
                        Query::All
                    } else {
                        let grams: BTreeSet<u32> = s.windows(3).map(gram).collect();
                        Query::and(grams.into_iter().map(Query::Gram).collect())
                    }
                })
                .collect(),
        )
    }
}

/// The most strings an exact set holds before it is turned into a query.
const EXACT_MAX: usize = 64;
/// The most characters a class may hold to be expanded into strings.
const CLASS_MAX: usize = 16;

/// What the planner knows of a piece of the pattern.
enum Info {
    /// It matches exactly one of these strings.
    Exact(BTreeSet<Vec<u8>>),
    /// Each of its matches satisfies this query.
    Inexact(Query),
}

impl Info {
    fn query(self) -> Query {
        match self {
            Info::Exact(s) => Query::any_of(&s),
            Info::Inexact(q) => q,
        }
    }
}

/// Patterns longer than this, or nesting deeper than [`NESTING_MAX`], are
/// not planned (the planner recurses once per nesting level).
const PATTERN_MAX: usize = 4096;
const NESTING_MAX: usize = 32;

/// The query every file with a match of `pattern` satisfies, or `None` when
/// the pattern cannot narrow the files (the scan answers the call).
pub(crate) fn plan(pattern: &str) -> Option<Query> {
    let nesting = pattern.bytes().filter(|&b| b == b'(' || b == b'[').count();
    if pattern.len() > PATTERN_MAX || nesting > NESTING_MAX {
        return None;
    }
    let hir = crate::backend::parse_pattern(pattern)?;
    match info(&hir).query() {
        Query::All => None,
        q => Some(q),
    }
}

fn info(hir: &Hir) -> Info {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => Info::Exact(BTreeSet::from([Vec::new()])),
        HirKind::Literal(lit) => Info::Exact(BTreeSet::from([lit.0.to_vec()])),
        HirKind::Class(class) => {
            class_strings(class).map_or(Info::Inexact(Query::All), Info::Exact)
        }
        HirKind::Capture(c) => info(&c.sub),
        HirKind::Repetition(r) => {
            if r.min == 0 {
                Info::Inexact(Query::All)
            } else if r.max == Some(1) {
                info(&r.sub)
            } else {
                // At least one copy occurs.
                Info::Inexact(info(&r.sub).query())
            }
        }
        HirKind::Concat(subs) => {
            let mut required = Vec::new();
            let mut run: Option<BTreeSet<Vec<u8>>> = Some(BTreeSet::from([Vec::new()]));
            let mut exact = true;
            for sub in subs {
                match info(sub) {
                    Info::Exact(set) => {
                        run = Some(match run.take() {
                            Some(prev) if prev.len() * set.len() <= EXACT_MAX => {
                                let mut product = BTreeSet::new();
                                for a in &prev {
                                    for b in &set {
                                        let mut s = a.clone();
                                        s.extend_from_slice(b);
                                        product.insert(s);
                                    }
                                }
                                product
                            }
                            Some(prev) => {
                                exact = false;
                                required.push(Query::any_of(&prev));
                                set
                            }
                            None => set,
                        });
                    }
                    Info::Inexact(q) => {
                        exact = false;
                        if let Some(prev) = run.take() {
                            required.push(Query::any_of(&prev));
                        }
                        required.push(q);
                    }
                }
            }
            match run {
                Some(set) if exact => Info::Exact(set),
                run => {
                    if let Some(set) = run {
                        required.push(Query::any_of(&set));
                    }
                    Info::Inexact(Query::and(required))
                }
            }
        }
        HirKind::Alternation(subs) => {
            let infos: Vec<Info> = subs.iter().map(info).collect();
            let all_exact = infos.iter().all(|i| matches!(i, Info::Exact(_)));
            if all_exact {
                let mut union = BTreeSet::new();
                for i in &infos {
                    if let Info::Exact(s) = i {
                        union.extend(s.iter().cloned());
                    }
                }
                if union.len() <= EXACT_MAX {
                    return Info::Exact(union);
                }
            }
            Info::Inexact(Query::or(infos.into_iter().map(Info::query).collect()))
        }
    }
}

/// The strings a small class matches (a character's UTF-8 bytes, or one
/// byte), or `None` for a larger one.
fn class_strings(class: &Class) -> Option<BTreeSet<Vec<u8>>> {
    let mut out = BTreeSet::new();
    match class {
        Class::Unicode(c) => {
            for r in c.ranges() {
                let n = (u32::from(r.end()) - u32::from(r.start())) as usize + 1;
                if out.len() + n > CLASS_MAX {
                    return None;
                }
                for ch in r.start()..=r.end() {
                    let mut buf = [0; 4];
                    out.insert(ch.encode_utf8(&mut buf).as_bytes().to_vec());
                }
            }
        }
        Class::Bytes(c) => {
            for r in c.ranges() {
                let n = usize::from(r.end() - r.start()) + 1;
                if out.len() + n > CLASS_MAX {
                    return None;
                }
                for b in r.start()..=r.end() {
                    out.insert(vec![b]);
                }
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admits(pattern: &str, text: &str) -> bool {
        let mut seen = Vec::new();
        let grams = Grams::of(text.as_bytes(), &mut seen);
        assert!(seen.iter().all(|&w| w == 0), "the scratch is left clear");
        plan(pattern).is_none_or(|q| q.admits(&grams))
    }

    #[test]
    fn unnarrowable_patterns_are_not_planned() {
        for p in [r"\w{30}", "a*", "ab", ".", "(", r"[a-z]+", "x?yz"] {
            assert_eq!(plan(p), None, "{p}");
        }
    }

    #[test]
    fn a_file_with_a_match_is_always_admitted() {
        let cases = [
            ("needle", "a needle here"),
            (
                r"EXPORT_SYMBOL_GPL\(\w+_init\)",
                "EXPORT_SYMBOL_GPL(foo_init)",
            ),
            ("(?i)needle", "NeEdLe"),
            ("(?i)kelvin", "\u{212A}ELVIN"),
            ("foo|barbaz", "xx barbaz"),
            ("ünï", "ünïcode"),
            (r"a[bc]d[ef]g", "acdfg"),
            (r"(abc)+def", "abcabcdef"),
            (r"\bneedle\b", "needle"),
        ];
        for (p, text) in cases {
            assert!(plan(p).is_some(), "{p} narrows");
            assert!(admits(p, text), "{p} in {text:?}");
        }
    }

    #[test]
    fn a_file_without_the_literals_is_refused() {
        let cases = [
            ("needle", "no such thing here"),
            (r"EXPORT_SYMBOL_GPL\(\w+_init\)", "EXPORT_SYMBOL(foo)"),
            ("(?i)needle", "haystack"),
            ("foo|barbaz", "nothing"),
            ("[^\\x00-\\x{10FFFF}]", "anything"),
        ];
        for (p, text) in cases {
            assert!(!admits(p, text), "{p} in {text:?}");
        }
    }
}
