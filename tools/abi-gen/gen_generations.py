#!/usr/bin/env python3
"""Generate core/src/abi/gen_generations.rs: the ABI generations of the public structs.

Inputs (compiler-computed, see core/tests/data/generations/README.md):
  core/tests/data/hsakmt-types.tsv              our (newest) layouts
  core/tests/data/generations/index.tsv         one row per older generation, oldest first
  core/tests/data/generations/<label>.tsv       that generation's layouts (same row format)
  core/tests/data/generations/functions.tsv     hsaKmt* functions and the release that added them

For every record (struct/union typedef) whose layout in some older generation differs from
ours, each such generation gets a RecordLayout: its size and the byte/bit spans that carry a
member present in both layouts (matched by C access path, same width). Reserved members are
never carried (an old caller gets zeroes there, as an old library gave it). A record that
SHRANK between generations, or an old layout larger than ours, stops the generator: the
"never write past a caller's struct" rule depends on sizes only growing.

Run: python3 tools/abi-gen/gen_generations.py [--check]
"""
import os
import re
import subprocess
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
DATA = os.path.join(ROOT, "core", "tests", "data")
GEN = os.path.join(DATA, "generations")
OUT = os.path.join(ROOT, "core", "src", "abi", "gen_generations.rs")


def read_rows(path):
    with open(path) as f:
        return [l.rstrip("\n").split("\t") for l in f if l.strip() and not l.startswith("#")]


class Layouts:
    def __init__(self, rows):
        self.size = {}
        self.members = {}
        for r in rows:
            if r[0] == "type":
                self.size[r[1]] = int(r[2])
                self.members.setdefault(r[1], [])
            elif r[0] in ("field", "bitfield"):
                self.members.setdefault(r[1], []).append(r)

    def leaves(self, tname, base_bits=0, prefix=""):
        """(C access path, 'bytes'|'bits', bit offset, bit width) of every leaf member."""
        rows = self.members.get(tname, [])
        paths = {r[2] for r in rows}
        out = []
        for r in rows:
            kind, path = r[0], r[2]
            if kind == "field" and any(p.startswith(path + ".") for p in paths):
                continue  # an inline aggregate: its members have rows of their own
            cpath = prefix + ".".join(s for s in path.split(".") if not s.startswith("__anon_"))
            if kind == "bitfield":
                out.append((cpath, "bits", base_bits + int(r[3]), int(r[4])))
                continue
            off, size, ctype = int(r[3]), int(r[4]), r[5]
            nested = ctype.replace("struct ", "").replace("union ", "").strip()
            if nested in self.members and nested != tname and "[" not in ctype and "*" not in ctype:
                out += self.leaves(nested, base_bits + off * 8, cpath + ".")
            else:
                out.append((cpath, "bytes", base_bits + off * 8, size * 8))
        # A whole-word alias (`Value`) of a union of bitfields is not carried: the bitfields
        # are, so bits an old generation reserved stay zero.
        bits = [l for l in out if l[1] == "bits"]
        return [
            l for l in out
            if l[1] == "bits" or not any(b[2] >= l[2] and b[2] < l[2] + l[3] for b in bits)
        ]


def reserved(path):
    return any(re.match(r"(?i)^reserved", s) for s in path.split("."))


def spans(old, new, tname):
    """Byte and bit spans of `tname` from `old` to `new`, or None when identical."""
    ol = [l for l in old.leaves(tname) if not reserved(l[0])]
    nl = {l[0]: l for l in new.leaves(tname) if not reserved(l[0])}
    bytes_, bits = [], []
    for path, kind, off, width in ol:
        n = nl.get(path)
        if n is None or n[3] != width or n[1] != kind:
            continue
        if kind == "bytes":
            bytes_.append([n[2] // 8, off // 8, width // 8])
        else:
            bits.append((n[2], off, width))
    bytes_ = sorted({tuple(s) for s in bytes_}, key=lambda s: (s[1], s[0]))
    # Union members overlap: spans that move their bytes by the same amount merge into one.
    merged = []
    for s in bytes_:
        if merged and merged[-1][0] - merged[-1][1] == s[0] - s[1] and merged[-1][1] + merged[-1][2] >= s[1]:
            merged[-1][2] = max(merged[-1][2], s[1] + s[2] - merged[-1][1])
        elif merged and merged[-1][1] + merged[-1][2] > s[1]:
            sys.exit("%s: members overlap but move differently: %s and %s" % (tname, merged[-1], s))
        else:
            merged.append(list(s))
    # Bitfields that sit side by side in both layouts (the same move) become one span of up to
    # 57 bits, so a conversion moves them in one 64-bit window instead of member by member.
    bits_merged = []
    for b in sorted(bits, key=lambda b: (b[1], b[0])):
        last = bits_merged[-1] if bits_merged else None
        if last and last[0] - last[1] == b[0] - b[1] and last[1] + last[2] == b[1] and last[2] + b[2] <= 57:
            last[2] += b[2]
        else:
            bits_merged.append([b[0], b[1], b[2]])
    bits = [tuple(b) for b in bits_merged]
    # Same size, every shared member in the same place: our layout serves that generation
    # as it is (members it lacks sit where it had reserved bits or other union members).
    compatible = (
        old.size[tname] == new.size[tname]
        and all(s[0] == s[1] for s in merged)
        and all(b[0] == b[1] for b in bits)
    )
    return None if compatible else (merged, bits)


def camel(label):
    return "".join(p.capitalize() if p[0].isalpha() else "_" + p for p in re.split(r"[-.]", label)).lstrip("_")


def compute():
    """(generations, grown records, our layouts, function -> first release, index rows)."""
    newest = Layouts(read_rows(os.path.join(DATA, "hsakmt-types.tsv")))
    index = [r for r in read_rows(os.path.join(GEN, "index.tsv")) if r[0] != "label"]
    gens = []  # (label, releases, Layouts)
    for r in index:
        label, first, last = r[0], r[1], r[2]
        if label == "newest":
            continue
        releases = first if first == last else "%s to %s" % (first, last)
        gens.append((label, releases, Layouts(read_rows(os.path.join(GEN, label + ".tsv")))))
    newest_releases = next((r[1] for r in index if r[0] == "newest" and r[1] != "-"), "our headers")

    records = {}  # tname -> {gen index: (size, spans)}
    for gi, (label, _, lay) in enumerate(gens):
        for tname in sorted(lay.size):
            if tname not in newest.size or tname.startswith("struct hsakmt_model"):
                continue
            if lay.size[tname] > newest.size[tname]:
                sys.exit("%s: %s is %d bytes there, %d in ours: a layout shrank" % (label, tname, lay.size[tname], newest.size[tname]))
            sp = spans(lay, newest, tname)
            if sp is not None:
                records.setdefault(tname, {})[gi] = (lay.size[tname], sp)
    # Sizes only grow from one generation to the next.
    for tname in records:
        sizes = [g[2].size.get(tname) for g in gens] + [newest.size[tname]]
        known = [s for s in sizes if s is not None]
        if known != sorted(known):
            sys.exit("%s: sizes %s are not monotonic over the generations" % (tname, sizes))

    # The conversion views our records as bytes: every byte must belong to a member.
    for tname in records:
        covered = set()
        for r in newest.members[tname]:
            if r[0] == "field":
                covered.update(range(int(r[3]), int(r[3]) + int(r[4])))
        if covered != set(range(newest.size[tname])):
            sys.exit("%s has padding bytes in our layout: the byte view would read them" % tname)
    fsince = {}  # function -> the generation label whose headers first declare it
    for r in read_rows(os.path.join(GEN, "functions.tsv")):
        if r[0] != "name":
            fsince[r[0]] = r[3]
    return gens, records, newest, fsince, index, newest_releases


def grown_records():
    """Names of the records whose layout differs in some older generation."""
    return sorted(compute()[1])


def generate():
    gens, records, newest, fsince, index, newest_releases = compute()
    labels = [g[0] for g in gens]

    def gen_of_release(label):
        if label == "newest":
            return "Newest"
        if label not in labels:
            sys.exit("functions.tsv names generation %r, which index.tsv does not have" % label)
        return camel(label)

    o = []
    o.append("// Generated by tools/abi-gen/gen_generations.py from core/tests/data/generations. Do not edit.")
    o.append("//! The generation tables: which records grew, and how each older generation laid them out.")
    o.append("#![allow(non_camel_case_types)]")
    o.append("")
    o.append("use super::{BitSpan, RecordLayout, Span};")
    o.append("")
    o.append("/// An ABI generation: the layouts of one range of upstream releases' headers.")
    o.append("#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]")
    o.append("#[repr(u8)]")
    o.append("pub enum Generation {")
    for label, releases, _ in gens:
        o.append("    /// `%s`: headers of %s." % (label, releases))
        o.append("    %s," % camel(label))
    o.append("    /// `newest`: our own headers (%s)." % newest_releases)
    o.append("    Newest,")
    o.append("}")
    o.append("")
    o.append("impl Generation {")
    o.append("    /// Every generation, oldest first.")
    o.append("    pub const ALL: [Generation; %d] = [%s];" % (len(gens) + 1, ", ".join("Generation::" + camel(g[0]) for g in gens) + ", Generation::Newest"))
    o.append("")
    o.append("    /// The `HSAKMT_ABI` label.")
    o.append("    pub const fn label(self) -> &'static str {")
    o.append("        match self {")
    for label, _, _ in gens:
        o.append('            Generation::%s => "%s",' % (camel(label), label))
    o.append('            Generation::Newest => "newest",')
    o.append("        }")
    o.append("    }")
    o.append("")
    o.append("    /// The upstream releases whose headers have these layouts.")
    o.append("    pub const fn releases(self) -> &'static str {")
    o.append("        match self {")
    for label, releases, _ in gens:
        o.append('            Generation::%s => "%s",' % (camel(label), releases))
    o.append('            Generation::Newest => "%s",' % newest_releases)
    o.append("        }")
    o.append("    }")
    o.append("}")
    o.append("")
    o.append("/// A record (struct or union) whose layout differs in some older generation.")
    o.append("#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]")
    o.append("pub enum Record {")
    for tname in sorted(records):
        o.append("    %s," % tname)
    o.append("}")
    o.append("")
    o.append("impl Record {")
    o.append("    pub const ALL: [Record; %d] = [%s];" % (len(records), ", ".join("Record::" + t for t in sorted(records))))
    o.append("")
    o.append("    /// `sizeof` in our layout.")
    o.append("    pub const fn newest_size(self) -> usize {")
    o.append("        match self {")
    for tname in sorted(records):
        o.append("            Record::%s => %d," % (tname, newest.size[tname]))
    o.append("        }")
    o.append("    }")
    o.append("}")
    o.append("")
    o.append("/// The largest `sizeof` of a grown record in any generation.")
    o.append("pub const MAX_RECORD_SIZE: usize = %d;" % max([newest.size[t] for t in records] or [0]))
    o.append("")
    # Generations that lay a record out the same way share one table.
    shared = {}  # (tname, size, spans) -> static name
    refs = {}  # (tname, gi) -> static name
    for tname in sorted(records):
        for gi, (size, (bspans, bits)) in sorted(records[tname].items()):
            key = (tname, size, tuple(map(tuple, bspans)), tuple(bits))
            if key not in shared:
                cname = "%s_%s" % (tname.upper(), camel(gens[gi][0]).upper())
                shared[key] = cname
                users = [gens[g][0] for g, v in sorted(records[tname].items())
                         if (tname, v[0], tuple(map(tuple, v[1][0])), tuple(v[1][1])) == key]
                o.append("/// `%s` in %s (%d bytes; ours %d)." % (tname, ", ".join("`%s`" % u for u in users), size, newest.size[tname]))
                o.append("static %s: RecordLayout = RecordLayout {" % cname)
                o.append("    size: %d," % size)
                o.append("    bytes: &[%s]," % ", ".join("Span { new: %d, old: %d, len: %d }" % tuple(s) for s in bspans))
                o.append("    bits: &[%s]," % ", ".join("BitSpan { new: %d, old: %d, width: %d }" % b for b in bits))
                o.append("};")
            refs[(tname, gi)] = shared[key]
    o.append("")
    o.append("/// How generation `g` lays out `r`; `None` where it is our layout.")
    o.append("pub fn layout(g: Generation, r: Record) -> Option<&'static RecordLayout> {")
    o.append("    match (r, g) {")
    for tname in sorted(records):
        for gi in sorted(records[tname]):
            o.append("        (Record::%s, Generation::%s) => Some(&%s)," % (tname, camel(gens[gi][0]), refs[(tname, gi)]))
    o.append("        _ => None,")
    o.append("    }")
    o.append("}")
    o.append("")
    o.append("/// Every hsaKmt* function of hsakmt.h and the generation whose headers first declared it")
    o.append("/// (functions older than every generation map to the oldest). Sorted by name.")
    o.append("pub static FUNCTION_SINCE: &[(&str, Generation)] = &[")
    for name in sorted(fsince):
        o.append('    ("%s", Generation::%s),' % (name, gen_of_release(fsince[name])))
    o.append("];")
    return "\n".join(o) + "\n"


def rustfmt(text):
    if not shutil.which("rustfmt"):
        return text
    p = subprocess.run(["rustfmt", "--edition", "2021", "--config-path", os.path.join(ROOT, "rustfmt.toml")],
                       input=text, capture_output=True, text=True)
    return p.stdout if p.returncode == 0 else text


def main():
    text = rustfmt(generate())
    if "--check" in sys.argv:
        with open(OUT) as f:
            if f.read() != text:
                sys.exit("core/src/abi/gen_generations.rs is stale: run python3 tools/abi-gen/gen_generations.py")
        return
    with open(OUT, "w") as f:
        f.write(text)
    print("wrote", os.path.relpath(OUT, ROOT))


if __name__ == "__main__":
    main()
