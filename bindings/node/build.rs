//! napi-build sets the linker flags a Node addon needs (the N-API symbols
//! are resolved by the Node process that loads it).

fn main() {
    napi_build::setup();
}
