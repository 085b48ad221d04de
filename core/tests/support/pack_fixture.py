#!/usr/bin/env python3
"""Pack a captured sysfs topology tree into one text bundle for the topology tests.

Usage: pack_fixture.py <tree dir> <bundle file>

Bundle format (read by support/mod.rs): optional '#' comment lines, then for every file
a header line "@@ <relative path> <byte length>", exactly that many bytes of content, and
one separating newline. Files are stored byte for byte; SOURCE.md/README.md are skipped
(they are copied next to the bundle instead).
"""
import os
import sys


def main():
    src, dst = sys.argv[1], sys.argv[2]
    entries = []
    for root, _dirs, files in os.walk(src):
        for f in files:
            full = os.path.join(root, f)
            rel = os.path.relpath(full, src)
            if rel in ("SOURCE.md", "README.md"):
                continue
            entries.append(rel)
    # Natural order (nodes/2 before nodes/10) keeps the bundle readable.
    def key(p):
        return [int(x) if x.isdigit() else x for x in p.split("/")]
    entries.sort(key=key)
    with open(dst, "wb") as out:
        out.write(b"# sysfs topology bundle, packed by core/tests/support/pack_fixture.py from\n")
        out.write(("# " + os.path.basename(os.path.normpath(src)) + "; see SOURCE.md next to this file.\n").encode())
        for rel in entries:
            data = open(os.path.join(src, rel), "rb").read()
            out.write(("@@ %s %d\n" % (rel, len(data))).encode())
            out.write(data)
            out.write(b"\n")


if __name__ == "__main__":
    main()
