//! Checks every row of the compiler-computed ABI tables (tests/data/*.tsv, copied from the
//! upstream headers) against what rustc computed for our declarations: type sizes and
//! alignments, field offsets and sizes, bitfield positions, constant values, ioctl numbers.

#[path = "gen/layout.rs"]
mod layout;

use hsakmt_core::abi::{ioc, kfd};
use std::path::PathBuf;

fn table(name: &str) -> Vec<Vec<String>> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| l.split('\t').map(str::to_owned).collect()).collect()
}

/// Reduce a value to its two's-complement pattern in `bits` bits.
fn pattern(v: i128, bits: u32) -> u128 {
    (v as u128) & ((1u128 << bits) - 1)
}

fn check_types(file: &str, failures: &mut Vec<String>) -> usize {
    let mut checked = 0;
    for r in table(file) {
        let got = match r[0].as_str() {
            "type" => layout::type_layout(&r[1]).map(|(s, a)| vec![s as u64, a as u64]),
            "field" => layout::field_layout(&r[1], &r[2]).map(|(o, s)| vec![o as u64, s as u64]),
            "bitfield" => layout::bitfield_layout(&r[1], &r[2]).map(|(o, w)| vec![o as u64, w as u64]),
            "enum" | "typedef" if r[2] == "incomplete" => Some(vec![]),
            "enum" | "typedef" => layout::type_layout(&r[1]).map(|(s, a)| vec![s as u64, a as u64]),
            other => panic!("unknown row kind {other}"),
        };
        let want: Vec<u64> = match r[0].as_str() {
            "type" | "enum" | "typedef" if r[2] != "incomplete" => vec![r[2].parse().unwrap(), r[3].parse().unwrap()],
            "field" | "bitfield" => vec![r[3].parse().unwrap(), r[4].parse().unwrap()],
            _ => vec![],
        };
        match got {
            Some(g) if g == want => {}
            Some(g) => failures.push(format!("{file}: {:?}: want {want:?}, rust has {g:?}", &r[..3])),
            None => failures.push(format!("{file}: {:?}: no Rust declaration", &r[..3])),
        }
        checked += 1;
    }
    checked
}

fn check_consts(file: &str, failures: &mut Vec<String>) -> usize {
    let mut checked = 0;
    for r in table(file) {
        let (name, value, kind) = (&r[0], &r[1], &r[2]);
        if kind == "static_const" {
            match layout::uuid_text(name) {
                Some(t) if t.eq_ignore_ascii_case(value) => {}
                other => failures.push(format!("{file}: {name}: want {value}, rust has {other:?}")),
            }
        } else {
            let want: i128 = value.parse().unwrap();
            match layout::const_value(name) {
                Some((got, bits)) if pattern(got, bits) == pattern(want, bits) => {}
                other => failures.push(format!("{file}: {name}: want {want}, rust has {other:?}")),
            }
        }
        checked += 1;
    }
    checked
}

#[test]
fn every_abi_row_matches() {
    let mut failures = Vec::new();
    let mut n = 0;
    n += check_types("hsakmt-types.tsv", &mut failures);
    n += check_types("kfd-ioctl-types.tsv", &mut failures);
    n += check_consts("hsakmt-constants.tsv", &mut failures);
    n += check_consts("kfd-constants.tsv", &mut failures);
    n += check_ioctls(&mut failures);
    for f in &failures {
        eprintln!("ABI mismatch: {f}");
    }
    println!("ABI rows checked: {n}");
    assert!(failures.is_empty(), "{} of {n} ABI rows do not match", failures.len());
    // 517 + 471 + 288 + 236 + 46 rows in the copied tables.
    assert_eq!(n, 517 + 471 + 288 + 236 + 46);
}

fn check_ioctls(failures: &mut Vec<String>) -> usize {
    let rows = table("kfd-ioctls.tsv");
    assert_eq!(rows.len(), 46, "the table lists 46 KFD ioctls");
    for r in &rows {
        let want = u32::from_str_radix(r[5].trim_start_matches("0x"), 16).unwrap();
        let got = layout::const_value(&r[0]).map(|(v, _)| v as u32);
        if got != Some(want) {
            failures.push(format!("ioctl {}: want {want:#x}, rust has {got:?}", r[0]));
            continue;
        }
        // The request's fields decode back to the table's nr, direction and size.
        let nr = u32::from_str_radix(r[1].trim_start_matches("0x"), 16).unwrap();
        let dir = match r[2].as_str() {
            "IO" => ioc::DIR_NONE,
            "IOR" => ioc::DIR_READ,
            "IOW" => ioc::DIR_WRITE,
            _ => ioc::DIR_READ | ioc::DIR_WRITE,
        };
        let size: usize = r[4].parse().unwrap();
        if ioc::nr(want) != nr || ioc::dir(want) != dir || ioc::size(want) != size || ioc::ty(want) != u32::from(b'K') {
            failures.push(format!("ioctl {}: fields do not decode", r[0]));
        }
    }
    rows.len()
}

#[test]
fn sanity_values_from_the_table_readme() {
    use hsakmt_core::abi::hsakmt::*;
    assert_eq!(core::mem::size_of::<HsaNodeProperties>(), 396);
    assert_eq!(core::mem::align_of::<HsaNodeProperties>(), 4);
    assert_eq!(core::mem::size_of::<HsaMemFlags>(), 4);
    assert_eq!(core::mem::size_of::<kfd::kfd_ioctl_create_queue_args>(), 96);
    assert_eq!(kfd::AMDKFD_IOC_GET_VERSION, 0x8008_4b01);
    assert_eq!(core::mem::size_of::<HSA_QUEUE_PRIORITY>(), 8);
}
