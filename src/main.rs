//! The `dsh-search` binary: all of it lives in the library's `cli` module.

fn main() -> std::process::ExitCode {
    dsh_search::cli::run()
}
