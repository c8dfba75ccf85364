//! The file tools on the command line: `read`, `write`, `edit`.
//!
//! Without `--session` the tools run on the bare provider: no observation
//! policy, unconditional writes and edits. With `--session ID` the policy
//! applies and the session's observations persist in the state directory
//! ([`crate::setup`]), so `read` then `edit` as two commands behaves like
//! two calls of one session.

use std::io::{self, Read};

use dsh_search::CancelToken;
use serde_json::{json, Map, Value};

use super::{EditArgs, ReadArgs, WriteArgs};
use crate::setup::{exit_code, fail, print, run_call, tools_and_context, Common, Format};

/// `dsh-search read`.
pub(crate) fn read(common: &Common, args: &ReadArgs) -> u8 {
    let mut a = Map::new();
    a.insert("file_path".into(), json!(args.file));
    if let Some(o) = args.offset {
        a.insert("offset".into(), json!(o));
    }
    if let Some(l) = args.limit {
        a.insert("limit".into(), json!(l));
    }
    run(common, "read", &Value::Object(a))
}

/// `dsh-search write`: standard input is streamed into place (one chunk
/// held at a time, whatever its size), and the wait for it ends at SIGINT,
/// SIGTERM or SIGHUP with nothing written.
pub(crate) fn write(common: &Common, args: &WriteArgs) -> u8 {
    let (tools, ctx) = match tools_and_context(common) {
        Ok(both) => both,
        Err(e) => return fail(e),
    };
    let mut stdin = CancellableStdin::new(common.cancel.clone());
    let result = tools.write_stream(&args.file, &mut stdin, &ctx);
    print(&result.content);
    exit_code(&result)
}

/// `dsh-search edit`.
pub(crate) fn edit(common: &Common, args: &EditArgs) -> u8 {
    let mut a = json!({
        "file_path": args.file,
        "old_string": args.old,
        "new_string": args.new,
    });
    if args.replace_all {
        a["replace_all"] = json!(true);
    }
    run(common, "edit", &a)
}

/// One call through the tools' dispatch (schema, guard, the tool), printed
/// as text.
fn run(common: &Common, tool: &str, args: &Value) -> u8 {
    run_call(common, tool, args, Format::Text)
}

/// Standard input, read so that a cancellation (a signal) ends a wait for
/// data: the CLI's signal handlers set a flag and return, and a blocking
/// `read(2)` would be restarted and wait on.
///
/// # Platform behavior
///
/// On Unix, `poll(2)` with a short timeout before each read, as the FIFO
/// reader does. Elsewhere a plain blocking read: a signal there ends the
/// process (Ctrl-C's default) rather than the wait.
struct CancellableStdin {
    cancel: CancelToken,
}

impl CancellableStdin {
    fn new(cancel: CancelToken) -> CancellableStdin {
        CancellableStdin { cancel }
    }
}

impl Read for CancellableStdin {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        #[cfg(unix)]
        {
            use rustix::event::{poll, PollFd, PollFlags, Timespec};
            use std::os::fd::AsFd;
            let stdin = io::stdin();
            let fd = stdin.as_fd();
            loop {
                if self.cancel.is_cancelled() {
                    return Err(dsh_search::cancelled_error());
                }
                let mut fds = [PollFd::new(&fd, PollFlags::IN)];
                let tick = Timespec {
                    tv_sec: 0,
                    tv_nsec: 50_000_000,
                };
                match poll(&mut fds, Some(&tick)) {
                    Ok(0) | Err(rustix::io::Errno::INTR) => continue,
                    Ok(_) => {}
                    Err(e) => return Err(e.into()),
                }
                match rustix::io::read(fd, &mut *buf) {
                    Ok(n) => return Ok(n),
                    Err(rustix::io::Errno::INTR) | Err(rustix::io::Errno::AGAIN) => continue,
                    Err(e) => return Err(e.into()),
                }
            }
        }
        #[cfg(not(unix))]
        {
            if self.cancel.is_cancelled() {
                return Err(dsh_search::cancelled_error());
            }
            io::stdin().lock().read(buf)
        }
    }
}
