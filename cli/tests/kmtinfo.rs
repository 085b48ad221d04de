//! kmtinfo as a user runs it: the model fallback line, the link matrix, --json, and a clear
//! failure on a broken --topology tree.

use std::process::Command;

fn kmtinfo(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kmtinfo"));
    cmd.args(args);
    for v in ["HSA_MODEL_TOPOLOGY", "HSA_MODEL_LIB", "HSAKMT_MODEL", "HSA_OVERRIDE_GFX_VERSION", "HSAKMT_DEBUG_LEVEL"] {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run kmtinfo")
}

#[test]
fn without_dev_kfd_it_runs_the_model_and_prints_the_link_matrix() {
    if std::path::Path::new("/dev/kfd").exists() {
        eprintln!("SKIPPED: this machine has /dev/kfd; the fallback is not taken");
        return;
    }
    let o = kmtinfo(&[], &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    let first = out.lines().next().unwrap_or("");
    assert!(first.contains("no /dev/kfd") && first.contains("software model"), "first line: {first}");
    assert!(out.contains("Link matrix"));
    // The default system is 2 EPYC + 8 MI300X in one XGMI hive: GPU↔GPU cells are XGMI.
    assert!(out.contains("gfx942"));
    assert!(out.contains("XGMI/"), "{out}");
    assert!(out.contains("HT/32"), "the two EPYC sockets are joined by HyperTransport weight 32");
}

#[test]
fn model_option_and_json() {
    let o = kmtinfo(&["--json", "--model", "mi210"], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    // mi210 fixture facts: 10 nodes, GPU nodes with 416 SIMDs of gfx90a, hive ids of two hives.
    assert_eq!(out.matches("\"kind\":\"gpu\"").count(), 8, "{out}");
    assert_eq!(out.matches("\"kind\":\"cpu\"").count(), 2);
    assert!(out.contains("\"gfx_target\":\"gfx90a\""));
    assert!(out.contains("\"simds\":416"));
    assert!(out.contains("\"hive_id\":12609507387757274807"));
    assert!(out.contains("\"hive_id\":18091350218769748594"));
    assert!(out.trim_end().ends_with("]}"));
}

/// Each catalogue system shows its own CPUs (model/CATALOGUE.md, "Host CPUs"), never the
/// machine's: both sockets named, with their caches.
#[test]
fn cpu_nodes_are_the_catalogue_systems_own() {
    // (system, CPU, CPU nodes, its L3 line: 8 or 12 CCDs of 32 MiB, one 13.75 MiB L3)
    for (model, cpu, nodes, l3) in [
        ("mi210", "AMD EPYC 7763 64-Core Processor", 2, "L3 x8 (32.0 MiB each)"),
        ("mi300x", "AMD EPYC 9654 96-Core Processor", 2, "L3 x12 (32.0 MiB each)"),
        ("mi25", "Intel(R) Xeon(R) Gold 5115 CPU @ 2.40GHz", 1, "L3 x1 (13.8 MiB each)"),
    ] {
        let o = kmtinfo(&["--model", model], &[]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{model}: {}", String::from_utf8_lossy(&o.stderr));
        for n in 0..nodes {
            assert!(out.contains(&format!("Node {n}: CPU {cpu}\n")), "{model}: node {n} is not a {cpu}:\n{out}");
        }
        assert_eq!(out.matches(l3).count(), nodes, "{model}: every CPU node has its L3:\n{out}");
        assert!(!out.contains("(no model name)"), "{model}");
    }
}

#[test]
fn broken_topology_directory_fails_clearly() {
    let dir = std::env::temp_dir().join(format!("kmtinfo-broken-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let o = kmtinfo(&["--topology", dir.to_str().unwrap()], &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "stdout: {}\nstderr: {err}", String::from_utf8_lossy(&o.stdout));
    assert!(err.contains("kmtinfo:") && err.contains("nodes"), "the message says what is wrong: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn list_models_names_the_catalogue() {
    let o = kmtinfo(&["--list-models"], &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    for name in ["mi300x", "mi300x-cpx", "mi210", "rx7900xtx", "mi25"] {
        assert!(out.lines().any(|l| l == name), "{name} missing from {out}");
    }
}

/// `kmtinfo --smoke` on the model systems of three GPU generations: SDMA fill + copy + fence +
/// trap, PM4 WRITE_DATA + RELEASE_MEM interrupt, AQL barrier + fill kernel with an interrupt
/// signal and a NOP with a polled one; each step checked by the program, its latency printed.
#[test]
fn smoke_dispatch_on_the_model() {
    for model in ["mi300x", "mi210", "rx7900xtx"] {
        let o = kmtinfo(&["--smoke", "--model", model], &[]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{model}: {out}\n{}", String::from_utf8_lossy(&o.stderr));
        for step in ["SDMA fill", "PM4 WRITE_DATA", "AQL barrier release", "AQL NOP dispatch", "smoke: OK"] {
            assert!(out.contains(step), "{model}: no {step:?} in\n{out}");
        }
    }
}

#[test]
fn smoke_rejects_an_unknown_model() {
    let o = kmtinfo(&["--smoke", "--model", "nope"], &[]);
    assert!(!o.status.success());
}

/// `--events` watches SMI events: with `--fault` kmtinfo's own SDMA FENCE to an unmapped
/// address is a VMFAULT record naming kmtinfo's pid (hex) and task; an event not asked for
/// is not printed; `--timeout` ends a quiet watch; unknown names are refused.
#[test]
fn events_shows_a_gpu_page_fault() {
    let o = kmtinfo(&["--model", "mi210", "--events", "vmfault,gpu_pre_reset", "--fault", "--count", "1", "--timeout", "20"], &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("mask 0x5)"), "{out}");
    let line = out.lines().find(|l| l.contains(": VMFAULT ")).unwrap_or_else(|| panic!("no VMFAULT line:\n{out}"));
    let msg = line.split(": VMFAULT ").nth(1).unwrap_or_default();
    let (pid, task) = msg.split_once(':').unwrap_or_else(|| panic!("{line}"));
    assert!(u32::from_str_radix(pid, 16).is_ok_and(|p| p > 0), "{line}");
    assert_eq!(task, "kmtinfo", "{line}");
    assert!(!out.contains("timeout:"), "{out}");

    // Without the fault, and not asking for VMFAULT: nothing within the timeout.
    let o = kmtinfo(&["--model", "mi210", "--events", "QUEUE_RESTORE", "--fault", "--timeout", "0.5"], &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("timeout: 0 event(s)") && !out.contains("VMFAULT"), "{out}");

    let o = kmtinfo(&["--model", "mi210", "--events", "nonsense"], &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown SMI event nonsense"));
    let o = kmtinfo(&["--count", "1"], &[]);
    assert_eq!(o.status.code(), Some(2));
}
