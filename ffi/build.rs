// Link libhsakmt.so as upstream ships it: SONAME libhsakmt.so.1, every export under the
// HSAKMT_1 symbol version (hsakmt.map; tools/link-cc drops rustc's anonymous version script).
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={dir}/hsakmt.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libhsakmt.so.1");
    println!("cargo:rerun-if-changed=hsakmt.map");
}
