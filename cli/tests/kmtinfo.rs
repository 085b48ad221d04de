//! kmtinfo as a user runs it. Expected values come from the topology files (the real captures
//! packed in core/tests/data/topology, of which the catalogue's mi25, mi210 and mi300x-cpx
//! are byte-equal copies: model/CATALOGUE.md), from hand counts written next to them, and
//! from model/CATALOGUE.md's tables — never from kmtinfo's own output.

use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

fn cmd(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kmtinfo"));
    cmd.args(args);
    for v in ["HSA_MODEL_TOPOLOGY", "HSA_MODEL_LIB", "HSAKMT_MODEL", "HSA_OVERRIDE_GFX_VERSION", "HSAKMT_DEBUG_LEVEL"] {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

fn kmtinfo(args: &[&str], env: &[(&str, &str)]) -> Output {
    cmd(args, env).output().expect("run kmtinfo")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Run, expect success, parse stdout as JSON.
fn json(args: &[&str]) -> Value {
    let o = kmtinfo(args, &[]);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}):\n{}", stdout(&o)))
}

// ---------------------------------------------------------------------------------------------
// The packed topology captures (core/tests/support/pack_fixture.py: "@@ <path> <len>" headers).

struct Tree(BTreeMap<String, String>);

impl Tree {
    fn load(name: &str) -> Tree {
        let path = format!("{}/../core/tests/data/topology/{name}/tree.txt", env!("CARGO_MANIFEST_DIR"));
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut files = BTreeMap::new();
        let mut at = 0;
        while at < bytes.len() {
            let end = at + bytes[at..].iter().position(|&b| b == b'\n').expect("header line");
            let line = std::str::from_utf8(&bytes[at..end]).unwrap();
            at = end + 1;
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            let rest = line.strip_prefix("@@ ").expect("@@ header");
            let (p, len) = rest.rsplit_once(' ').unwrap();
            let len: usize = len.parse().unwrap();
            files.insert(p.to_string(), String::from_utf8_lossy(&bytes[at..at + len]).into_owned());
            at += len + 1;
        }
        Tree(files)
    }

    /// `key value` lines of one properties file.
    fn props(&self, path: &str) -> BTreeMap<String, u64> {
        let text = self.0.get(path).unwrap_or_else(|| panic!("no {path}"));
        text.lines().filter_map(|l| l.split_once(' ')).filter_map(|(k, v)| Some((k.to_string(), v.trim().parse().ok()?))).collect()
    }

    /// The paths of `nodes/N/<dir>/*/properties`, in numeric order.
    fn entries(&self, node: u64, dir: &str) -> Vec<String> {
        let prefix = format!("nodes/{node}/{dir}/");
        let mut v: Vec<(u64, String)> = self
            .0
            .keys()
            .filter_map(|k| {
                let i = k.strip_prefix(&prefix)?.strip_suffix("/properties")?;
                Some((i.parse().ok()?, k.clone()))
            })
            .collect();
        v.sort();
        v.into_iter().map(|(_, k)| k).collect()
    }
}

fn node(j: &Value, id: u64) -> &Value {
    j["nodes"].as_array().unwrap().iter().find(|n| n["id"] == id).unwrap_or_else(|| panic!("no node {id}"))
}

/// "0000:19:00.0" from a KFD location_id (bus << 8 | device << 3 | function) and domain.
fn pci_address(domain: u64, location_id: u64) -> String {
    format!("{domain:04x}:{:02x}:{:02x}.{:x}", location_id >> 8, (location_id >> 3) & 0x1f, location_id & 7)
}

// ---------------------------------------------------------------------------------------------
// CLI basics

#[test]
fn help_and_version_go_to_stdout_with_status_0() {
    for flag in ["--help", "-h"] {
        let o = kmtinfo(&[flag], &[]);
        assert_eq!(o.status.code(), Some(0), "{flag}: {}", stderr(&o));
        assert!(stdout(&o).contains("Usage: kmtinfo"), "{flag}: {}", stdout(&o));
        for opt in ["--model", "--topology", "--json", "--smoke", "--repeat", "--gpu", "--compact", "--raw-caches", "--events", "counters"]
        {
            assert!(stdout(&o).contains(opt), "{flag} does not mention {opt}");
        }
        assert!(o.stderr.is_empty(), "{flag}: {}", stderr(&o));
    }
    let o = kmtinfo(&["--version"], &[]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o).trim(), format!("kmtinfo {}", env!("CARGO_PKG_VERSION")));
}

#[test]
fn usage_mistakes_exit_2_with_one_message_on_stderr() {
    for (args, says) in [
        (&["--model", "mi210", "--topology", "/tmp"][..], "cannot be used with"),
        (&["--model", "nope"][..], "invalid value 'nope'"),
        (&["--bogus"][..], "unexpected argument '--bogus'"),
        (&["--count", "1"][..], "--events"),
        (&["--repeat", "3"][..], "--smoke"),
        (&["--events", "all", "--json"][..], "cannot be used with"),
    ] {
        let o = kmtinfo(args, &[]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}: {}", stdout(&o));
        assert_eq!(err.matches("error:").count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // A GPU the system does not have (mi25 has one).
    let o = kmtinfo(&["--model", "mi25", "--gpu", "1"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o).trim(), "kmtinfo: --gpu 1: this system has 1 GPU: --gpu 0");
}

/// The `--model=NAME` form, and the backend as data.
#[test]
fn model_equals_form_and_backend_as_data() {
    let j = json(&["--model=mi210", "--json"]);
    assert_eq!(j["backend"]["kind"], "builtin-model");
    assert_eq!(j["backend"]["name"], "mi210");
    assert_eq!(j["backend"]["fallback"], false);
    assert!(j["backend"]["description"].as_str().unwrap().contains("mi210"));
    assert_eq!(j["nodes"].as_array().unwrap().len(), 10);
}

#[test]
fn without_dev_kfd_it_runs_the_model_and_says_so() {
    if std::path::Path::new("/dev/kfd").exists() {
        eprintln!("SKIPPED: this machine has /dev/kfd; the fallback is not taken");
        return;
    }
    let o = kmtinfo(&[], &[]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}\n{}", stderr(&o));
    let first = out.lines().next().unwrap_or("");
    assert!(first.contains("no /dev/kfd") && first.contains("software model"), "first line: {first}");
    // The default system is 2 EPYC + 8 MI300X in one XGMI hive: the two sockets joined by
    // HyperTransport weight 32, the GPUs by XGMI.
    assert!(out.contains("Link matrix") && out.contains("HT/32"), "{out}");
    assert!(out.contains("GPU topology") && out.contains("XGMI/"), "{out}");
    let j = json(&["--json"]);
    assert_eq!(j["backend"]["kind"], "builtin-model");
    assert_eq!(j["backend"]["name"], "mi300x");
    assert_eq!(j["backend"]["fallback"], true);
}

/// `kmtinfo ... | head -1`: the reader goes away; kmtinfo ends quietly with status 0. The full
/// view of the 65-node system is far larger than a pipe's buffer, so kmtinfo is still writing
/// when the pipe closes.
#[test]
fn a_closed_pipe_ends_kmtinfo_quietly() {
    let mut child = cmd(&["--model", "mi300x-cpx", "--full"], &[]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    // The reader (and the pipe's read end) is dropped here.
    let o = child.wait_with_output().unwrap();
    assert!(first.contains("mi300x-cpx"), "{first}");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stderr.is_empty(), "nothing on stderr: {}", stderr(&o));

    // The same through a shell pipe, as the issue ran it.
    let sh = format!("set -o pipefail; '{}' --model mi300x-cpx --full | head -1", env!("CARGO_BIN_EXE_kmtinfo"));
    let o = Command::new("bash").args(["-c", &sh]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 1);
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
}

#[test]
fn list_models_gives_each_catalogue_system_with_its_description() {
    let o = kmtinfo(&["--list-models"], &[]);
    let out = stdout(&o);
    assert!(o.status.success());
    // model/CATALOGUE.md's table: six systems, mi300x the default.
    let names = ["mi300x", "mi300x-cpx", "mi210", "rx7900xtx", "mi25", "mi308x-cpx"];
    assert_eq!(out.lines().count(), names.len(), "{out}");
    for name in names {
        let desc = hsakmt_model::catalogue::describe(name).unwrap();
        let line = out.lines().find(|l| l.split_whitespace().next() == Some(name)).unwrap_or_else(|| panic!("{name} missing: {out}"));
        assert!(line.contains(desc), "{line}");
        assert_eq!(line.ends_with("[default]"), name == "mi300x", "{line}");
    }
    let j = json(&["--list-models", "--json"]);
    let list = j.as_array().unwrap();
    assert_eq!(list.iter().map(|m| m["name"].as_str().unwrap()).collect::<Vec<_>>(), names);
    assert!(list.iter().all(|m| m["description"].as_str().is_some_and(|d| d.contains("nodes)"))));
    assert_eq!(list.iter().filter(|m| m["default"] == true).count(), 1);
}

// ---------------------------------------------------------------------------------------------
// Data checked against the topology files

/// mi25 (the complete 2018 capture): every GPU field kmtinfo derives, from the files.
#[test]
fn mi25_json_matches_the_capture() {
    let t = Tree::load("mi25-gfx900-1gpu");
    let j = json(&["--model", "mi25", "--json"]);
    assert_eq!(j["num_nodes"], 2);
    let p = t.props("nodes/1/properties");
    let g = node(&j, 1);
    assert_eq!(g["kind"], "gpu");
    assert_eq!(g["gpu_index"], 0);
    assert_eq!(g["gpu_id"].as_u64(), t.0["nodes/1/gpu_id"].trim().parse().ok());
    assert_eq!(g["simds"].as_u64(), Some(p["simd_count"]));
    assert_eq!(g["compute_units"].as_u64(), Some(p["simd_count"] / p["simd_per_cu"]));
    assert_eq!(g["compute_units"], 64, "Vega 10 has 64 CUs");
    assert_eq!(g["max_clock_mhz"].as_u64(), Some(p["max_engine_clk_fcompute"]));
    assert_eq!(g["device_id"].as_u64(), Some(p["device_id"]));
    assert_eq!(g["drm_render_minor"].as_u64(), Some(p["drm_render_minor"]));
    // location_id 6400 = 0x1900: bus 0x19; this kernel prints no domain (0).
    assert!(!p.contains_key("domain"));
    assert_eq!(g["pci"]["address"], pci_address(0, p["location_id"]));
    assert_eq!(g["pci"]["address"], "0000:19:00.0");
    assert_eq!(g["pci"]["bus"], 0x19);
    // The 2018 kernel prints no SDMA or queue counts, no unique_id, no hive_id.
    for key in ["num_sdma_engines", "num_sdma_xgmi_engines", "num_sdma_queues_per_engine", "num_cp_queues", "unique_id", "hive_id"] {
        assert!(!p.contains_key(key), "{key}");
    }
    for key in ["sdma_engines", "sdma_xgmi_engines", "sdma_queues_per_engine", "cp_queues", "unique_id", "hive_id"] {
        assert!(g[key].is_null(), "{key}: {}", g[key]);
    }
    assert_eq!(g["uuid"], "GPU-XX");
    // The GPU's one link: PCIe weight 20 to the CPU, bandwidth 0/0 in the file: unknown.
    let l = t.props("nodes/1/io_links/0/properties");
    let links = g["links"].as_array().unwrap();
    assert_eq!(links.len(), 1);
    assert_eq!(links[0]["to"].as_u64(), Some(l["node_to"]));
    assert_eq!(links[0]["type"].as_u64(), Some(l["type"]));
    assert_eq!(links[0]["weight"].as_u64(), Some(l["weight"]));
    assert_eq!((l["min_bandwidth"], l["max_bandwidth"]), (0, 0));
    assert!(links[0]["min_bandwidth_mbs"].is_null() && links[0]["max_bandwidth_mbs"].is_null());
    assert_eq!((links[0]["indirect"].as_bool(), links[0]["hops"].as_u64()), (Some(false), Some(1)));
    assert_eq!(g["numa_node"], 0);
}

/// Caches grouped by level, type and size: counted here from the 96 cache files, and by hand
/// (TCP 16 KiB per CU x64, instruction cache 8 KiB and scalar cache 4 KiB per 4 CUs x16).
#[test]
fn mi25_caches_are_grouped_by_level_type_and_size() {
    let t = Tree::load("mi25-gfx900-1gpu");
    let mut counted: BTreeMap<(u64, &str, u64), u64> = BTreeMap::new();
    let files = t.entries(1, "caches");
    assert_eq!(files.len() as u64, t.props("nodes/1/properties")["caches_count"]);
    for f in &files {
        let c = t.props(f);
        let ty = match c["type"] & 3 {
            1 => "data",
            2 => "instruction",
            _ => "unified",
        };
        *counted.entry((c["level"], ty, c["size"])).or_default() += 1;
    }
    let by_hand: BTreeMap<(u64, &str, u64), u64> = [((1, "data", 16), 64), ((1, "data", 4), 16), ((1, "instruction", 8), 16)].into();
    assert_eq!(counted, by_hand);

    let j = json(&["--model", "mi25", "--json"]);
    let groups: BTreeMap<(u64, &str, u64), u64> = node(&j, 1)["caches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            ((c["level"].as_u64().unwrap(), c["type"].as_str().unwrap(), c["size_kib"].as_u64().unwrap()), c["count"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(groups, by_hand);
    assert!(node(&j, 1).get("cache_entries").is_none(), "raw entries only with --raw-caches");

    let out = stdout(&kmtinfo(&["--model", "mi25"], &[]));
    assert!(out.contains("caches: L1: 64×16 KiB data, 16×4 KiB data, 16×8 KiB instruction\n"), "{out}");

    // --raw-caches: every entry, as many as the files.
    let j = json(&["--model", "mi25", "--json", "--raw-caches"]);
    let raw = node(&j, 1)["cache_entries"].as_array().unwrap();
    assert_eq!(raw.len(), files.len());
    assert_eq!(raw.iter().filter(|c| c["size_kib"] == 16 && c["type_bits"] == 9).count(), 64);
    let out = stdout(&kmtinfo(&["--model", "mi25", "--raw-caches"], &[]));
    let gpu = &out[out.find("\nNode 1: GPU gfx900").unwrap()..];
    assert_eq!(gpu.matches("    cache L1 ").count(), files.len());
}

/// mi210 (real properties, io_links and p2p_links): hive and unique ids as exact strings
/// (above 2^53), PCI addresses, CU counts, clocks, SDMA counts; io_links direct, p2p_links
/// marked indirect.
#[test]
fn mi210_json_matches_the_capture() {
    let t = Tree::load("mi210-gfx90a-8gpu-2hive");
    let j = json(&["--model", "mi210", "--json"]);
    let nodes = j["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 10);
    let mut hives = std::collections::BTreeSet::new();
    for id in 0..10u64 {
        let p = t.props(&format!("nodes/{id}/properties"));
        let n = node(&j, id);
        let gpu = p["simd_count"] > 0;
        assert_eq!(n["kind"], if gpu { "gpu" } else { "cpu" });
        if gpu {
            // The text, not a number: serde_json would also round an f64 here.
            let text = &t.0[&format!("nodes/{id}/properties")];
            let field = |k: &str| text.lines().find_map(|l| l.strip_prefix(&format!("{k} "))).unwrap().to_string();
            assert_eq!(n["hive_id"].as_str(), Some(field("hive_id").as_str()));
            assert!(field("hive_id").parse::<u64>().unwrap() > 1 << 53);
            hives.insert(field("hive_id"));
            assert_eq!(n["unique_id"].as_str(), Some(field("unique_id").as_str()));
            assert_eq!(n["uuid"], format!("GPU-{:016x}", p["unique_id"]));
            assert_eq!(n["pci"]["address"], pci_address(p["domain"], p["location_id"]));
            assert_eq!(n["compute_units"].as_u64(), Some(p["simd_count"] / p["simd_per_cu"]));
            assert_eq!(n["simds"], 416);
            assert_eq!(n["gfx_target"], "gfx90a");
            assert_eq!(n["max_clock_mhz"].as_u64(), Some(p["max_engine_clk_fcompute"]));
            assert_eq!(n["sdma_engines"].as_u64(), Some(p["num_sdma_engines"]));
            assert_eq!(n["sdma_xgmi_engines"].as_u64(), Some(p["num_sdma_xgmi_engines"]));
            assert_eq!(n["sdma_queues_per_engine"].as_u64(), Some(p["num_sdma_queues_per_engine"]));
            assert_eq!(n["cp_queues"].as_u64(), Some(p["num_cp_queues"]));
        } else {
            assert_eq!(n["cpu_cores"].as_u64(), Some(p["cpu_cores_count"]));
            assert_eq!(n["max_clock_mhz"].as_u64(), Some(p["max_engine_clk_ccompute"]));
            assert!(n["pci"].is_null() && n["hive_id"].is_null());
        }
        // Links: io_links then p2p_links, in file order.
        let io = t.entries(id, "io_links");
        let p2p = t.entries(id, "p2p_links");
        let links = n["links"].as_array().unwrap();
        assert_eq!(links.len(), io.len() + p2p.len(), "node {id}");
        for (i, f) in io.iter().chain(&p2p).enumerate() {
            let l = t.props(f);
            let got = &links[i];
            assert_eq!(got["to"].as_u64(), Some(l["node_to"]), "{f}");
            assert_eq!(got["type"].as_u64(), Some(l["type"]), "{f}");
            assert_eq!(got["weight"].as_u64(), Some(l["weight"]), "{f}");
            let bw = |v: u64| if v == 0 { Value::Null } else { v.into() };
            assert_eq!(got["max_bandwidth_mbs"], bw(l["max_bandwidth"]), "{f}");
            assert_eq!(got["min_bandwidth_mbs"], bw(l["min_bandwidth"]), "{f}");
            let indirect = i >= io.len();
            assert_eq!(got["indirect"].as_bool(), Some(indirect), "{f}");
            let hops = got["hops"].as_u64().unwrap();
            assert!(if indirect { hops >= 2 } else { hops == 1 }, "{f}: {hops} hops");
        }
    }
    assert_eq!(hives.len(), 2, "two hives of four");
}

/// CPU caches in KiB, grouped: model/CATALOGUE.md's "Host CPUs" table (Xeon Gold 5115: 10
/// cores with 32 KiB L1d and L1i and 1 MiB L2, one 14080 KiB L3; EPYC 9654: 96 cores with
/// 32 KiB, 32 KiB, 1 MiB, and 12 L3s of 32 MiB).
#[test]
fn cpu_caches_are_in_kib() {
    for (model, expect) in [
        ("mi25", [(1, "data", 32, 10), (1, "instruction", 32, 10), (2, "unified", 1024, 10), (3, "unified", 14080, 1)]),
        ("mi300x", [(1, "data", 32, 96), (1, "instruction", 32, 96), (2, "unified", 1024, 96), (3, "unified", 32768, 12)]),
    ] {
        let j = json(&["--model", model, "--json"]);
        let got: Vec<(u64, String, u64, u64)> = node(&j, 0)["caches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["level"].as_u64().unwrap(),
                    c["type"].as_str().unwrap().to_string(),
                    c["size_kib"].as_u64().unwrap(),
                    c["count"].as_u64().unwrap(),
                )
            })
            .collect();
        let want: Vec<(u64, String, u64, u64)> = expect.iter().map(|&(l, t, s, c)| (l, t.to_string(), s, c)).collect();
        assert_eq!(got, want, "{model}");
    }
}

/// Each catalogue system shows its own CPUs (model/CATALOGUE.md, "Host CPUs"), never the
/// machine's: every socket named, with its caches.
#[test]
fn cpu_nodes_are_the_catalogue_systems_own() {
    // (system, CPU, CPU nodes, its L3: 8 or 12 CCDs of 32 MiB, one 13.75 MiB L3)
    for (model, cpu, nodes, l3) in [
        ("mi210", "AMD EPYC 7763 64-Core Processor", 2, "L3: 8×32 MiB unified"),
        ("mi300x", "AMD EPYC 9654 96-Core Processor", 2, "L3: 12×32 MiB unified"),
        ("rx7900xtx", "AMD Ryzen 9 7950X 16-Core Processor", 1, "L3: 2×32 MiB unified"),
        ("mi25", "Intel(R) Xeon(R) Gold 5115 CPU @ 2.40GHz", 1, "L3: 1×14080 KiB unified"),
    ] {
        let o = kmtinfo(&["--model", model, "--full"], &[]);
        let out = stdout(&o);
        assert!(o.status.success(), "{model}: {}", stderr(&o));
        for n in 0..nodes {
            assert!(out.contains(&format!("Node {n}: CPU {cpu}\n")), "{model}: node {n} is not a {cpu}:\n{out}");
        }
        assert_eq!(out.matches(l3).count(), nodes, "{model}: every CPU node has its L3:\n{out}");
        assert!(!out.contains("(no model name)"), "{model}");
    }
}

/// Old kernels: "not reported", not zeros; unknown bandwidth: "unknown", not "0-0 MB/s".
#[test]
fn mi25_text_says_not_reported_and_unknown() {
    let out = stdout(&kmtinfo(&["--model", "mi25"], &[]));
    assert!(out.contains("SDMA engines: not reported"), "{out}");
    assert!(out.contains("queue counts: not reported"), "{out}");
    assert!(out.contains("bandwidth unknown") && !out.contains("0-0 MB/s"), "{out}");
    assert!(out.contains("PCI 0000:19:00.0"), "{out}");
    // The summary table comes first: a header, then one line per agent.
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[3].starts_with("node") && lines[3].contains("PCI"), "{out}");
    assert!(lines[4].contains("CPU") && lines[4].contains("Xeon"), "{out}");
    assert!(lines[5].contains("GPU 0") && lines[5].contains("gfx900") && lines[5].contains("0000:19:00.0"), "{out}");
}

/// The 65-node CPX system: compact by default (summary + one topology line per GPU); the GPU
/// filters; the full view on request. Link classes counted from the capture's io_links.
#[test]
fn mi300x_cpx_is_compact_and_filterable() {
    let t = Tree::load("mi300x-gfx942-8gpu-cpx");
    let o = kmtinfo(&["--model", "mi300x-cpx"], &[]);
    let out = stdout(&o);
    assert!(o.status.success());
    assert!(out.lines().count() < 160, "{} lines", out.lines().count());
    assert!(out.lines().map(|l| l.chars().count()).max().unwrap() < 140);
    assert!(!out.contains("Link matrix") && !out.contains("\nNode 2:"), "{out}");
    // GPU 5 is node 7 (nodes 0 and 1 are the CPUs): its links by class, from the files.
    let mut classes: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for f in t.entries(7, "io_links") {
        let l = t.props(&f);
        if l["node_to"] >= 2 {
            *classes.entry((l["type"], l["weight"])).or_default() += 1;
        }
    }
    assert_eq!(classes, [((11, 13), 7), ((11, 41), 55)].into(), "the capture: 7 sibling partitions, 55 others");
    let line = out.lines().find(|l| l.trim_start().starts_with("GPU5 (node 7):")).unwrap_or_else(|| panic!("{out}"));
    for ((ty, w), n) in classes {
        assert_eq!(ty, 11);
        assert!(line.contains(&format!("XGMI/{w}/1 ×{n}")), "{line}");
    }
    assert!(line.contains("PCIE/20/1 to node 0"), "{line}");

    // --gpu 5: that GPU only, checked against node 7's properties.
    let p = t.props("nodes/7/properties");
    let j = json(&["--model", "mi300x-cpx", "--gpu", "5", "--json"]);
    let nodes = j["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 1);
    assert_eq!((nodes[0]["id"].as_u64(), nodes[0]["gpu_index"].as_u64()), (Some(7), Some(5)));
    assert_eq!(nodes[0]["pci"]["address"], pci_address(p["domain"], p["location_id"]));
    assert_eq!(nodes[0]["compute_units"].as_u64(), Some(p["simd_count"] / p["simd_per_cu"]));
    assert_eq!(nodes[0]["num_xcc"].as_u64(), Some(p["num_xcc"]));
    assert_eq!(j["num_nodes"], 65);
    let o = kmtinfo(&["--model", "mi300x-cpx", "--gpu", "5,6"], &[]);
    let out = stdout(&o);
    assert!(out.contains("65 nodes, 2 shown"), "{out}");
    for (node, gpu) in [(7, 5), (8, 6)] {
        let head = out
            .lines()
            .find(|l| l.starts_with(&format!("Node {node}: GPU gfx942 ")))
            .unwrap_or_else(|| panic!("no details of node {node}:\n{out}"));
        assert!(head.contains(&format!("GPU index {gpu},")), "{head}");
    }

    // GPU-only: the 63 partitions.
    let j = json(&["--model", "mi300x-cpx", "--gpus-only", "--json"]);
    let nodes = j["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 63);
    assert!(nodes.iter().all(|n| n["kind"] == "gpu"));

    // --full: per-node details of all 65.
    let out = stdout(&kmtinfo(&["--model", "mi300x-cpx", "--full"], &[]));
    assert_eq!(out.matches("\nNode ").count(), 65);
}

/// The mi300x (SPX) GPU view: an 8 × 8 matrix of XGMI links (weight 41 between the GPUs in
/// the CPX capture's io_links, which mi300x keeps) and each GPU's NUMA node: GPUs 0-3 hang
/// off CPU 0, 4-7 off CPU 1 (CATALOGUE.md).
#[test]
fn mi300x_gpu_topology_view() {
    let out = stdout(&kmtinfo(&["--model", "mi300x"], &[]));
    let i = out.find("GPU topology (type/weight/hops").unwrap_or_else(|| panic!("{out}"));
    let rows: Vec<&str> = out[i..].lines().skip(2).take(8).collect();
    for (g, row) in rows.iter().enumerate() {
        assert!(row.trim_start().starts_with(&format!("GPU{g} ")), "{row}");
        assert_eq!(row.matches("XGMI/41/1").count(), 7, "{row}");
    }
    for g in 0..8 {
        let numa = if g < 4 { 0 } else { 1 };
        assert!(out.contains(&format!("  GPU{g} (node {}): NUMA node {numa}, PCIE weight 20, up to 64000 MB/s\n", g + 2)), "{out}");
    }
    // A CPU's p2p link to a GPU of the other socket goes through both CPUs.
    let j = json(&["--model", "mi300x", "--json"]);
    let l = node(&j, 0)["links"].as_array().unwrap().iter().find(|l| l["to"] == 6).unwrap().clone();
    assert_eq!((l["indirect"].as_bool(), l["hops"].as_u64(), l["weight"].as_u64()), (Some(true), Some(2), Some(52)));
}

// ---------------------------------------------------------------------------------------------
// Errors

#[test]
fn broken_topology_directory_fails_once_and_clearly() {
    let dir = std::env::temp_dir().join(format!("kmtinfo-broken-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let o = kmtinfo(&["--topology", dir.to_str().unwrap()], &[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "stdout: {}\nstderr: {err}", stdout(&o));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("kmtinfo:") && err.contains("nodes"), "the message says what is wrong: {err}");
    let _ = std::fs::remove_dir_all(&dir);

    // A packed test bundle is not a tree: kmtinfo says how to get one.
    let packed = format!("{}/../core/tests/data/topology/mi25-gfx900-1gpu", env!("CARGO_MANIFEST_DIR"));
    let o = kmtinfo(&["--topology", &packed], &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("packed") && stderr(&o).contains("export-topology"), "{}", stderr(&o));
}

/// A bad HSAKMT_MODEL: libhsakmt prints the reason (always, for a model's configuration); kmtinfo
/// does not repeat it.
#[test]
fn a_bad_model_variable_is_reported_once() {
    let o = kmtinfo(&[], &[("HSAKMT_MODEL", "nope")]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("no such catalogue entry").count(), 1, "{err}");
    assert!(err.contains("kmtinfo: hsaKmtOpenKFD failed"), "{err}");
}

/// A topology directory works: the catalogue's mi25 exported as a tree.
#[test]
fn topology_directory_backend() {
    let dir = std::env::temp_dir().join(format!("kmtinfo-tree-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    hsakmt_model::catalogue::export("mi25", &dir).unwrap();
    let j = json(&["--topology", dir.to_str().unwrap(), "--json"]);
    assert_eq!(j["backend"]["kind"], "topology-model");
    assert_eq!(j["backend"]["path"], dir.to_str().unwrap());
    assert_eq!(node(&j, 1)["pci"]["address"], "0000:19:00.0");
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// --smoke, --events

/// `kmtinfo --smoke` on the model systems of three GPU generations: SDMA fill + copy + fence +
/// trap, PM4 WRITE_DATA + RELEASE_MEM interrupt, AQL barrier + fill kernel with an interrupt
/// signal and a NOP with a polled one; each step checked by the program, repeated, min and
/// median printed.
#[test]
fn smoke_dispatch_on_the_model() {
    for model in ["mi300x", "mi210", "rx7900xtx"] {
        let o = kmtinfo(&["--smoke", "--repeat", "3", "--model", model], &[]);
        let out = stdout(&o);
        assert!(o.status.success(), "{model}: {out}\n{}", stderr(&o));
        assert!(out.contains("3 passes") && out.contains("min µs") && out.contains("median µs"), "{out}");
        for step in ["SDMA fill", "PM4 WRITE_DATA", "AQL barrier release", "AQL NOP dispatch", "smoke: OK"] {
            assert!(out.contains(step), "{model}: no {step:?} in\n{out}");
        }
    }
}

/// `--smoke --json`: each step 20 times by default; min <= median <= max. The PMC deltas cover
/// all passes: one NOP wave and 16 fill waves (1024 items in groups of 64) per pass.
#[test]
fn smoke_json_reports_min_and_median() {
    let j = json(&["--smoke", "--json", "--model", "mi210"]);
    let s = &j["smoke"];
    assert_eq!(s["ok"], true);
    assert_eq!(s["repeat"], 20);
    let steps = s["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 8, "{steps:?}");
    for st in steps {
        assert_eq!(st["samples"], 20, "{st}");
        let (min, med, max) = (st["min_us"].as_f64().unwrap(), st["median_us"].as_f64().unwrap(), st["max_us"].as_f64().unwrap());
        assert!(0.0 < min && min <= med && med <= max, "{st}");
    }
    let waves = s["pmc"].as_array().unwrap().iter().find(|d| d["name"] == "SQ_WAVES").unwrap();
    assert_eq!(waves["delta"], 20 * (16 + 1));

    let j = json(&["--smoke", "--json", "--repeat", "1", "--model", "mi25"]);
    assert!(j["smoke"]["steps"].as_array().unwrap().iter().all(|s| s["samples"] == 1 && s["min_us"] == s["median_us"]));
}

#[test]
fn smoke_rejects_an_unknown_model() {
    let o = kmtinfo(&["--smoke", "--model", "nope"], &[]);
    assert_eq!(o.status.code(), Some(2));
}

/// `--events` watches SMI events: with `--fault` kmtinfo's own SDMA FENCE to an unmapped
/// address is a VMFAULT record naming kmtinfo's pid (hex) and task; an event not asked for
/// is not printed; `--timeout` ends a quiet watch; unknown names are refused.
#[test]
fn events_shows_a_gpu_page_fault() {
    let o = kmtinfo(&["--model", "mi210", "--events", "vmfault,gpu_pre_reset", "--fault", "--count", "1", "--timeout", "20"], &[]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}\n{}", stderr(&o));
    assert!(out.contains("mask 0x5)"), "{out}");
    let line = out.lines().find(|l| l.contains(": VMFAULT ")).unwrap_or_else(|| panic!("no VMFAULT line:\n{out}"));
    let msg = line.split(": VMFAULT ").nth(1).unwrap_or_default();
    let (pid, task) = msg.split_once(':').unwrap_or_else(|| panic!("{line}"));
    assert!(u32::from_str_radix(pid, 16).is_ok_and(|p| p > 0), "{line}");
    assert_eq!(task, "kmtinfo", "{line}");
    assert!(!out.contains("timeout:"), "{out}");

    // Without the fault, and not asking for VMFAULT: nothing within the timeout.
    let o = kmtinfo(&["--model", "mi210", "--events", "QUEUE_RESTORE", "--fault", "--timeout", "0.5"], &[]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("timeout: 0 event(s)") && !out.contains("VMFAULT"), "{out}");

    let o = kmtinfo(&["--model", "mi210", "--events", "nonsense"], &[]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o).matches("unknown SMI event nonsense").count(), 1);
}

#[test]
fn counters_lists_the_pmc_blocks() {
    for args in [&["--model", "mi210", "counters"][..], &["counters", "--model", "mi210"][..]] {
        let o = kmtinfo(args, &[]);
        let out = stdout(&o);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(out.contains("gfx90a") && out.contains("SQ_WAVES"), "{out}");
    }
}
