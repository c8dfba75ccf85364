//! Compiling globs whatever their depth, on any thread.
//!
//! globset 0.4.19 parses a glob with a heap stack, but turns the parsed
//! tokens into a regex recursively (`Tokens::tokens_to_regex`: one frame per
//! nested `{…}` group) and frees the token tree recursively (the derived
//! `Drop` of `Token::Alternates`). A glob such as `{a,{a,…b}}` 20,000 levels
//! deep overflows an ordinary thread's stack before the regex compiler gets
//! to reject it. rg 15.2.0, on its 8 MiB main thread, gets that far: from
//! 125 levels on (`{a,` × N, `b`, `}` × N) regex-syntax's nest limit (250)
//! fails the glob set and rg prints `error parsing pattern 0` (the meta
//! regex's `BuildError` for the set's first regex; a glob with a required
//! extension is compiled alone and names its regex instead), exit 2.
//!
//! So a compile whose globs may nest deeper than [`INLINE_NESTING`] runs on
//! a thread of its own with a stack sized for the depth, and the answer is
//! globset's own, rg's, at every depth rg can be handed on a command line.
//! The bound on the depth is [`nesting_bound`]; the deepest glob rg can be
//! given in one `--glob=` argument (Linux caps one argument at 128 KiB) nests
//! under [`MAX_NESTING`] levels, and a deeper one is refused without being
//! compiled (rg cannot be started with it at all).

/// The nesting below which a compile runs on the caller's thread: a few KiB
/// of stack in any build, which every thread has.
const INLINE_NESTING: usize = 32;

/// The deepest nesting compiled: a glob rg can receive in its one argument
/// (`MAX_ARG_STRLEN`, 131,072 bytes with `--glob=` and the NUL) has fewer
/// than 65,536 closed groups.
pub(crate) const MAX_NESTING: usize = 65_536;

/// Stack per level of nesting: 4,000 levels of `{a,` need 2.75 MiB in a
/// debug build (about 0.7 KiB a level: the recursion of `tokens_to_regex`
/// and of the token tree's `Drop`), less in a release build; three times
/// that for margin. The deepest glob reserves 132 MiB of address space,
/// touched only as deep as the recursion goes.
const STACK_PER_LEVEL: usize = 2 * 1024;

/// Stack for everything else a compile does (regex-syntax's and the NFA
/// compiler's own recursion is bounded by the nest limit).
const STACK_BASE: usize = 4 * 1024 * 1024;

/// An upper bound on how deep globset's token tree for `glob` nests: each
/// `Token::Alternates` is made when a `}` closes a `{`, so no path through
/// the tree is longer than either count (escaped or bracketed braces only
/// raise the bound).
pub(crate) fn nesting_bound(glob: &str) -> usize {
    let count = |c: u8| glob.bytes().filter(|&b| b == c).count();
    count(b'{').min(count(b'}'))
}

/// Why a glob nested deeper than [`MAX_NESTING`] is refused.
pub(crate) const TOO_DEEP: &str = "alternate groups nested more than 65536 levels deep \
     (more than rg can be given in one argument)";

/// The error for a glob nested deeper than [`MAX_NESTING`], in globset's
/// words for a glob it refuses (`error parsing glob '…': …`).
pub(crate) fn too_deep(glob: &str) -> String {
    format!("error parsing glob '{glob}': {TOO_DEEP}")
}

/// [`nesting_bound`] of the deepest line of an ignore file.
pub(crate) fn nesting_bound_lines(data: &[u8]) -> usize {
    data.split(|&b| b == b'\n')
        .map(|line| {
            let count = |c: u8| line.iter().filter(|&&b| b == c).count();
            count(b'{').min(count(b'}'))
        })
        .max()
        .unwrap_or(0)
}

/// Runs `compile` (which builds and drops globs at most `nesting` deep) on
/// a stack that holds it: the caller's for shallow globs, else a thread of
/// its own. `Err` when that thread cannot be started.
pub(crate) fn with_stack_for<T: Send>(
    nesting: usize,
    compile: impl FnOnce() -> T + Send,
) -> Result<T, String> {
    if nesting <= INLINE_NESTING {
        return Ok(compile());
    }
    let size = STACK_BASE + nesting.min(MAX_NESTING) * STACK_PER_LEVEL;
    std::thread::scope(|s| {
        let handle = std::thread::Builder::new()
            .name("dsh-search-glob".into())
            .stack_size(size)
            .spawn_scoped(s, compile)
            .map_err(|e| format!("could not start a thread to compile a glob: {e}"))?;
        match handle.join() {
            Ok(v) => Ok(v),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bound_counts_the_scarcer_brace() {
        assert_eq!(nesting_bound("*.rs"), 0);
        assert_eq!(nesting_bound("{a,{b,c}}"), 2);
        assert_eq!(nesting_bound("{{{{"), 0);
        assert_eq!(nesting_bound("{a}}}}"), 1);
        assert_eq!(nesting_bound_lines(b"{a}\n{{b}}\n}}"), 2);
        assert!(TOO_DEEP.contains(&MAX_NESTING.to_string()));
    }
}
