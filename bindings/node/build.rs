//! napi-build sets the linker flags a Node addon needs (the N-API symbols
//! are resolved by the Node process that loads it).

use std::env;

fn main() {
    napi_build::setup();
    // A Mach-O library records its install name, which the linker takes from
    // the output path unless told otherwise: a build made elsewhere would
    // carry that machine's absolute build directory in its `LC_ID_DYLIB`.
    // Node loads the addon by its path (`dlopen`), so the name is never used
    // to find it; `@rpath/dsh-search.node` is the file's packaged name and
    // holds no path of the build (docs/packaging.md, "What is built").
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("macos") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/dsh-search.node");
    }
}
