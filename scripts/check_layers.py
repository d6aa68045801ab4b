#!/usr/bin/env python3
"""The include-direction check: every #include in src/, include/, tools/, python/ and ruby/ must
follow scripts/layers.txt.

A file may include public headers (ferry/<layer>/...) of its own layer and of the layers the table
allows it; private headers (src/<layer>/...) only of its own layer; and nothing outside src/
includes a private header (except the CLI's use of the testing module). Public headers include
only public headers. `extern "C"` appears in the library only under capi (and the C ABI headers).

Usage: check_layers.py [--root DIR]. Prints one line per violation (file:line: what and why) and
exits 1 when there is any, 0 otherwise.
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCE_EXT = (".c", ".h", ".cpp", ".hpp")
FACES = ("tools", "python", "ruby")


def read_table(root):
    table = {}
    with open(os.path.join(root, "scripts", "layers.txt")) as f:
        for raw in f:
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            name, _, allowed = line.partition(":")
            table[name.strip()] = set(allowed.split())
    return table


def layer_of(rel, table):
    """The layer (or face) a file belongs to and whether it is a public header."""
    parts = rel.split("/")
    if parts[0] == "include" and len(parts) > 3 and parts[1] == "ferry" and parts[2] in table:
        return parts[2], True
    if parts[0] == "src" and len(parts) > 2 and parts[1] in table:
        return parts[1], False
    if parts[0] in FACES:
        return parts[0], False
    return None, False


def files(root):
    for top in ("src", "include", "tools", "python", "ruby"):
        for dirpath, dirnames, names in os.walk(os.path.join(root, top)):
            dirnames[:] = [d for d in dirnames if d not in ("build", ".venv", "__pycache__")]
            for name in sorted(names):
                if name.endswith(SOURCE_EXT):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def check(root):
    table = read_table(root)
    library = {name for name in table if name not in FACES}
    problems = []
    for rel in files(root):
        layer, public = layer_of(rel, table)
        if layer is None:
            continue
        allowed = table[layer] | {layer}
        here = os.path.dirname(os.path.join(root, rel))
        with open(os.path.join(root, rel), errors="replace") as f:
            lines = f.readlines()
        for number, text in enumerate(lines, 1):
            where = f"{rel}:{number}"
            if 'extern "C"' in text and not public and rel.startswith("src/") and layer != "capi":
                problems.append(f'{where}: extern "C" outside capi (only capi has the C surface)')
            m = INCLUDE.match(text)
            if not m:
                continue
            quote, path = m.groups()
            first = path.split("/", 1)[0]
            if path.startswith("ferry/"):
                target = path.split("/")[1] if path.count("/") >= 2 else None
                if target in table and target not in allowed:
                    problems.append(f"{where}: {layer} includes {path}, a header of layer "
                                    f"{target}, which {layer} may not use (scripts/layers.txt)")
                continue
            if quote == "<":
                continue  # system and third-party headers
            if os.path.exists(os.path.join(here, path)):
                # Beside the file: its own layer's private header (or a face's own header).
                if public:
                    problems.append(f"{where}: public header includes private header {path}")
                continue
            if first in library and os.path.exists(os.path.join(root, "src", path)):
                if public:
                    problems.append(f"{where}: public header includes private header src/{path}")
                elif layer in FACES and first == "testing" and "testing" in allowed:
                    continue
                elif first != layer:
                    problems.append(f"{where}: {layer} includes src/{path}, a private header "
                                    f"of layer {first}")
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
