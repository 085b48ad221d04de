//! Write a catalogue entry as a sysfs-layout directory (for `HSA_MODEL_TOPOLOGY`).
//!
//! `cargo run -p hsakmt-model --example export-topology -- <name> <dir>`; without arguments,
//! lists the catalogue.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [name, dir] = args.as_slice() else {
        eprintln!("usage: export-topology <name> <dir>");
        for n in hsakmt_model::catalogue_names() {
            eprintln!("  {n:<12} {}", hsakmt_model::catalogue::describe(n).unwrap_or(""));
        }
        std::process::exit(2);
    };
    if let Err(e) = hsakmt_model::catalogue::export(name, std::path::Path::new(dir)) {
        eprintln!("export-topology: {e}");
        std::process::exit(1);
    }
}
