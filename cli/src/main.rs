//! kmtinfo: what the thunk sees — nodes, memory, caches, links and a link matrix — through
//! the same hsaKmt* calls a C program makes. Without /dev/kfd it runs on the built-in model.

mod counters;
mod events;
mod json;
mod report;
mod smoke;
mod smoke_aql;

use std::process::ExitCode;

const USAGE: &str = "usage: kmtinfo [--json] [--topology DIR] [--model NAME] [--list-models] [--smoke]
               [--events NAMES [--count N] [--timeout SECONDS] [--fault]]

  --json           print the report as JSON
  --topology DIR   run on the software model serving the sysfs-layout tree DIR
                   (same as HSA_MODEL_TOPOLOGY=DIR)
  --model NAME     run on the built-in model system NAME (same as HSAKMT_MODEL=NAME)
  --list-models    list the built-in model systems
  counters         list each GPU's performance-counter blocks and what the backend counts
  --smoke          run a dispatch smoke test on the first GPU (SDMA, PM4 and AQL queues,
                   events) and print each step's latency
  --events NAMES   watch SMI events on every GPU, like `amd-smi event`: NAMES is a comma-
                   separated list (all, VMFAULT, THERMAL_THROTTLE, GPU_PRE_RESET,
                   GPU_POST_RESET, MIGRATE_START, MIGRATE_END, PAGE_FAULT_START,
                   PAGE_FAULT_END, QUEUE_EVICTION, QUEUE_RESTORE, UNMAP_FROM_GPU,
                   PROCESS_START, PROCESS_END); until Ctrl-C, --count N events or
                   --timeout SECONDS; --fault makes kmtinfo cause a GPU page fault itself

Without /dev/kfd and without a model variable, kmtinfo runs on the built-in model.";

struct Args {
    json: bool,
    topology: Option<String>,
    model: Option<String>,
    list: bool,
    smoke: bool,
    counters: bool,
    events: Option<String>,
    count: Option<u64>,
    timeout: Option<f64>,
    fault: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        json: false,
        topology: None,
        model: None,
        list: false,
        smoke: false,
        counters: false,
        events: None,
        count: None,
        timeout: None,
        fault: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--json" => a.json = true,
            "--topology" => a.topology = Some(it.next().ok_or("--topology needs a directory")?),
            "--model" => a.model = Some(it.next().ok_or("--model needs a name")?),
            "--list-models" => a.list = true,
            "--smoke" => a.smoke = true,
            "--events" => a.events = Some(it.next().ok_or("--events needs event names (or all)")?),
            "--count" => a.count = Some(it.next().and_then(|v| v.parse().ok()).ok_or("--count needs a number")?),
            "--timeout" => {
                a.timeout = Some(it.next().and_then(|v| v.parse().ok()).filter(|t: &f64| *t >= 0.0).ok_or("--timeout needs seconds")?)
            }
            "--fault" => a.fault = true,
            "counters" => a.counters = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("kmtinfo: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    if args.list {
        for name in hsakmt_model::catalogue_names() {
            println!("{name}");
        }
        return ExitCode::SUCCESS;
    }
    if args.events.is_none() && (args.count.is_some() || args.timeout.is_some() || args.fault) {
        eprintln!("kmtinfo: --count, --timeout and --fault go with --events\n{USAGE}");
        return ExitCode::from(2);
    }
    let backend_line = choose_backend(&args);
    if args.counters {
        println!("{backend_line}");
        return match counters::list() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("kmtinfo counters: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if let Some(names) = &args.events {
        println!("{backend_line}");
        let o = events::Options {
            names: names.clone(),
            count: args.count,
            timeout: args.timeout.map(std::time::Duration::from_secs_f64),
            fault: args.fault,
        };
        return match events::run(&o) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("kmtinfo --events: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if args.smoke {
        println!("{backend_line}");
        return match smoke::run() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("kmtinfo --smoke: {e}");
                ExitCode::FAILURE
            }
        };
    }
    match report::collect() {
        Ok(system) => {
            if args.json {
                println!("{}", json::render(&backend_line, &system));
            } else {
                println!("{backend_line}");
                print!("{}", report::render_text(&system));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("kmtinfo: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Decide what the thunk will open and say it in one line. The choice is made through the
/// thunk's own environment variables, set here before the first hsaKmtOpenKFD.
fn choose_backend(args: &Args) -> String {
    if let Some(dir) = &args.topology {
        std::env::set_var("HSA_MODEL_TOPOLOGY", dir);
        return format!("backend: software model on topology directory {dir}");
    }
    if let Some(name) = &args.model {
        std::env::set_var("HSAKMT_MODEL", name);
        return format!("backend: built-in software model \"{name}\"");
    }
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    if let Some(lib) = var("HSA_MODEL_LIB") {
        return format!("backend: model plugin {lib}");
    }
    if let Some(dir) = var("HSA_MODEL_TOPOLOGY") {
        return format!("backend: software model on topology directory {dir}");
    }
    if let Some(name) = var("HSAKMT_MODEL") {
        return format!("backend: built-in software model \"{name}\"");
    }
    if hsakmt_linux_present() {
        return "backend: /dev/kfd".to_string();
    }
    let name = hsakmt_model::catalogue::DEFAULT_ENTRY;
    std::env::set_var("HSAKMT_MODEL", name);
    format!("no /dev/kfd on this machine: running on the built-in software model \"{name}\"")
}

fn hsakmt_linux_present() -> bool {
    std::path::Path::new("/dev/kfd").exists()
}
