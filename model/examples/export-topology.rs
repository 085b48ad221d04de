//! Write a catalogue entry as a sysfs-layout directory (for `HSA_MODEL_TOPOLOGY`).
//!
//! `cargo run -p hsakmt-model --example export-topology -- [--upstream-gpu-ids] <name> <dir>`;
//! without arguments, lists the catalogue. `--upstream-gpu-ids` rewrites every GPU node's
//! `gpu_id` to its node number + 1, the rule upstream libhsakmt's own model mode (plugin
//! interface 0.4, model/PLUGIN.md) enforces ("Node %u has KFD GPU ID %u, but should be %u").

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let upstream_ids = args.first().is_some_and(|a| a == "--upstream-gpu-ids");
    if upstream_ids {
        args.remove(0);
    }
    let [name, dir] = args.as_slice() else {
        eprintln!("usage: export-topology [--upstream-gpu-ids] <name> <dir>");
        for n in hsakmt_model::catalogue_names() {
            eprintln!("  {n:<12} {}", hsakmt_model::catalogue::describe(n).unwrap_or(""));
        }
        std::process::exit(2);
    };
    let dir = std::path::Path::new(dir);
    if let Err(e) = hsakmt_model::catalogue::export(name, dir) {
        eprintln!("export-topology: {e}");
        std::process::exit(1);
    }
    if upstream_ids {
        if let Err(e) = renumber_gpus(dir) {
            eprintln!("export-topology: {e}");
            std::process::exit(1);
        }
    }
}

/// nodes/<n>/gpu_id := n + 1 for every GPU node (a non-zero gpu_id).
fn renumber_gpus(dir: &std::path::Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir.join("nodes"))? {
        let entry = entry?;
        let Some(n) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let path = entry.path().join("gpu_id");
        let id: u32 = std::fs::read_to_string(&path)?.trim().parse().unwrap_or(0);
        if id != 0 {
            std::fs::write(&path, format!("{}\n", n + 1))?;
        }
    }
    Ok(())
}
