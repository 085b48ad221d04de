//! kmtinfo: what the thunk sees — a summary table of the agents, each node's details (memory,
//! caches grouped by level, type and size, links), the GPU topology (link type, weight, hops,
//! NUMA node) — through the same hsaKmt* calls a C program makes. Without /dev/kfd it runs on
//! the built-in model. docs/kmtinfo.md describes every option and the JSON fields.

mod counters;
mod events;
mod info;
mod out;
mod report;
mod smoke;
mod smoke_aql;
mod text;

use clap::{Parser, Subcommand};
use serde::Serialize;
use std::process::ExitCode;

/// Show the KFD topology through hsakmt-rs (on /dev/kfd, or the built-in software model).
///
/// Without /dev/kfd and without a model variable (HSAKMT_MODEL, HSA_MODEL_TOPOLOGY,
/// HSA_MODEL_LIB), kmtinfo runs on the built-in model and says so on its first line.
#[derive(Parser, Debug)]
#[command(name = "kmtinfo", version, about, long_about, disable_help_subcommand = true)]
struct Cli {
    /// Print JSON instead of text (the report, --smoke, --list-models)
    #[arg(long, global = true)]
    json: bool,

    /// Run on the software model serving the sysfs-layout tree DIR (as HSA_MODEL_TOPOLOGY=DIR)
    #[arg(long, value_name = "DIR", global = true, conflicts_with = "model")]
    topology: Option<String>,

    /// Run on the built-in model system NAME (as HSAKMT_MODEL=NAME); see --list-models
    #[arg(long, value_name = "NAME", global = true, value_parser = clap::builder::PossibleValuesParser::new(hsakmt_model::catalogue_names()))]
    model: Option<String>,

    /// List the built-in model systems with what each one is
    #[arg(long)]
    list_models: bool,

    /// Show only GPU N (index among the GPUs, as in the summary's "GPU" column); repeatable
    /// or comma-separated
    #[arg(long = "gpu", value_name = "N", value_delimiter = ',')]
    gpus: Vec<u32>,

    /// Show only GPU nodes (no CPU nodes)
    #[arg(long)]
    gpus_only: bool,

    /// Compact view: summary table and one topology line per GPU, no per-node details (the
    /// default on systems of more than 16 nodes)
    #[arg(long, conflicts_with = "full")]
    compact: bool,

    /// Full view: per-node details and matrices whatever the system's size
    #[arg(long)]
    full: bool,

    /// List every cache entry as the KFD reports it (default: grouped by level, type and size)
    #[arg(long)]
    raw_caches: bool,

    /// Run a dispatch smoke test on the first GPU (SDMA, PM4 and AQL queues, events) and print
    /// each step's latency (min and median over --repeat runs)
    #[arg(long)]
    smoke: bool,

    /// How many times --smoke runs each step
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000), requires = "smoke")]
    repeat: u32,

    /// Watch SMI events on every GPU, like `amd-smi event`: a comma-separated list of names
    /// (all, VMFAULT, THERMAL_THROTTLE, GPU_PRE_RESET, GPU_POST_RESET, MIGRATE_START,
    /// MIGRATE_END, PAGE_FAULT_START, PAGE_FAULT_END, QUEUE_EVICTION, QUEUE_RESTORE,
    /// UNMAP_FROM_GPU, PROCESS_START, PROCESS_END); until Ctrl-C, --count or --timeout
    #[arg(long, value_name = "NAMES", conflicts_with_all = ["smoke", "json"])]
    events: Option<String>,

    /// With --events: stop after N events
    #[arg(long, value_name = "N", requires = "events")]
    count: Option<u64>,

    /// With --events: stop after SECONDS
    #[arg(long, value_name = "SECONDS", requires = "events", value_parser = parse_seconds)]
    timeout: Option<f64>,

    /// With --events: make kmtinfo cause a GPU page fault itself
    #[arg(long, requires = "events")]
    fault: bool,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List each GPU's performance-counter blocks and what the backend counts
    Counters,
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if t >= 0.0 && t.is_finite() => Ok(t),
        _ => Err("expected a number of seconds (0 or more)".into()),
    }
}

/// What the thunk will open, as data (`kind`, `name` or `path`) and as a sentence.
#[derive(Serialize, Debug, Clone)]
pub struct Backend {
    /// `kfd`, `builtin-model`, `topology-model` or `model-plugin`.
    pub kind: &'static str,
    /// The catalogue system's name (`builtin-model`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The topology directory (`topology-model`) or the plugin library (`model-plugin`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Chosen by kmtinfo because there is no /dev/kfd and nothing else was asked for.
    pub fallback: bool,
    /// The same, as the sentence the text report starts with.
    pub description: String,
}

impl Backend {
    fn new(kind: &'static str, name: Option<String>, path: Option<String>, fallback: bool) -> Backend {
        let description = match (kind, &name, &path) {
            ("builtin-model", Some(n), _) if fallback => {
                format!("no /dev/kfd on this machine: running on the built-in software model \"{n}\"")
            }
            ("builtin-model", Some(n), _) => format!("backend: built-in software model \"{n}\""),
            ("topology-model", _, Some(p)) => format!("backend: software model on topology directory {p}"),
            ("model-plugin", _, Some(p)) => format!("backend: model plugin {p}"),
            _ => "backend: /dev/kfd".to_string(),
        };
        Backend { kind, name, path, fallback, description }
    }
}

/// A usage mistake found after parsing (exit status 2), or a failure (exit status 1).
pub enum Failure {
    Usage(String),
    Failed(String),
}

impl From<String> for Failure {
    fn from(s: String) -> Failure {
        Failure::Failed(s)
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // --help and --version go to stdout with status 0, mistakes to stderr with 2.
            let code = e.exit_code();
            if e.use_stderr() {
                let _ = e.print();
            } else {
                out::print(&e.render().to_string());
            }
            return ExitCode::from(code as u8);
        }
    };
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(msg)) => {
            eprintln!("kmtinfo: {msg}");
            ExitCode::from(2)
        }
        Err(Failure::Failed(msg)) => {
            eprintln!("kmtinfo: {msg}");
            ExitCode::FAILURE
        }
    }
}

#[derive(Serialize)]
struct ModelEntry {
    name: &'static str,
    description: &'static str,
    default: bool,
}

fn run(cli: &Cli) -> Result<(), Failure> {
    if cli.list_models {
        let list: Vec<ModelEntry> = hsakmt_model::catalogue_names()
            .iter()
            .map(|&name| ModelEntry {
                name,
                description: hsakmt_model::catalogue::describe(name).unwrap_or(""),
                default: name == hsakmt_model::catalogue::DEFAULT_ENTRY,
            })
            .collect();
        if cli.json {
            out::json(&list);
        } else {
            let w = list.iter().map(|m| m.name.len()).max().unwrap_or(0);
            for m in &list {
                out::print(&format!("{:<w$}  {}{}\n", m.name, m.description, if m.default { " [default]" } else { "" }));
            }
        }
        return Ok(());
    }
    let backend = choose_backend(cli)?;
    if matches!(cli.command, Some(Command::Counters)) {
        if cli.json {
            return Err(Failure::Usage("counters has no JSON form".into()));
        }
        out::print(&format!("{}\n", backend.description));
        return counters::list().map_err(|e| Failure::Failed(format!("counters: {e}")));
    }
    if let Some(names) = &cli.events {
        out::print(&format!("{}\n", backend.description));
        let o = events::Options {
            names: names.clone(),
            count: cli.count,
            timeout: cli.timeout.map(std::time::Duration::from_secs_f64),
            fault: cli.fault,
        };
        return events::run(&o).map_err(|e| Failure::Failed(format!("--events: {e}")));
    }
    if cli.smoke {
        let r = smoke::run(cli.repeat).map_err(|e| Failure::Failed(format!("--smoke: {e}")))?;
        if cli.json {
            out::json(&smoke::JsonReport { backend: &backend, smoke: &r });
        } else {
            out::print(&format!("{}\n{}", backend.description, smoke::render_text(&r)));
        }
        return Ok(());
    }
    let system = report::collect()?;
    let opts = info::Options { gpus: cli.gpus.clone(), gpus_only: cli.gpus_only, raw_caches: cli.raw_caches };
    let sys = info::build(&backend, &system, &opts).map_err(Failure::Usage)?;
    if cli.json {
        out::json(&sys);
    } else {
        let compact = cli.compact || (!cli.full && sys.nodes.len() > text::COMPACT_ABOVE);
        out::print(&text::render(&sys, compact, cli.raw_caches));
    }
    Ok(())
}

/// Decide what the thunk will open. The choice is made through the thunk's own environment
/// variables, set here before the first hsaKmtOpenKFD. A topology directory is checked first,
/// so that a mistake is reported once, by kmtinfo.
fn choose_backend(cli: &Cli) -> Result<Backend, Failure> {
    if let Some(dir) = &cli.topology {
        check_topology_dir(dir)?;
        std::env::set_var("HSA_MODEL_TOPOLOGY", dir);
        return Ok(Backend::new("topology-model", None, Some(dir.clone()), false));
    }
    if let Some(name) = &cli.model {
        std::env::set_var("HSAKMT_MODEL", name);
        return Ok(Backend::new("builtin-model", Some(name.clone()), None, false));
    }
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    if let Some(lib) = var("HSA_MODEL_LIB") {
        return Ok(Backend::new("model-plugin", None, Some(lib), false));
    }
    if let Some(dir) = var("HSA_MODEL_TOPOLOGY") {
        return Ok(Backend::new("topology-model", None, Some(dir), false));
    }
    if let Some(name) = var("HSAKMT_MODEL") {
        return Ok(Backend::new("builtin-model", Some(name), None, false));
    }
    if std::path::Path::new("/dev/kfd").exists() {
        return Ok(Backend::new("kfd", None, None, false));
    }
    let name = hsakmt_model::catalogue::DEFAULT_ENTRY;
    std::env::set_var("HSAKMT_MODEL", name);
    Ok(Backend::new("builtin-model", Some(name.to_string()), None, true))
}

fn check_topology_dir(dir: &str) -> Result<(), Failure> {
    let d = std::path::Path::new(dir);
    if !d.is_dir() {
        return Err(Failure::Failed(format!("--topology {dir}: no such directory")));
    }
    if !d.join("nodes").is_dir() {
        let hint = if d.join("tree.txt").is_file() {
            " (this is a packed test bundle, not a tree; write a real one with \
             `cargo run -p hsakmt-model --example export-topology -- NAME DIR`)"
        } else {
            ""
        };
        return Err(Failure::Failed(format!("--topology {dir}: no nodes/ directory: not a sysfs-layout KFD topology tree{hint}")));
    }
    Ok(())
}
