//! hsakmt-install: builds libhsakmt, the model plugin and kmtinfo with cargo and installs them
//! the way upstream ROCm's libhsakmt is installed, so C and C++ code finds it through
//! pkg-config (`libhsakmt`) or CMake (`find_package(hsakmt)`, target `hsakmt::hsakmt`):
//!
//! ```text
//! <libdir>/libhsakmt.so.<LIB_VERSION>          the library (SONAME libhsakmt.so.1)
//! <libdir>/libhsakmt.so.1 -> libhsakmt.so.<LIB_VERSION>
//! <libdir>/libhsakmt.so   -> libhsakmt.so.1
//! <libdir>/libhsakmt.a
//! <libdir>/libhsakmt_model.so                   the software model as a plugin (HSA_MODEL_LIB)
//! <libdir>/libdtif.so                           the thunk for runtimes started with HSA_ENABLE_DTIF=1
//! <libdir>/pkgconfig/libhsakmt.pc               from ffi/hsakmt.pc.in
//! <libdir>/cmake/hsakmt/hsakmt-config.cmake     from ffi/cmake/hsakmt-config.cmake.in
//! <libdir>/cmake/hsakmt/hsakmt-config-version.cmake
//! <prefix>/include/hsakmt/...                   ffi/include/hsakmt (with linux/kfd_ioctl.h)
//! <prefix>/bin/kmtinfo
//! ```
//!
//! Debug information is stripped from the installed ELF files (symbol names stay, so panic
//! backtraces still name functions) unless `--no-strip` is given.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::process::{Command, ExitCode};

/// The full version of the installed library, the one place it is chosen: the real file is
/// `libhsakmt.so.<LIB_VERSION>`, and it is the `Version` of libhsakmt.pc and the version of the
/// CMake package.
/// - Major 1 is the SONAME's (`libhsakmt.so.1`, ffi/build.rs): the interface clients link to.
/// - Minor 0: upstream has shipped libhsakmt as 1.0.<patch> for the whole life of the .so.1
///   interface (LIB_VERSION_MAJOR/MINOR in libhsakmt's CMakeLists.txt), so version checks
///   written for upstream (`find_package(hsakmt 1.0)`, `libhsakmt >= 1.0`) hold.
/// - Patch: hsakmt-rs's own release count of this library, from 0. Upstream puts its ROCm
///   release there (e.g. 1.0.60400); we do not claim to be one.
const LIB_VERSION: &str = "1.0.0";

/// The SONAME (set by ffi/build.rs); the first symlink carries this name.
const SONAME: &str = "libhsakmt.so.1";

/// What the Rust standard library inside libhsakmt.a needs from the C runtime when a program
/// links the .a: rustc's `native-static-libs` note for hsakmt-ffi (`cargo rustc --release -p
/// hsakmt-ffi --lib --crate-type staticlib -- --print native-static-libs`), without `c`. Goes
/// into libhsakmt.pc's Libs.private and the static CMake target; the install test links a
/// program statically with exactly these.
const NATIVE_STATIC_LIBS: &[&str] = &["gcc_s", "util", "rt", "pthread", "m", "dl"];

const PC_IN: &str = include_str!("../../../ffi/hsakmt.pc.in");
const CONFIG_IN: &str = include_str!("../../../ffi/cmake/hsakmt-config.cmake.in");
const CONFIG_VERSION_IN: &str = include_str!("../../../ffi/cmake/hsakmt-config-version.cmake.in");

const USAGE: &str = "usage: cargo run --release -p hsakmt-install -- --prefix DIR [options]

Builds libhsakmt.so/.a, libhsakmt_model.so, libdtif.so and kmtinfo (cargo build -p hsakmt-ffi
-p hsakmt-model -p hsakmt-dtif -p kmtinfo) and installs them with the headers, libhsakmt.pc and the hsakmt CMake package.

  --prefix DIR     install prefix (required); headers go to DIR/include, kmtinfo to DIR/bin
  --libdir DIR     library directory: relative to the prefix (default `lib`; e.g.
                   `lib/x86_64-linux-gnu`, `lib64`) or absolute
  --destdir DIR    stage the files under DIR (packaging); paths written into the files
                   stay those of the final prefix
  --profile NAME   cargo profile to build and install (default `release`)
  --no-strip       keep the debug information in the installed ELF files";

struct Args {
    prefix: PathBuf,
    libdir: PathBuf,
    destdir: Option<PathBuf>,
    profile: String,
    strip: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut prefix = None;
    let mut libdir = None;
    let mut destdir = None;
    let mut profile = "release".to_string();
    let mut strip = true;
    let mut it = std::env::args_os().skip(1);
    while let Some(arg) = it.next() {
        let arg = arg.into_string().map_err(|a| format!("argument {a:?} is not UTF-8"))?;
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = || -> Result<String, String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => it.next().and_then(|v| v.into_string().ok()).ok_or_else(|| format!("{name} needs a UTF-8 value")),
            }
        };
        match name.as_str() {
            "--prefix" => prefix = Some(PathBuf::from(value()?)),
            "--libdir" => libdir = Some(PathBuf::from(value()?)),
            "--destdir" => destdir = Some(PathBuf::from(value()?)),
            "--profile" => profile = value()?,
            "--no-strip" => strip = false,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ => return Err(format!("unknown argument {arg:?}")),
        }
    }
    let prefix = prefix.ok_or("--prefix is required")?;
    Ok(Args { prefix, libdir: libdir.unwrap_or_else(|| "lib".into()), destdir, profile, strip })
}

/// `p` made absolute (against the current directory) and lexically clean; `..` is refused,
/// since the files written depend on where the directories really are.
fn absolute(p: &Path, what: &str) -> Result<PathBuf, String> {
    let cwd = std::env::current_dir().map_err(|e| format!("current directory: {e}"))?;
    let mut out = PathBuf::from("/");
    for c in cwd.join(p).components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir | Component::Prefix(_) => return Err(format!("{what} {}: `..` is not supported", p.display())),
        }
    }
    Ok(out)
}

/// The final (not staged) directories.
struct Layout {
    prefix: PathBuf,
    libdir: PathBuf,
    includedir: PathBuf,
    bindir: PathBuf,
    /// libdir relative to the prefix, when it lies inside it.
    libdir_in_prefix: Option<PathBuf>,
}

impl Layout {
    fn new(args: &Args) -> Result<Layout, String> {
        let prefix = absolute(&args.prefix, "--prefix")?;
        let libdir = absolute(&prefix.join(&args.libdir), "--libdir")?;
        for p in [&prefix, &libdir] {
            let s = p.to_str().ok_or_else(|| format!("{} is not UTF-8", p.display()))?;
            // These would need quoting in libhsakmt.pc or split CMake lists.
            if let Some(c) = s.chars().find(|c| c.is_whitespace() || "\"'$\\#;".contains(*c)) {
                return Err(format!("{s}: paths containing {c:?} are not supported"));
            }
        }
        let libdir_in_prefix = libdir.strip_prefix(&prefix).ok().filter(|r| !r.as_os_str().is_empty()).map(Path::to_path_buf);
        if libdir == prefix {
            return Err("--libdir must not be the prefix itself".into());
        }
        Ok(Layout { includedir: prefix.join("include"), bindir: prefix.join("bin"), prefix, libdir, libdir_in_prefix })
    }

    /// libhsakmt.pc from its template.
    fn pc(&self) -> String {
        let prefix = self.prefix.to_str().unwrap();
        let libdir = match &self.libdir_in_prefix {
            Some(rel) => format!("${{prefix}}/{}", rel.display()),
            None => self.libdir.display().to_string(),
        };
        let static_libs: Vec<String> = NATIVE_STATIC_LIBS.iter().map(|l| format!("-l{l}")).collect();
        render(
            PC_IN,
            &[
                ("prefix", prefix),
                ("libdir", &libdir),
                ("includedir", "${prefix}/include"),
                ("version", LIB_VERSION),
                ("static_libs", &static_libs.join(" ")),
            ],
        )
    }

    /// hsakmt-config.cmake from its template: the include directory relative to the file's own
    /// directory (<libdir>/cmake/hsakmt) when the libdir is inside the prefix, whatever its depth.
    fn cmake_config(&self) -> String {
        let includedir = match &self.libdir_in_prefix {
            Some(rel) => format!("${{_hsakmt_here}}/{}include", "../".repeat(rel.components().count() + 2)),
            None => self.includedir.display().to_string(),
        };
        render(CONFIG_IN, &[("includedir", &includedir), ("version", LIB_VERSION), ("static_libs", &NATIVE_STATIC_LIBS.join(";"))])
    }

    fn cmake_config_version(&self) -> String {
        render(CONFIG_VERSION_IN, &[("version", LIB_VERSION)])
    }
}

/// Replaces `@name@` placeholders; every placeholder of the template must be given.
fn render(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (name, value) in values {
        out = out.replace(&format!("@{name}@"), value);
    }
    let left = out.split('@').skip(1).step_by(2).find(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase() || c == '_'));
    assert!(left.is_none(), "template placeholder @{}@ has no value", left.unwrap_or_default());
    out
}

fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// The workspace this installer belongs to.
fn workspace_root() -> Result<PathBuf, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().map_err(|e| format!("workspace {}: {e}", root.display()))
}

fn run(cmd: &mut Command) -> Result<Vec<u8>, String> {
    let out = cmd.stderr(std::process::Stdio::inherit()).output().map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{cmd:?} failed ({})", out.status));
    }
    Ok(out.stdout)
}

/// Builds the four packages; returns the directory holding their artifacts.
fn build(root: &Path, profile: &str) -> Result<PathBuf, String> {
    eprintln!("building (cargo build --profile {profile} -p hsakmt-ffi -p hsakmt-model -p hsakmt-dtif -p kmtinfo)");
    run(Command::new(cargo()).current_dir(root).args([
        "build",
        "--profile",
        profile,
        "-p",
        "hsakmt-ffi",
        "-p",
        "hsakmt-model",
        "-p",
        "hsakmt-dtif",
        "-p",
        "kmtinfo",
    ]))?;
    // The target directory as cargo resolves it (CARGO_TARGET_DIR, config files).
    let meta = run(Command::new(cargo()).current_dir(root).args(["metadata", "--format-version", "1", "--no-deps"]))?;
    let meta = String::from_utf8(meta).map_err(|_| "cargo metadata: output is not UTF-8")?;
    let target = json_string_field(&meta, "target_directory").ok_or("cargo metadata: no target_directory")?;
    let dir = match profile {
        "dev" | "test" => "debug",
        "release" | "bench" => "release",
        custom => custom,
    };
    Ok(Path::new(&target).join(dir))
}

/// The value of the first `"key":"value"` in a JSON text (cargo metadata's compact output).
fn json_string_field(json: &str, key: &str) -> Option<String> {
    let start = json.find(&format!("\"{key}\":\""))? + key.len() + 4;
    let mut out = String::new();
    let mut chars = json[start..].chars();
    loop {
        match chars.next()? {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                }
                'n' => out.push('\n'),
                't' => out.push('\t'),
                c => out.push(c), // \" \\ \/
            },
            c => out.push(c),
        }
    }
}

/// Writes files under the destdir (if any); every file goes to a temporary name in its
/// directory first and is renamed into place, so a program running from the old copy keeps it.
struct Installer {
    destdir: Option<PathBuf>,
    strip: bool,
    /// Final paths, in install order.
    installed: Vec<PathBuf>,
}

impl Installer {
    fn staged(&self, p: &Path) -> PathBuf {
        match &self.destdir {
            Some(d) => d.join(p.strip_prefix("/").unwrap_or(p)),
            None => p.to_path_buf(),
        }
    }

    /// The staged destination's temporary sibling, with its directory created.
    fn temp_for(&self, dst: &Path) -> Result<(PathBuf, PathBuf), String> {
        let staged = self.staged(dst);
        let dir = staged.parent().unwrap();
        fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        let tmp = dir.join(format!(".{}.hsakmt-install", staged.file_name().unwrap().to_string_lossy()));
        let _ = fs::remove_file(&tmp);
        Ok((staged, tmp))
    }

    fn finish(&mut self, tmp: &Path, staged: &Path, dst: &Path) -> Result<(), String> {
        fs::rename(tmp, staged).map_err(|e| format!("rename {} to {}: {e}", tmp.display(), staged.display()))?;
        self.installed.push(dst.to_path_buf());
        Ok(())
    }

    /// Copies `src` (stripping debug information from ELF files unless told not to).
    fn file(&mut self, src: &Path, dst: &Path, mode: u32, elf: bool) -> Result<(), String> {
        let (staged, tmp) = self.temp_for(dst)?;
        if elf && self.strip {
            let strip = std::env::var_os("STRIP").unwrap_or_else(|| "strip".into());
            run(Command::new(&strip).arg("--strip-debug").arg("-o").arg(&tmp).arg(src)).map_err(|e| {
                let _ = fs::remove_file(&tmp);
                format!("{e}\n(strip comes with binutils; --no-strip installs unstripped files)")
            })?;
        } else {
            fs::copy(src, &tmp).map_err(|e| format!("copy {} to {}: {e}", src.display(), tmp.display()))?;
        }
        fs::set_permissions(&tmp, fs::Permissions::from_mode(mode)).map_err(|e| format!("chmod {}: {e}", tmp.display()))?;
        self.finish(&tmp, &staged, dst)
    }

    fn text(&mut self, text: &str, dst: &Path) -> Result<(), String> {
        let (staged, tmp) = self.temp_for(dst)?;
        fs::write(&tmp, text).map_err(|e| format!("write {}: {e}", tmp.display()))?;
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o644)).map_err(|e| format!("chmod {}: {e}", tmp.display()))?;
        self.finish(&tmp, &staged, dst)
    }

    fn link(&mut self, target: &str, dst: &Path) -> Result<(), String> {
        let (staged, tmp) = self.temp_for(dst)?;
        symlink(target, &tmp).map_err(|e| format!("symlink {}: {e}", tmp.display()))?;
        self.finish(&tmp, &staged, dst)
    }

    /// Copies a directory tree of regular files (the headers).
    fn tree(&mut self, src: &Path, dst: &Path) -> Result<(), String> {
        let mut entries: Vec<_> = fs::read_dir(src)
            .map_err(|e| format!("read {}: {e}", src.display()))?
            .collect::<Result<_, _>>()
            .map_err(|e| format!("read {}: {e}", src.display()))?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let (from, to) = (e.path(), dst.join(e.file_name()));
            if from.is_dir() {
                self.tree(&from, &to)?;
            } else {
                self.file(&from, &to, 0o644, false)?;
            }
        }
        Ok(())
    }
}

fn install(args: &Args) -> Result<(), String> {
    let layout = Layout::new(args)?;
    let destdir = args.destdir.as_deref().map(|d| absolute(d, "--destdir")).transpose()?;
    let root = workspace_root()?;
    let built = build(&root, &args.profile)?;
    let artifact = |name: &str| {
        let p = built.join(name);
        if p.is_file() {
            Ok(p)
        } else {
            Err(format!("{} was not built", p.display()))
        }
    };
    let (so, a, model, dtif, kmtinfo) = (
        artifact("libhsakmt.so")?,
        artifact("libhsakmt.a")?,
        artifact("libhsakmt_model.so")?,
        artifact("libdtif.so")?,
        artifact("kmtinfo")?,
    );

    let mut inst = Installer { destdir, strip: args.strip, installed: Vec::new() };
    let lib = &layout.libdir;
    let real = format!("libhsakmt.so.{LIB_VERSION}");
    inst.file(&so, &lib.join(&real), 0o755, true)?;
    inst.link(&real, &lib.join(SONAME))?;
    inst.link(SONAME, &lib.join("libhsakmt.so"))?;
    inst.file(&a, &lib.join("libhsakmt.a"), 0o644, true)?;
    inst.file(&model, &lib.join("libhsakmt_model.so"), 0o755, true)?;
    inst.file(&dtif, &lib.join("libdtif.so"), 0o755, true)?;
    inst.text(&layout.pc(), &lib.join("pkgconfig/libhsakmt.pc"))?;
    inst.text(&layout.cmake_config(), &lib.join("cmake/hsakmt/hsakmt-config.cmake"))?;
    inst.text(&layout.cmake_config_version(), &lib.join("cmake/hsakmt/hsakmt-config-version.cmake"))?;
    inst.tree(&root.join("ffi/include/hsakmt"), &layout.includedir.join("hsakmt"))?;
    inst.file(&kmtinfo, &layout.bindir.join("kmtinfo"), 0o755, true)?;

    for p in &inst.installed {
        let staged = inst.staged(p);
        match fs::read_link(&staged) {
            Ok(t) => println!("{} -> {}", p.display(), t.display()),
            Err(_) => println!("{} ({} bytes)", p.display(), fs::metadata(&staged).map(|m| m.len()).unwrap_or(0)),
        }
    }
    if inst.destdir.is_none() {
        eprintln!(
            "installed libhsakmt {LIB_VERSION} into {}. Programs linked against it find libhsakmt.so.1 through their RUNPATH \
             (CMake's build tree sets one; with pkg-config add -Wl,-rpath,{}), LD_LIBRARY_PATH, or ldconfig for a system directory.",
            layout.prefix.display(),
            layout.libdir.display()
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("hsakmt-install: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match install(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hsakmt-install: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(prefix: &str, libdir: &str) -> Layout {
        Layout::new(&Args { prefix: prefix.into(), libdir: libdir.into(), destdir: None, profile: "dev".into(), strip: true }).unwrap()
    }

    #[test]
    fn include_dir_follows_the_libdir_depth() {
        for (libdir, up) in [("lib", "../../../"), ("lib64", "../../../"), ("lib/x86_64-linux-gnu", "../../../../")] {
            let text = layout("/opt/h", libdir).cmake_config();
            assert!(text.contains(&format!("\"${{_hsakmt_here}}/{up}include\"")), "{libdir}");
            assert!(text.contains(&format!("libhsakmt.so.{LIB_VERSION}\"")));
        }
        // A libdir outside the prefix: absolute paths.
        let l = layout("/opt/h", "/usr/lib64");
        assert!(l.cmake_config().contains("\"/opt/h/include\""));
        assert!(l.pc().contains("\nlibdir=/usr/lib64\n"));
    }

    #[test]
    fn pc_file_values() {
        let pc = layout("/opt/h/", "lib/x86_64-linux-gnu").pc();
        for line in [
            "prefix=/opt/h",
            "libdir=${prefix}/lib/x86_64-linux-gnu",
            "includedir=${prefix}/include",
            &format!("Version: {LIB_VERSION}"),
            "Libs: -L${libdir} -lhsakmt",
            "Libs.private: -lgcc_s -lutil -lrt -lpthread -lm -ldl",
            "Cflags: -I${includedir}",
        ] {
            assert!(pc.lines().any(|l| l == line), "{line:?} missing from\n{pc}");
        }
    }

    #[test]
    fn bad_paths_are_refused() {
        let bad = |prefix: &str, libdir: &str| {
            Layout::new(&Args { prefix: prefix.into(), libdir: libdir.into(), destdir: None, profile: "dev".into(), strip: true }).is_err()
        };
        assert!(bad("/opt/a b", "lib"));
        assert!(bad("/opt/h", "../lib"));
        assert!(bad("/opt/h", "."));
        assert!(bad("/opt/$x", "lib"));
        assert!(!bad("/opt/h", "lib64"));
    }

    #[test]
    fn lib_version_major_is_the_soname_major() {
        assert_eq!(format!("libhsakmt.so.{}", LIB_VERSION.split('.').next().unwrap()), SONAME);
        assert_eq!(LIB_VERSION.split('.').count(), 3);
    }

    #[test]
    fn json_string_field_unescapes() {
        let j = r#"{"packages":[],"target_directory":"/a/\"b\\c\u0041","version":1}"#;
        assert_eq!(json_string_field(j, "target_directory").as_deref(), Some("/a/\"b\\cA"));
        assert_eq!(json_string_field(j, "workspace_root"), None);
    }
}
