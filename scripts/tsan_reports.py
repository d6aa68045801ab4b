#!/usr/bin/env python3
"""Reads the ThreadSanitizer report files of a run (scripts/tsan_gate.sh) and says whether any
counts: prints each report that does, sums up by frame those it leaves out, and exits 1 if one
counts.

TSan's own suppressions (scripts/tsan.supp) match a frame anywhere in a stack, or the top frame
only; neither can say "both racing accesses were made by third-party code". gRPC's, protobuf's
and abseil's header code is compiled into ferry's objects and runs on gRPC's threads through the
C++ standard library, ordered by their uninstrumented libraries, which TSan cannot see. So
scripts/tsan.supp also holds `#third_party_fun:REGEX` and `#third_party_lib:REGEX` lines
(comments to TSan). Each access of a race is owned by the innermost frame of its stack that is
neither the sanitizer runtime nor the C++ standard library: third-party code when that frame is a
function whose qualified name matches a `fun` pattern or an unsymbolised frame of a library
matching a `lib` pattern, or when there is no such frame (every caller uninstrumented; all of
ferry is instrumented in this tree). An unsymbolised frame of the executable is ferry's. A data race is left out when both accesses are third-party,
or one is and the other is ferry allocating or freeing the memory (an object handed to the
library, which alone knows when it is done with it). Every other report counts: a race with
ferry's code on either side, and any other kind.

    scripts/tsan_reports.py SUPPRESSIONS REPORT_FILE...
"""
import os
import re
import sys

# What a stack frame line looks like: `#N FUNCTION FILE:LINE[:COL] (MODULE+0xOFFSET)`, where FILE
# may be <null> (no debug information) and FUNCTION too (not symbolised).
FRAME = re.compile(r"^\s+#\d+ (?P<fun>.*?) (?P<file><null>|\S+:\d+(?::\d+)?) \((?P<mod>[^+)]+)")
# The sections of a race report that hold one of the two racing accesses.
ACCESS = re.compile(r"^  (Read|Write|Atomic read|Atomic write|Previous \w+( \w+)?) of size")


def patterns(path):
    """The `#third_party_fun:` and `#third_party_lib:` regexes of the suppressions file."""
    fun, lib = [], []
    with open(path) as f:
        for line in f:
            line = line.strip()
            for prefix, into in (("#third_party_fun:", fun), ("#third_party_lib:", lib)):
                if line.startswith(prefix):
                    into.append(re.compile(line[len(prefix):]))
    return fun, lib


def qualified(function):
    """A symbolised function's qualified name, without its return type and parameters."""
    depth, space, i = 0, -1, 0
    while i < len(function):
        ch = function[i]
        if function.startswith("(anonymous namespace)", i):
            i += len("(anonymous namespace)")
            continue
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            break
        elif ch == " " and depth == 0:
            space = i
        i += 1
    return function[space + 1:i]


# The runtime's allocation entry points: an access whose top frame is one of these is the
# allocation or release of a whole heap block.
LIFETIME = ("operator new", "operator delete", "malloc", "calloc", "realloc", "free")


def owner(frames, fun, lib):
    """Who made an access: ("third", name) when the innermost frame outside the sanitizer
    runtime and the C++ standard library is third-party code, or there is no such frame (every
    caller uninstrumented, and only third-party code is); ("lifetime", name) when ferry's code
    allocated or released the memory; ("ferry", name) otherwise."""
    top = frames[0]["fun"] if frames else ""
    for f in frames:
        module = os.path.basename(f["mod"])
        if module.startswith(("libstdc++.so", "libc.so")):
            continue
        if f["fun"] == "<null>":
            # Not symbolised: a library's frame, or the executable's (then it counts as ferry's).
            return ("third" if any(p.search(module) for p in lib) else "ferry"), module
        if f["file"] == "<null>" and ".so" not in module:
            continue  # the sanitizer runtime's interceptors, linked into the executable
        name = qualified(f["fun"])
        if name.startswith(("std::", "__gnu_cxx::", "__gthread_", "__cxxabiv1::")):
            continue
        if any(p.search(name) for p in fun):
            return "third", name
        return ("lifetime" if top.startswith(LIFETIME) else "ferry"), name
    return "third", "(uninstrumented)"


def ignored(owners):
    """Whether a race between accesses made by `owners` is third-party code on both sides, or
    third-party code against an allocation or release by ferry: the object's lifetime was handed
    to the library, whose own order TSan cannot see."""
    kinds = sorted(kind for kind, _ in owners)
    return kinds in (["third", "third"], ["lifetime", "third"])


def accesses(report):
    """The frames of each racing access in a report, in order from the top."""
    stacks, current = [], None
    for line in report.splitlines():
        if ACCESS.match(line):
            current = []
            stacks.append(current)
        elif line.startswith("  ") and not line.startswith("    "):
            current = None
        elif current is not None:
            m = FRAME.match(line)
            if m:
                current.append(m.groupdict())
    return stacks


def main():
    fun, lib = patterns(sys.argv[1])
    kept, left = [], {}
    for path in sys.argv[2:]:
        with open(path, errors="replace") as f:
            text = f.read()
        # Reports are framed by lines of '='; anything else TSan wrote (a fatal error) counts.
        for block in re.split(r"^=+$", text, flags=re.M):
            # At exit a process that reported says how many times; the reports are above it.
            block = re.sub(r"^ThreadSanitizer: reported \d+ warnings\n?", "", block, flags=re.M)
            if "ThreadSanitizer" not in block:
                continue
            owners = [owner(s, fun, lib) for s in accesses(block)]
            if ("WARNING: ThreadSanitizer: data race" in block and len(owners) == 2 and
                    ignored(owners)):
                key = " / ".join(name[:70] for _, name in owners)
                left[key] = left.get(key, 0) + 1
            else:
                kept.append((path, block.strip()))
    if left:
        print(f"tsan_reports: left out {sum(left.values())} race(s) between third-party code "
              f"on both sides (scripts/tsan.supp), by top frames:")
        for key, n in sorted(left.items(), key=lambda kv: -kv[1])[:20]:
            print(f"  {n:4d}  {key}")
    for path, block in kept:
        print(f"== {path}\n{block}\n")
    if kept:
        print(f"tsan_reports: {len(kept)} ThreadSanitizer report(s) above", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
