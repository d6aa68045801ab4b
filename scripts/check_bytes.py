#!/usr/bin/env python3
"""One byte vocabulary at every public edge: borrowed bytes in ferry's C++ headers (include/) are a
ByteSpan, and owned ones a SharedBytes (docs/architecture.md, "Bytes: which type when"). Refused in
include/**/*.hpp:
  - `std::span<const uint8_t>` (and of `const std::byte`): take a ByteSpan, which converts from
    and to one;
  - a pointer to read-only bytes (`const void*`, `const uint8_t*`, `const char*`, ...) followed
    by an integer named as a length (`size`, `n`, `length`, `width`, `count`, `*_size`, ...),
    as two parameters or two members: take a ByteSpan (or a SharedBytes where the callee keeps
    the bytes alive).
Not refused:
  - the C headers (`*.h`: the ABI structs of include/ferry/abi/ and the C surface of
    include/ferry/capi/): C has no span type, and their layouts and names are the ABI;
  - in include/ferry/core/bytes.hpp, ByteSpan's and SharedBytes' own members, ByteSpan's
    constructor and their conversions from and to std::span: the vocabulary is itself a
    pointer and a size;
  - a writable pointer and its size (an allocation to free, a copy's destination, a mapping to
    adopt): not borrowed bytes to read, which is all a ByteSpan holds.
Prints each finding as path:line: text and exits 1 when there is any. Usage:
check_bytes.py [ROOT] (default: the repository)."""
import os
import re
import subprocess
import sys

import lint_check

VOCABULARY = "include/ferry/core/bytes.hpp"
SPAN = re.compile(r"\b(?:std::)?span\s*<\s*(?:const\s+(?:std::)?(?:uint8_t|byte)|"
                  r"(?:std::)?(?:uint8_t|byte)\s+const)\s*(?:,[^>]*)?>")
BYTE = r"(?:std::)?(?:u?int8_t|byte)|void|char|unsigned\s+char|signed\s+char"
INTEGER = r"(?:std::)?(?:u?int(?:8|16|32|64)_t|size_t|ssize_t|ptrdiff_t)|(?:unsigned\s+)?(?:int|long(?:\s+long)?)"
PAIR = re.compile(
    r"(?:\bconst\s+(?:" + BYTE + r")|\b(?:" + BYTE + r")\s+const)\s*\*\s*(?:const\s+)?"
    r"(?P<pointer>\w+)(?:\s*=\s*[^,;()]*)?\s*(?P<sep>[,;])\s*(?:const\s+)?(?:" + INTEGER +
    r")\s+(?P<length>\w+)")
LENGTH = re.compile(r"^(?:n|len|length|size|count|width|nbytes|n_\w+|\w+_(?:size|length|len|bytes|"
                    r"count|width))$")


def files(root):
    out = subprocess.run(["git", "ls-files", "--", "include"], cwd=root, capture_output=True,
                         text=True, check=True).stdout.split()
    return [f for f in out if f.endswith(".hpp")]


def strip_comments(text):
    """The text with // and /* */ comments blanked (line numbers kept)."""
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def vocabulary_own(text, m):
    """Whether the pair at `m` in bytes.hpp is ByteSpan's or SharedBytes' own: a member, or the
    parameters of ByteSpan's constructor."""
    if m.group("sep") == ";":
        return True
    opening = text.rfind("(", 0, m.start())
    return re.search(r"\bByteSpan\s*$", text[:opening]) is not None


def check(root):
    findings = []
    for path in files(root):
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = strip_comments(f.read())
        lines = text.splitlines()

        def report(pos, why):
            line = text.count("\n", 0, pos) + 1
            findings.append(f"{path}:{line}: {why}: {lines[line - 1].strip()}")

        for m in SPAN.finditer(text) if path != VOCABULARY else ():
            report(m.start(), "a span of bytes in a public header: take a ByteSpan")
        for m in PAIR.finditer(text):
            if not LENGTH.match(m.group("length")):
                continue
            if path == VOCABULARY and vocabulary_own(text, m):
                continue
            report(m.start(), "a pointer and a length in a public header: take a ByteSpan "
                   "(a SharedBytes where the callee keeps the bytes)")
    return findings


if __name__ == "__main__":
    sys.exit(lint_check.main("check_bytes", check))
