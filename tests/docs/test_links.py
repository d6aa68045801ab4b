"""Every link from one page of docs/ or README.md to a file of the repository resolves: the file
exists, and a `#fragment` names a heading of that page as GitHub renders its id (lower case,
punctuation dropped, spaces as hyphens, a repeated heading numbered -1, -2, ...). Links inside
code fences and to other sites are not checked."""
import os
import re

import doc_blocks

ROOT = doc_blocks.ROOT
LINK = re.compile(r"\]\(([^()\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose_lines(path):
    """The lines of `path` outside its code fences, with their numbers."""
    inside = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                inside = not inside
                continue
            if not inside:
                yield number, line


def slug(heading):
    """GitHub's id for a heading's text: links and code marks reduced to their text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in "_- ")
    return text.replace(" ", "-")


def anchors(path):
    """The ids of every heading of `path`, repeats numbered as GitHub numbers them."""
    seen = {}
    for _, line in prose_lines(path):
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        yield base if count == 0 else f"{base}-{count}"


def test_slug_follows_githubs_rule():
    assert slug("Where the time goes, and what was changed") == \
        "where-the-time-goes-and-what-was-changed"
    assert slug("Waiting: the client's spin") == "waiting-the-clients-spin"
    assert slug("`ferry get` against the benchmark's client") == \
        "ferry-get-against-the-benchmarks-client"
    assert slug("Small-batch goals, 2026-12-05, morning") == "small-batch-goals-2026-12-05-morning"


def test_every_link_between_pages_resolves():
    cache = {}
    broken = []
    for page in doc_blocks.pages():
        source = os.path.join(ROOT, page)
        for number, line in prose_lines(source):
            for target in LINK.findall(line):
                if re.match(r"[a-z][a-z0-9+.-]*:", target):
                    continue  # another site, or mailto:
                path, _, fragment = target.partition("#")
                resolved = os.path.normpath(os.path.join(os.path.dirname(source), path)) \
                    if path else source
                if not os.path.exists(resolved):
                    broken.append(f"{page}:{number}: {target}: no such file")
                    continue
                if fragment and resolved.endswith(".md"):
                    if resolved not in cache:
                        cache[resolved] = set(anchors(resolved))
                    if fragment not in cache[resolved]:
                        broken.append(f"{page}:{number}: {target}: no heading with that id")
    assert not broken, "\n".join(broken)
