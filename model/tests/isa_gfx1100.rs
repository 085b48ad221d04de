//! The model GPU runs gfx1100 (RDNA3) machine code (model/ISA.md): the decoder checked against
//! llvm-objdump on the kernels of kernels.cl compiled for gfx1100 and on an llvm-mc sweep.
//! Needs the Debian packages clang-19, lld-19 and llvm-19 (.ci/packages).

use hsakmt_model::isa::gfx11;
use std::path::PathBuf;
use std::process::Command;

/// `tool` from `package`, or a loud failure naming the package.
fn tool(name: &str, package: &str) -> String {
    match Command::new(name).arg("--version").output() {
        Ok(o) if o.status.success() => name.to_string(),
        _ => panic!("{name} is missing: install the Debian package {package} (listed in .ci/packages)"),
    }
}

fn run(cmd: &mut Command) {
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&o.stderr));
}

fn scratch(tag: &str) -> PathBuf {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("isa11-{tag}-{n}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// kernels.cl compiled and linked for gfx1100: the code object's bytes and path.
fn code_object() -> (Vec<u8>, PathBuf) {
    let (clang, lld) = (tool("clang-19", "clang-19"), tool("ld.lld-19", "lld-19"));
    let d = scratch("cl");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/isa/kernels.cl");
    let (o, co) = (d.join("k.o"), d.join("k.co"));
    run(Command::new(clang).args(["-target", "amdgcn-amd-amdhsa", "-mcpu=gfx1100", "-nogpulib", "-O2", "-c"]).arg(&src).arg("-o").arg(&o));
    run(Command::new(lld).arg("-shared").arg(&o).arg("-o").arg(&co));
    (std::fs::read(&co).unwrap(), co)
}

/// llvm-objdump's instructions of `file`: (its text, the encoding's dwords).
fn objdump(file: &PathBuf) -> Vec<(String, Vec<u32>)> {
    let out = Command::new(tool("llvm-objdump-19", "llvm-19")).args(["-d", "--mcpu=gfx1100"]).arg(file).output().unwrap();
    assert!(out.status.success());
    let mut v = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((text, comment)) = line.split_once("//") else { continue };
        let Some((_, enc)) = comment.split_once(':') else { continue };
        let words: Vec<u32> = enc.split_whitespace().take_while(|t| t.len() == 8).map(|t| u32::from_str_radix(t, 16).unwrap()).collect();
        if !words.is_empty() {
            v.push((text.split_whitespace().collect::<Vec<_>>().join(" "), words));
        }
    }
    v
}

fn check_decoder(listing: &[(String, Vec<u32>)]) {
    assert!(listing.len() > 20);
    let mut bad = Vec::new();
    for (text, words) in listing {
        match gfx11::decode(words) {
            None => bad.push(format!("not decoded: {text} {words:08x?}")),
            Some(i) => {
                let ours = i.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
                if usize::from(i.len) != 4 * words.len() || ours != *text {
                    bad.push(format!("{words:08x?}: ours {ours:?} ({} bytes), llvm {text:?}", i.len));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{} of {} differ:\n{}", bad.len(), listing.len(), bad.join("\n"));
}

#[test]
fn decoder_agrees_with_llvm_on_the_compiled_kernels() {
    let (_, co) = code_object();
    check_decoder(&objdump(&co));
}

#[test]
fn decoder_agrees_with_llvm_on_the_sweep() {
    let mc = tool("llvm-mc-19", "llvm-19");
    let d = scratch("sweep");
    let obj = d.join("sweep.o");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/isa/sweep-gfx1100.s");
    run(Command::new(mc).args(["-arch=amdgcn", "-mcpu=gfx1100", "-filetype=obj"]).arg(&src).arg("-o").arg(&obj));
    let listing = objdump(&obj);
    let lines = std::fs::read_to_string(&src).unwrap().lines().filter(|l| !l.is_empty() && !l.starts_with("//")).count();
    assert_eq!(listing.len(), lines, "every sweep line disassembled");
    check_decoder(&listing);
}
