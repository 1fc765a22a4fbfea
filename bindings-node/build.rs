//! Emits the linker flags a Node addon needs (undefined N-API symbols resolved by the host).
fn main() {
    napi_build::setup();
}
