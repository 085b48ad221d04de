// Link libdtif.so: SONAME libdtif.so, the thunk's exports plus the DTIF entry points under
// HSAKMT_1 (dtif.map). The hsakmt dependency's own cdylib arguments (hsakmt.map, SONAME
// libhsakmt.so.1) reach this link too; tools/link-cc keeps only dtif.map and this SONAME.
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={dir}/dtif.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libdtif.so");
    println!("cargo:rerun-if-changed=dtif.map");
}
