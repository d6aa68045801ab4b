"""The code blocks of docs/*.md and README.md, as tests/docs/test_docs.py runs them.

A fenced block's language says how it runs: python, cpp, c, ruby, sh and console (a transcript
whose `$ ` lines are commands and whose other lines are output) run; toml (a `ferry serve`
configuration) is checked with `ferry serve --check-config`; text (a diagram, a usage synopsis)
does not run, and an untagged fence is refused so that nothing is skipped by accident.

An HTML comment on the line before a fence tells the runner what the block needs, without showing
on the rendered page:
    <!-- docs-test: files=weather,taxi prelude=host_array after=previous server=flight -->
- files=A,B: data files the block reads, made by tests/docs/fixtures.py in the block's directory;
- prelude=NAME: C and C++ only, declarations the fragment uses (tests/docs/preludes.py);
- server=NAME: a server started for the block (fixtures.py); the URIs the page shows are
  replaced by the server's own before the block runs;
- after=previous: Python only, the block continues the page's previous Python block;
- fails: console only, the transcript shows a command that fails (its exit status is not 0);
- bench: the block reproduces a benchmark, which takes minutes of a quiet machine: its commands
  are checked (the files, targets, CMake options and script flags they name exist), and, where
  FERRY_BENCH_TREE names a tree with the benchmarks (CI's test tree), run at their smallest
  (test_docs.py's SMOKE_*), its build and install lines left to CI's own stages;
- file=NAME: toml only, the name the block is written under (default ferry.toml);
- configs=A,B: the page's toml blocks of those names, written in the block's directory first;
- ci=FILE: the block builds or installs (README's two commands, pip, gem), which CI itself runs:
  each of its commands must appear in FILE, so the page and CI cannot drift apart.
"""
import os
import re
from dataclasses import dataclass, field

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RUNNABLE = {"python", "cpp", "c", "ruby", "sh", "console", "cmake", "toml"}
NOT_CODE = {"text"}
DIRECTIVE = re.compile(r"<!--\s*docs-test:(.*?)-->")


@dataclass
class Block:
    page: str  # repository-relative path of the page
    index: int  # 1-based among the page's blocks
    line: int  # line of the block's first code line in the page
    language: str
    code: str
    options: dict = field(default_factory=dict)

    @property
    def id(self):
        return f"{self.page}#{self.index}-{self.language}"

    def option_list(self, name):
        value = self.options.get(name, "")
        return [v for v in value.split(",") if v]


def pages():
    docs = os.path.join(ROOT, "docs")
    out = ["README.md"]
    out += sorted(os.path.join("docs", n) for n in os.listdir(docs) if n.endswith(".md"))
    return out


def parse_options(text):
    options = {}
    for word in text.split():
        key, _, value = word.partition("=")
        options[key] = value if value else True
    return options


def blocks_of(page):
    """Every fenced block of `page`; raises ValueError for an untagged or unknown fence."""
    with open(os.path.join(ROOT, page)) as f:
        lines = f.read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        language = m.group(1)
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        if j == len(lines):
            raise ValueError(f"{page}:{i + 1}: the fence is never closed")
        if not language:
            raise ValueError(f"{page}:{i + 1}: a fence without a language (use text for what "
                             "is not code)")
        if language not in RUNNABLE | NOT_CODE:
            raise ValueError(f"{page}:{i + 1}: fence language {language!r} is neither runnable "
                             f"({', '.join(sorted(RUNNABLE))}) nor text")
        options = {}
        k = i - 1
        while k >= 0 and lines[k].strip() == "":
            k -= 1
        if k >= 0:
            d = DIRECTIVE.search(lines[k])
            if d:
                options = parse_options(d.group(1))
        out.append(Block(page, len(out) + 1, i + 2, language, "\n".join(lines[i + 1:j]) + "\n",
                         options))
        i = j + 1
    return out


def all_blocks():
    return [b for page in pages() for b in blocks_of(page)]


def commands(code, language):
    """The commands of a sh or console block: (command, expected output lines) pairs. In sh, `#`
    lines are shown output and are skipped; a trailing backslash continues a command."""
    out = []
    pending = ""
    lines = code.split("\n")
    for raw in lines:
        line = raw.rstrip()
        if language == "console":
            if line.startswith("$ "):
                out.append([line[2:], []])
            elif out and line:
                out[-1][1].append(line)
            continue
        if pending:
            pending += " " + line.strip()
        elif not line.strip() or line.lstrip().startswith("#"):
            continue
        else:
            pending = line
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
            continue
        out.append([strip_comment(pending), []])
        pending = ""
    return [(c, o) for c, o in out if c]


def strip_comment(command):
    """`command` without a trailing `# comment` (outside quotes)."""
    quote = None
    for i, ch in enumerate(command):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or command[i - 1].isspace()):
            return command[:i].rstrip()
    return command.rstrip()
