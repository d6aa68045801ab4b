#!/usr/bin/env python3
"""The include-direction check: every #include in the repository's C and C++ files (src/,
include/, tools/, python/, ruby/, tests/, bench/ and fuzz/) must follow scripts/layers.txt.

A file belongs to a row of the table: a layer (src/<layer>/, include/ferry/<layer>/) or a tree
(`tests/`, `tests/interop/`, ...: the longest prefix wins). It may include
- public headers (ferry/<layer>/...) of its own layer and of the layers and single headers its
  row names; this holds for every public header it reaches through them, too;
- private headers (src/<layer>/...) only of its own layer, and only from src/ or, with the row's
  `own-private`, from that layer's tests, benchmarks and fuzz targets;
- the shared test support (tests/support/) only where the row says `support`.
Public headers include only public headers, nothing in the library includes test code, and
`extern "C"` appears in the library only under capi (and the C ABI headers).

Usage: check_layers.py [--root DIR]. Prints one line per violation (file:line: what and why) and
exits 1 when there is any, 0 otherwise.
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCE_EXT = (".c", ".h", ".cpp", ".hpp", ".inc")
TOPS = ("src", "include", "tools", "python", "ruby", "tests", "bench", "fuzz")
SKIP_DIRS = ("build", ".venv", "__pycache__", "corpus")


def read_table(root):
    """Rows of layers.txt: name (a layer, or a tree ending in '/') -> set of entries."""
    table = {}
    with open(os.path.join(root, "scripts", "layers.txt")) as f:
        for raw in f:
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            name, _, allowed = line.partition(":")
            table[name.strip()] = set(allowed.split())
    return table


class Row:
    """What one file may include: the row it belongs to, its layer and whether it is public."""

    def __init__(self, name, entries, layers, layer=None, public=False):
        self.name = name
        self.layer = layer
        self.public = public
        self.support = "support" in entries
        self.own_private = layer is not None and (name == layer or "own-private" in entries)
        self.layers = set(layers) if "*" in entries else {e for e in entries if e in layers}
        if layer is not None:
            self.layers.add(layer)
        self.headers = {e for e in entries if "/" in e}

    def allows(self, header):
        """Whether `header` (a path below include/ferry/) is allowed."""
        first = header.split("/", 1)[0]
        return first in self.layers or header in self.headers


def row_of(rel, table):
    """The Row of a file, or None for files outside every row."""
    layers = {name for name in table if not name.endswith("/")}
    parts = rel.split("/")
    if parts[0] == "include" and len(parts) > 3 and parts[1] == "ferry" and parts[2] in layers:
        return Row(parts[2], table[parts[2]], layers, parts[2], public=True)
    if parts[0] == "src" and len(parts) > 2 and parts[1] in layers:
        return Row(parts[1], table[parts[1]], layers, parts[1])
    trees = sorted((n for n in table if n.endswith("/") and rel.startswith(n)), key=len)
    if not trees:
        return None
    tree = trees[-1]
    # tests/<layer>/... (and bench/, fuzz/) belong to that layer for `own-private`.
    below = rel[len(tree):].split("/")
    layer = below[0] if len(below) > 1 and below[0] in layers else None
    return Row(tree, table[tree], layers, layer)


def files(root):
    for top in TOPS:
        for dirpath, dirnames, names in os.walk(os.path.join(root, top)):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            for name in sorted(names):
                if name.endswith(SOURCE_EXT):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def public_includes(root, header, cache):
    """The ferry/... headers that include/ferry/<header> includes directly."""
    if header not in cache:
        out = []
        path = os.path.join(root, "include", "ferry", header)
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                for text in f:
                    m = INCLUDE.match(text)
                    if m and m.group(2).startswith("ferry/"):
                        out.append(m.group(2)[len("ferry/"):])
        cache[header] = out
    return cache[header]


def reached(root, header, cache):
    """Every public header reached from `header` (itself excluded), each with the header that
    included it, in the order found."""
    seen = {header: None}
    queue = [header]
    while queue:
        h = queue.pop(0)
        for inc in public_includes(root, h, cache):
            if inc not in seen:
                seen[inc] = h
                queue.append(inc)
    del seen[header]
    return seen.items()


def resolve(root, rel, path):
    """Where a quoted include lands: a repository-relative path, or None (generated or system)."""
    here = os.path.dirname(rel)
    top = rel.split("/", 1)[0]
    bases = [here, top, "tests", "tests/support", ".", "src"]
    for base in bases:
        candidate = os.path.normpath(os.path.join(base, path))
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def check(root):
    table = read_table(root)
    problems = []
    cache = {}
    for rel in files(root):
        row = row_of(rel, table)
        if row is None:
            continue
        with open(os.path.join(root, rel), errors="replace") as f:
            lines = f.readlines()
        for number, text in enumerate(lines, 1):
            where = f"{rel}:{number}"
            if 'extern "C"' in text and rel.startswith("src/") and row.layer != "capi":
                problems.append(f'{where}: extern "C" outside capi (only capi has the C surface)')
            m = INCLUDE.match(text)
            if not m:
                continue
            quote, path = m.groups()
            if path.startswith("ferry/"):
                header = path[len("ferry/"):]
                if not row.allows(header):
                    problems.append(f"{where}: {row.name} includes {path}, which {row.name} may "
                                    f"not use (scripts/layers.txt)")
                    continue
                for deep, via in reached(root, header, cache):
                    if not row.allows(deep):
                        problems.append(f"{where}: {row.name} reaches ferry/{deep} through "
                                        f"ferry/{via}, which {row.name} may not use "
                                        f"(scripts/layers.txt)")
                        break
                continue
            if quote == "<":
                continue  # system and third-party headers
            target = resolve(root, rel, path)
            if target is None or target.startswith(os.path.dirname(rel) + "/"):
                continue  # generated, or beside the file: its own
            top = target.split("/", 1)[0]
            if top == "src":
                owner = target.split("/")[1]
                if row.public:
                    problems.append(f"{where}: public header includes private header {target}")
                elif owner != row.layer or not row.own_private:
                    problems.append(f"{where}: {row.name} includes {target}, a private header "
                                    f"of layer {owner}")
            elif target.startswith("tests/support/"):
                if not row.support and not rel.startswith("tests/support/"):
                    problems.append(f"{where}: {row.name} includes {target}, test support it may "
                                    f"not use (scripts/layers.txt)")
            elif top in ("tests", "bench", "fuzz") and rel.split("/", 1)[0] != top:
                problems.append(f"{where}: {row.name} includes {target}, which belongs to {top}/")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    args = parser.parse_args()
    problems = check(os.path.abspath(args.root))
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} include(s) break the layering", file=sys.stderr)
        return 1
    print("check_layers: every include follows scripts/layers.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
