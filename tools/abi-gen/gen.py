#!/usr/bin/env python3
"""Generate hsakmt-core's ABI declarations from the compiler-computed tables.

Inputs: core/tests/data/*.tsv (copied from the upstream headers by a C compiler; see
ABI-SOURCE.md there). Outputs (committed, never edited by hand):
  core/src/abi/gen_hsakmt.rs   every hsakmttypes.h / hsakmtmodeliface.h type + constants
  core/src/abi/gen_kfd.rs      every kfd_ioctl.h type, constant and ioctl request
  core/tests/gen/layout.rs     name -> compiler-measured layout, for tests/abi_tables.rs

The types are declared from the field lists; rustc lays them out. The test then compares
rustc's offsets/sizes/bit positions with the C compiler's numbers row by row, so a wrong
repr, a missed packing rule or a wrong field type shows up as a failing row.

Run: python3 tools/abi-gen/gen.py [--check]   (from anywhere; --check regenerates in memory and
fails if a committed output differs: a test runs it)

Every type and member also gets a compile-time assertion in the generated module (size,
alignment, offsets from the tables), so a layout that drifts from the C headers does not build.
"""
import collections
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "core", "tests", "data")

SCALARS = {
    "HSAuint8": "u8", "HSAint8": "i8", "HSAuint16": "u16", "HSAint16": "i16",
    "HSAuint32": "u32", "HSAint32": "i32", "HSAuint64": "u64", "HSAint64": "i64",
    "uint8_t": "u8", "uint16_t": "u16", "uint32_t": "u32", "uint64_t": "u64",
    "int8_t": "i8", "int16_t": "i16", "int32_t": "i32", "int64_t": "i64",
    "unsigned int": "u32", "int": "i32", "unsigned char": "u8", "char": "u8",
    "__u8": "u8", "__u16": "u16", "__u32": "u32", "__u64": "u64",
    "__s8": "i8", "__s16": "i16", "__s32": "i32", "__s64": "i64",
    "void": "c_void", "bool": "bool",
}
INT_BITS = {"u8": 8, "i8": 8, "u16": 16, "i16": 16, "u32": 32, "i32": 32, "u64": 64, "i64": 64}


KEYWORDS = {"type", "in", "fn", "match", "ref", "mod", "move", "impl", "loop", "use", "where", "self", "struct", "enum", "union"}


def ident(seg):
    return "r#" + seg if seg in KEYWORDS else seg


def rust_name(c):
    c = c.strip()
    for p in ("struct ", "union ", "enum "):
        if c.startswith(p):
            return c[len(p):]
    return c


def read_tsv(name):
    with open(os.path.join(DATA, name)) as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


class Ctx:
    def __init__(self, rows):
        self.types = collections.OrderedDict()  # name -> (size, align)
        self.members = collections.defaultdict(list)  # type -> rows
        self.aliases = {}  # typedef/enum -> rust type
        for r in rows:
            kind = r[0]
            if kind == "type":
                self.types[r[1]] = (int(r[2]), int(r[3]))
            elif kind in ("field", "bitfield"):
                self.members[r[1]].append(r)
            elif kind == "enum":
                self.aliases[r[1]] = (r[4], int(r[2]), int(r[3]))
            elif kind == "typedef":
                self.aliases[r[1]] = (r[4], r[2], r[3])

    def map_type(self, c, pointer_ok=True):
        c = c.strip()
        m = re.match(r"^(.*)\[(\d*)\]$", c)
        if m:
            inner = self.map_type(m.group(1))
            return "[%s; %s]" % (inner, m.group(2) or "0")
        if "(*)" in c:
            return "*const c_void"  # legacy function pointer slot (see module docs)
        if c.endswith("*"):
            inner = c[:-1].strip()
            const = inner.startswith("const ")
            inner = re.sub(r"^(const|volatile) ", "", inner)
            t = self.map_type(inner)
            return ("*const " if const else "*mut ") + t
        if c in SCALARS:
            return SCALARS[c]
        n = rust_name(c)
        if n in self.types or ("struct " + n) in self.types or ("union " + n) in self.types:
            return n
        if c in self.aliases:
            return rust_name(c)
        return n


def build_tree(rows):
    """Return nested list of (segment, row, children) for one type's member rows."""
    root = []
    index = {"": root}
    for r in rows:
        path = r[2]
        parent, _, seg = path.rpartition(".")
        node = (seg, r, [])
        index.setdefault(parent, [])
        index[parent].append(node)
        index[path] = node[2]
    return root


def leaves(children):
    for seg, r, ch in children:
        if ch:
            yield from leaves(ch)
        else:
            yield r


class Emitter:
    def __init__(self, ctx, packed, derives, union_derives):
        self.ctx = ctx
        self.packed = packed
        self.derives = derives
        self.union_derives = union_derives
        self.out = []
        self.layout = []  # (type, path, rust_offset_expr, rust_size_expr)
        self.offsets = collections.defaultdict(list)  # type -> [(rust member path, C offset)]
        self.bits = []  # (type, path, rust type, getter, setter)
        self.union_types = set()  # Rust names of the unions emitted so far

    def repr_attr(self, tname):
        if self.packed(tname):
            return "#[repr(C, packed(4))]"
        return "#[repr(C)]"

    def emit_type(self, tname):
        size, align = self.ctx.types[tname]
        rows = self.ctx.members[tname]
        rname = rust_name(tname)
        tree = build_tree(rows)
        if any(r[0] == "bitfield" for r in rows):
            self.emit_bitword(tname, rname, size, tree, rows)
            return
        self.emit_aggregate(tname, rname, size, tree, base=0, prefix="", top=True)

    def emit_bitword(self, tname, rname, size, tree, rows):
        storage = {4: "u32", 8: "u64"}[size]
        for r in leaves(tree):
            if r[0] == "field":
                assert int(r[3]) == 0 and int(r[4]) == size, (tname, r)
        self.out.append("/// `%s`: a %d-bit word of bitfields (C bitfield order, LSB first)." % (tname, size * 8))
        self.out.append(self.repr_attr(tname))
        self.out.append("#[derive(%s)]" % self.derives(tname, has_union=False))
        self.out.append("pub struct %s {\n    pub Value: %s,\n}" % (rname, storage))
        self.out.append("impl %s {" % rname)
        seen = collections.Counter()
        for r in rows:
            if r[0] == "field":
                self.layout.append((tname, r[2], "offset_of!(%s, Value)" % rname, "size_of::<%s>()" % storage))
                if ("Value", 0) not in self.offsets[tname]:
                    self.offsets[tname].append(("Value", 0))
                continue
            off, width = int(r[3]), int(r[4])
            name = r[2].split(".")[-1]
            seen[name] += 1
            if seen[name] > 1:
                name = "%s_%d" % (name, seen[name])
            getter = "bf_" + name
            mask = "0x%x" % ((1 << width) - 1)
            self.out.append("    /// Bits %d..%d (`%s`)." % (off, off + width, r[2]))
            self.out.append("    #[inline]\n    pub const fn %s(&self) -> %s {\n        (self.Value >> %d) & %s\n    }" % (getter, storage, off, mask))
            self.out.append("    #[inline]\n    pub fn set_%s(&mut self, v: %s) {\n        let v = v & %s;\n        self.Value = (self.Value & !(%s << %d)) | (v << %d);\n    }" % (getter, storage, mask, mask, off, off))
            self.bits.append((tname, r[2], rname, getter))
        self.out.append("}")
        self.out.append("")

    def emit_aggregate(self, tname, rname, size, children, base, prefix, top, is_union=None):
        """Emit a struct or union for `children` (members at absolute offsets), then its
        inline (anonymous or unnamed-type) members as types of their own."""
        if is_union is None:
            # A top-level type is a union when all its members share its first byte.
            is_union = len(children) > 1 and all(int(r[3]) == base for _, r, _ in children)
        fields = []
        nested = []
        for seg, r, ch in children:
            off, fsize, c = int(r[3]), int(r[4]), r[5]
            if ch or c in ("struct (anonymous)", "union (anonymous)"):
                sub = "%s__%s" % (rname, seg.strip("_"))
                nested.append((sub, fsize, ch, off, prefix + seg + ".", c))
                ftype = sub
            else:
                ftype = self.ctx.map_type(c)
            fields.append((seg, off, fsize, ftype))
            self.layout.append((tname, prefix + seg, None, None))
            self.offsets[tname].append((".".join(ident(x) for x in (prefix + seg).split(".")), off))
        if top:
            self.out.append("/// `%s` (%d bytes)." % (tname, size))
        else:
            self.out.append("/// `%s` member `%s` (%d bytes)." % (tname, prefix.rstrip("."), size))
        self.out.append(self.repr_attr(tname))
        if is_union:
            derive = self.union_derives(tname)
        else:
            has_union = any(n[5] == "union (anonymous)" for n in nested) or (top and self.contains_union(fields))
            derive = self.derives(tname, has_union=has_union)
        self.out.append("#[derive(%s)]" % derive)
        self.out.append("pub %s %s {" % ("union" if is_union else "struct", rname))
        cursor = base
        pad = 0
        for seg, off, fsize, ftype in (fields if is_union else sorted(fields, key=lambda f: f[1])):
            if not is_union and off > cursor:
                self.out.append("    pub _pad%d: [u8; %d]," % (pad, off - cursor))
                pad += 1
            self.out.append("    pub %s: %s," % (ident(seg), ftype))
            cursor = max(cursor, off + fsize)
        if not is_union and cursor < base + size:
            self.out.append("    pub _pad%d: [u8; %d]," % (pad, base + size - cursor))
        self.out.append("}")
        self.out.append("")
        if is_union:
            self.union_types.add(rname)
        for sub, fsize, ch, off, pfx, c in nested:
            self.emit_aggregate(tname, sub, fsize, ch, off, pfx, False, is_union=(c == "union (anonymous)"))

    def contains_union(self, fields):
        return any(f[3] in self.union_types for f in fields)


def const_type(kind, ctype, ctx):
    if kind == "enum":
        return rust_name(ctype)
    m = {"(int)": "i32", "(unsigned int)": "u32", "(unsigned long)": "u64", "(long)": "i64",
         "(unsigned long long)": "u64", "(long long)": "i64"}
    return m[ctype]


def alias_rust(under):
    return SCALARS.get(under, {"long": "i64", "unsigned long": "u64"}.get(under, under))


def gen_module(types_file, consts_file, packed_pred, header, ioctls=None):
    rows = read_tsv(types_file)
    ctx = Ctx(rows)
    zc_plain = lambda t, has_union: "Clone, Copy, FromBytes, IntoBytes, Immutable, KnownLayout" if not has_union else "Clone, Copy, FromBytes, Immutable, KnownLayout"
    if ioctls is None:
        derives = lambda t, has_union: "Clone, Copy, FromZeros"
        union_derives = lambda t: "Clone, Copy, FromZeros"
    else:
        derives = zc_plain
        union_derives = lambda t: "Clone, Copy, FromBytes, Immutable, KnownLayout"
    em = Emitter(ctx, packed_pred, derives, union_derives)
    out = [header]
    # aliases
    for name, (under, size, align) in ctx.aliases.items():
        if size == "incomplete":
            out.append("/// Opaque C type `%s`." % under)
            out.append("#[repr(C)]\npub struct %s {\n    _opaque: [u8; 0],\n}" % rust_name(name))
            continue
        if name.startswith("enum "):
            rt = {"unsigned int": "u32", "int": "i32", "long": "i64"}[under]
            out.append("pub type %s = %s;" % (rust_name(name), rt))
            continue
        if "(*)" in under:
            out.append("pub type %s = *const c_void;" % name)
            continue
        if under.endswith("*"):
            pointee = re.sub(r"^(const|volatile) ", "", under[:-1].strip())
            if pointee.startswith("struct ") and rust_name(pointee) not in ctx.types and pointee not in ctx.types:
                out.append("/// Opaque C type `%s`." % pointee)
                out.append("#[repr(C)]\npub struct %s {\n    _opaque: [u8; 0],\n}" % rust_name(pointee))
            out.append("pub type %s = %s;" % (name, ctx.map_type(under)))
            continue
        m = re.match(r"^(.*)\[(\d+)\]$", under)
        if m:
            out.append("pub type %s = [%s; %s];" % (name, ctx.map_type(m.group(1)), m.group(2)))
            continue
        rt = {"unsigned int": "u32", "int": "i32", "long": "i64"}.get(under)
        if rt:
            out.append("pub type %s = %s;" % (name, rt))
        else:
            out.append("pub type %s = %s;" % (name, ctx.map_type(under)))
    out.append("")
    for t in ctx.types:
        em.emit_type(t)
    out.extend(em.out)
    # constants
    consts = []
    for name, value, kind, ctype in read_tsv(consts_file):
        if kind == "static_const":
            g = value.strip("{}").split("-")
            d4 = g[3] + g[4]
            data4 = ", ".join("0x%s" % d4[i:i + 2] for i in range(0, 16, 2))
            out.append("pub const %s: HSA_UUID = HSA_UUID { Data1: 0x%s, Data2: 0x%s, Data3: 0x%s, Data4: [%s] };" % (name, g[0], g[1], g[2], data4))
            consts.append((name, None, "uuid", value))
            continue
        if name.startswith("AMDKFD_IOC_") and ioctls is not None:
            consts.append((name, "u32", "ioctl", value))
            continue
        rt = const_type(kind, ctype, ctx)
        v = int(value)
        base = rt
        if rt in ctx.aliases or ("enum " + rt) in ctx.aliases:
            a = ctx.aliases.get(rt) or ctx.aliases.get("enum " + rt)
            base = {"unsigned int": "u32", "int": "i32", "long": "i64"}[a[0]]
        bits = INT_BITS[base]
        if base.startswith("u"):
            v &= (1 << bits) - 1
        else:
            v = ((v + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))
        out.append("pub const %s: %s = %d;" % (name, rt, v))
        consts.append((name, base, kind, value))
    out.extend(layout_asserts(ctx, em))
    if ioctls is not None:
        out.append("")
        out.append("// Request numbers: computed from the argument type, never typed in.")
        for name, nr, direction, args, asize, req in ioctls:
            fn = {"IOR": "ior", "IOW": "iow", "IOWR": "iowr", "IO": "io"}[direction]
            if direction == "IO":
                out.append("pub const %s: u32 = io(%s);" % (name, nr))
            else:
                out.append("pub const %s: u32 = %s::<%s>(%s);" % (name, fn, rust_name(args), nr))
    return "\n".join(out) + "\n", em, consts, ctx


def layout_asserts(ctx, em):
    """Compile-time checks of every type and member laid out above: the size, alignment and
    member offsets the C compiler computed (the tables) must be what rustc computes, or the
    crate does not build."""
    out = ["", "// Layouts checked at compile time against the C compiler's numbers (the ABI tables)."]
    for tname, (size, align) in ctx.types.items():
        r = rust_name(tname)
        conds = ["core::mem::size_of::<%s>() == %d" % (r, size), "core::mem::align_of::<%s>() == %d" % (r, align)]
        for path, off in em.offsets.get(tname, []):
            conds.append("core::mem::offset_of!(%s, %s) == %d" % (r, path, off))
        out.append('const _: () = assert!(%s, "%s: layout differs from the C headers");' % (" && ".join(conds), tname))
    for name, (under, size, align) in ctx.aliases.items():
        if size == "incomplete" or "(*)" in under:
            continue
        r = rust_name(name)
        out.append('const _: () = assert!(core::mem::size_of::<%s>() == %s && core::mem::align_of::<%s>() == %s, "%s: size differs from the C headers");'
                   % (r, size, r, align, name))
    return out


HEADER_HSAKMT = """// @generated by tools/abi-gen/gen.py from core/tests/data/hsakmt-*.tsv. Do not edit.
//! Every type and constant of hsakmttypes.h / hsakmt.h / hsakmtctx.h / hsakmtmodeliface.h
//! (the thunk's public C ABI). hsakmttypes.h is `#pragma pack(4)`, hence `packed(4)`.
//! Bitfield words are a single integer `Value` with `bf_*` accessors; anonymous members
//! become named fields (`anon_union_1`, ...). `hsakmt_model_functions` here is the legacy
//! 0.4 model table recorded in the ABI tables; the 1.x table lives in `abi::model`.
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, clippy::all)]
use core::ffi::c_void;
use zerocopy::FromZeros;
"""

HEADER_KFD = """// @generated by tools/abi-gen/gen.py from core/tests/data/kfd-*.tsv. Do not edit.
//! Every argument type, constant and request number of kfd_ioctl.h (KFD ioctl ABI 1.22).
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, clippy::all)]
use super::ioc::{ior, iow, iowr};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};
"""


def fix_anon(text):
    return text


def main():
    ioctls = read_tsv("kfd-ioctls.tsv")
    hs, hem, hconsts, hctx = gen_module("hsakmt-types.tsv", "hsakmt-constants.tsv",
                                        lambda t: not t.startswith("struct hsakmt_model"), HEADER_HSAKMT)
    ks, kem, kconsts, kctx = gen_module("kfd-ioctl-types.tsv", "kfd-constants.tsv",
                                        lambda t: False, HEADER_KFD, ioctls=ioctls)
    outputs = {"core/src/abi/gen_hsakmt.rs": hs, "core/src/abi/gen_kfd.rs": ks}
    # layout table for tests
    t = ["// @generated by tools/abi-gen/gen.py. Do not edit.",
         "// Maps each row name of the ABI tables to what rustc computed for our declarations.",
         "// (Generated arms cast every constant to i128 whatever its type, hence the allow.)",
         "#![allow(clippy::unnecessary_cast)]",
         "#[allow(unused_imports)]",
         "use core::mem::{align_of, offset_of, size_of};",
         "use hsakmt_core::abi::hsakmt::*;",
         "use hsakmt_core::abi::kfd::*;",
         "",
         "/// (size, align) of a type by its table name.",
         "pub fn type_layout(name: &str) -> Option<(usize, usize)> {",
         "    Some(match name {"]
    for ctx in (hctx, kctx):
        for name, (size, align) in ctx.types.items():
            r = rust_name(name)
            t.append('        "%s" => (size_of::<%s>(), align_of::<%s>()),' % (name, r, r))
        for name, (under, size, align) in ctx.aliases.items():
            if size == "incomplete":
                continue
            r = rust_name(name)
            t.append('        "%s" => (size_of::<%s>(), align_of::<%s>()),' % (name, r, r))
    t.append("        _ => return None,\n    })\n}\n")
    t.append("/// (offset, size) of a member by table type name and dotted path.")
    t.append("pub fn field_layout(ty: &str, path: &str) -> Option<(usize, usize)> {")
    t.append("    Some(match (ty, path) {")

    def field_arms(em, ctx):
        for tname, path, off_expr, size_expr in em.layout:
            r = rust_name(tname)
            if off_expr is not None:
                t.append('        ("%s", "%s") => (%s, %s),' % (tname, path, off_expr, size_expr))
                continue
            segs = path.split(".")
            # member access expression on a zeroed value gives the field's size
            acc = ".".join(ident(x) for x in segs)
            t.append('        ("%s", "%s") => (offset_of!(%s, %s), {\n            let v = <%s as zerocopy::FromZeros>::new_zeroed();\n            #[allow(unused_unsafe)]\n            // SAFETY: only the size of the place is taken; nothing is read.\n            unsafe {\n                size_of_val(&{ v.%s })\n            }\n        }),' % (tname, path, r, acc, r, acc))
    field_arms(hem, hctx)
    field_arms(kem, kctx)
    t.append("        _ => return None,\n    })\n}\n")
    t.append("/// (bit offset, width) of a bitfield, found by setting it to all ones in a zeroed value.")
    t.append("pub fn bitfield_layout(ty: &str, path: &str) -> Option<(u32, u32)> {")
    t.append("    Some(match (ty, path) {")
    for tname, path, rname, getter in hem.bits:
        t.append('        ("%s", "%s") => {\n            let mut v = <%s as zerocopy::FromZeros>::new_zeroed();\n            v.set_%s(!0);\n            let w = { v.Value } as u64;\n            (w.trailing_zeros(), w.count_ones())\n        }' % (tname, path, rname, getter))
    t.append("        _ => return None,\n    })\n}\n")
    t.append("/// A constant's value, sign-extended from its Rust type, as i128.")
    t.append("pub fn const_value(name: &str) -> Option<(i128, u32)> {")
    t.append("    Some(match name {")
    for consts in (hconsts, kconsts):
        for name, base, kind, value in consts:
            if kind == "uuid":
                continue
            bits = 32 if base is None else INT_BITS[base]
            t.append('        "%s" => (%s as i128, %d),' % (name, name, bits))
    t.append("        _ => return None,\n    })\n}\n")
    t.append("/// A HSA_UUID constant rendered in GUID text form.")
    t.append("pub fn uuid_text(name: &str) -> Option<String> {")
    t.append("    let u = match name {")
    for name, base, kind, value in hconsts:
        if kind == "uuid":
            t.append('        "%s" => %s,' % (name, name))
    t.append("        _ => return None,\n    };")
    t.append('    let d = u.Data4;\n    Some(format!(\n        "{{{:08x}-{:04x}-{:04x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}}}",\n        { u.Data1 }, { u.Data2 }, { u.Data3 }, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]\n    ))\n}')
    outputs["core/tests/gen/layout.rs"] = "\n".join(t) + "\n"
    return outputs


def rustfmt(text):
    """Format generated Rust the way `cargo fmt` does (the repository's rustfmt.toml)."""
    import subprocess
    p = subprocess.run(["rustfmt", "--edition", "2021", "--config-path", os.path.join(ROOT, "rustfmt.toml")],
                       input=text, capture_output=True, text=True, check=True)
    return p.stdout


if __name__ == "__main__":
    check = "--check" in sys.argv[1:]
    stale = []
    for rel, text in main().items():
        text = rustfmt(text)
        path = os.path.join(ROOT, rel)
        old = open(path).read() if os.path.exists(path) else None
        if old == text:
            continue
        stale.append(rel)
        if not check:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
    if check:
        if stale:
            sys.exit("gen.py --check: stale (re-run python3 tools/abi-gen/gen.py): " + ", ".join(stale))
        print("gen.py --check: all outputs up to date")
    else:
        print("gen.py: " + ("wrote " + ", ".join(stale) if stale else "no changes"))
