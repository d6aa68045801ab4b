#!/usr/bin/env python3
"""Typed errors: no code in the library or its faces builds a Status from an errno constant or
branches on an errno to learn what happened (docs/architecture.md, "Errors"). Refused, in
src/, tools/, python/src/ and ruby/ext/ (the table itself, src/core/status_code.cpp, excepted):
  - `Status(EINVAL, ...)` and `Status(errno, ...)`: use a factory or Status::FromErrno;
  - `st.code() == EIO`, `os_error() != 0`-style comparisons of a code or detail with an errno;
  - `case ENOENT:` and `x == ECONNRESET`: an errno tested for its meaning (map it with
    StatusCodeFromErrno), except a system call's own EINTR, EAGAIN and EWOULDBLOCK.
Prints each finding as path:line: text and exits 1 when there is any. Usage:
check_errors.py [ROOT] (default: the repository)."""
import os
import re
import subprocess
import sys

import lint_check

DIRS = ("src", "tools", "python/src", "ruby/ext")
EXEMPT = {"src/core/status_code.cpp"}
RETRY = r"(?:EINTR|EAGAIN|EWOULDBLOCK)\b"
RULES = [
    (re.compile(r"\bStatus\s*\(\s*(E[0-9A-Z]{2,}|errno|err)\b"),
     "a Status built from an errno: use a factory or Status::FromErrno"),
    (re.compile(r"\b(?:code|os_error)\(\)\s*[!=]=\s*E[0-9A-Z]{2,}\b"),
     "a code compared with an errno: compare with a StatusCode"),
    (re.compile(r"\bcase\s+E[0-9A-Z]{2,}\s*:"),
     "an errno switched on: map it with StatusCodeFromErrno"),
    (re.compile(r"[!=]=\s*(?!" + RETRY + r")E[0-9A-Z]{2,}\b(?!\w)"),
     "an errno tested for its meaning: map it with StatusCodeFromErrno"),
]
NOT_ERRNO = {"EOF"}


def files(root):
    out = subprocess.run(["git", "ls-files", "--", *DIRS], cwd=root, capture_output=True,
                         text=True, check=True).stdout.split()
    return [f for f in out if f.endswith((".cpp", ".hpp", ".cc", ".h", ".c"))]


def strip_comments(text):
    """The text with // and /* */ comments blanked (line numbers kept)."""
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def check(root):
    findings = []
    for path in files(root):
        if path in EXEMPT:
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = strip_comments(f.read())
        for rule, why in RULES:
            for m in rule.finditer(text):
                word = re.search(r"E[0-9A-Z]{2,}", m.group(0))
                if word and word.group(0) in NOT_ERRNO:
                    continue
                line = text.count("\n", 0, m.start()) + 1
                shown = text.splitlines()[line - 1].strip()
                findings.append(f"{path}:{line}: {why}: {shown}")
    return findings


if __name__ == "__main__":
    sys.exit(lint_check.main("check_errors", check))
