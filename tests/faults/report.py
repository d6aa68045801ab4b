"""Turn the fault matrix's measurements ($FERRY_FAULT_REPORT, JSON lines) into the markdown table
of docs/reliability.md: one row per transport, body and fault, one column per phase, each cell
the survivor's detection time and what it said (abridged), and a summary line.

Usage: python tests/faults/report.py FAULTS.jsonl [PYTEST_LOG]
"""

import json
import re
import sys

PHASES = ["want_data", "metadata", "body", "free"]


def abridge(cell):
    text = (cell.get("message") or [""])[-1] if "message" in cell else cell.get("server_log", "")
    text = re.sub(r"ferry: \S+: ", "", text)
    text = re.sub(r"ferry serve: client \S+: ", "", text)
    if cell.get("exit") == 0:
        return "whole stream"
    for pattern, short in [
        (r"after want_data", "closed after want_data"),
        (r"closed the connection before the end", "closed before the end"),
        (r"sent nothing for (\d+) ms", r"silent \1 ms"),
        (r"took nothing for (\d+) ms", r"took nothing \1 ms"),
        (r"served (\d+) messages", r"served \1"),
        (r"peer went away", "went away"),
        (r"connection is closed", "closed"),
        (r"held (\d+) addresses", r"held \1 addresses"),
    ]:
        m = re.search(pattern, text)
        if m:
            phase = re.match(r"(\w+)( \(message \d+\))?:", text)
            where = phase.group(1) + ": " if phase else ""
            return where + m.expand(short)
    return text[:40]


def main():
    cells = {}
    with open(sys.argv[1]) as f:
        for line in f:
            c = json.loads(line)
            cells[c["cell"]] = c
    xfailed = set()
    if len(sys.argv) > 2:
        with open(sys.argv[2]) as f:
            for m in re.finditer(r"XFAIL \S+\[([\w-]+)-(\w+)-(\w+-\w+)-(\w+)\]", f.read()):
                xfailed.add("/".join(m.groups()))
    rows = sorted({c.rsplit("/", 1)[0] for c in cells} | {c.rsplit("/", 1)[0] for c in xfailed})
    print("| transport / body / fault | " + " | ".join(PHASES) + " |")
    print("| --- | " + " | ".join("---" for _ in PHASES) + " |")
    worst = 0.0
    for row in rows:
        out = []
        for phase in PHASES:
            key = f"{row}/{phase}"
            c = cells.get(key)
            if key in xfailed:
                out.append("UCX 1.13 aborts the server (known)")
            elif c is None:
                out.append("-")
            else:
                worst = max(worst, c["detect_s"] if c.get("exit") != 0 else 0)
                out.append(f"{c['detect_s']:.2f} s: {abridge(c)}")
        print(f"| {row} | " + " | ".join(out) + " |")
    ran = len(cells) + len(xfailed - set(cells))
    print()
    print(f"{ran} cells run; worst detection {worst:.2f} s; {len(xfailed)} known UCX failures")


if __name__ == "__main__":
    main()
