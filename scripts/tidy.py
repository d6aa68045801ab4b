#!/usr/bin/env python3
"""clang-tidy over the given sources, in parallel, skipping any source whose clean result is
cached: the key is the content of the source and of every header it includes (the compiler's own
dependency list, so a changed header re-checks each source that includes it), its compile flags,
.clang-tidy and clang-tidy's version. Only clean results are cached; a source with findings is
checked every time. Prints the findings (warning: and error: lines) and exits 1 when there are any.

    scripts/tidy.py BUILD_DIR SOURCE...

Sources compiled in batches (a unity build, cmake/FerryUnity.cmake) appear in the build's
compile_commands.json as the generated batch files; each file a batch includes is given the
batch's command here, in a compile database of its own, so clang-tidy still checks every file
alone (and a file that builds only beside its batch's others fails here).

clang-tidy is PyPI's, in .venv (scripts/setup.sh installs it; $FERRY_CLANG_TIDY names another).
The cache lives in $FERRY_TIDY_CACHE (default ~/.cache/ferry/clang-tidy), outside the tree, as
ccache's does; deleting it only costs time.
"""
import concurrent.futures
import hashlib
import json
import os
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def compile_args(entry):
    """The entry's compiler command without its output and compile-only flags."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif a != "-c":
            out.append(a)
    return out


def unbatched(entries):
    """The entries with each unity batch's files in place of the batch: the batch's command for
    each file it includes, found on the command's include path (the batch's directory first)."""
    out = []
    for e in entries:
        path = os.path.join(e["directory"], e["file"])
        if os.sep + "unity" + os.sep not in path:
            out.append(e)
            continue
        with open(path) as f:
            text = f.read()
        if not text.startswith("// Generated:"):
            out.append(e)
            continue
        args = e["arguments"] if "arguments" in e else shlex.split(e["command"])
        dirs = [a[2:] for a in args if a.startswith("-I") and len(a) > 2]
        for line in text.splitlines():
            if not line.startswith("#include "):
                continue
            rel = line.split('"')[1]
            found = [os.path.join(d, rel) for d in [os.path.dirname(path)] + dirs
                     if os.path.exists(os.path.join(d, rel))]
            if not found:
                raise SystemExit(f"tidy: {path} includes {rel}, which is on no include path")
            source = os.path.normpath(found[0])
            out.append({"directory": e["directory"], "file": source,
                        "arguments": [source if a == e["file"] or a == path else a
                                      for a in args]})
    return out


class Hasher:
    """Content hashes of files, each file read once per run."""

    def __init__(self):
        self.memo = {}

    def file(self, path):
        if path not in self.memo:
            with open(path, "rb") as f:
                self.memo[path] = hashlib.sha256(f.read()).hexdigest()
        return self.memo[path]


def dependencies(entry, args):
    """Every file the source includes, from the compiler's dependency output (-M)."""
    out = subprocess.run(args + ["-M"], cwd=entry["directory"],
                         capture_output=True, text=True, check=True).stdout
    words = out.replace("\\\n", " ").split()
    return sorted({os.path.normpath(os.path.join(entry["directory"], w))
                   for w in words[1:] if w != "\\"})


def key(entry, hasher, common):
    args = compile_args(entry)
    h = hashlib.sha256(common.encode())
    # Flags, with the checkout's own path taken out so that clones share the cache.
    h.update(" ".join(args[1:]).replace(ROOT, "<root>").encode())
    for dep in dependencies(entry, args):
        h.update(dep.replace(ROOT, "<root>").encode() + b"=" + hasher.file(dep).encode())
    return h.hexdigest()


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    build, sources = sys.argv[1], [os.path.abspath(s) for s in sys.argv[2:]]
    with open(os.path.join(build, "compile_commands.json")) as f:
        expanded = unbatched(json.load(f))
    entries = {os.path.abspath(os.path.join(e["directory"], e["file"])): e for e in expanded}
    database = tempfile.TemporaryDirectory(prefix="ferry-tidy-")
    with open(os.path.join(database.name, "compile_commands.json"), "w") as f:
        json.dump(expanded, f)
    missing = [s for s in sources if s not in entries]
    if missing:
        raise SystemExit(f"tidy: not in {build}/compile_commands.json: {' '.join(missing)}")
    cache = os.environ.get("FERRY_TIDY_CACHE",
                           os.path.expanduser("~/.cache/ferry/clang-tidy"))
    os.makedirs(cache, exist_ok=True)
    tidy = os.environ.get("FERRY_CLANG_TIDY") or os.path.join(ROOT, ".venv", "bin", "clang-tidy")
    if not os.access(tidy, os.X_OK):
        raise SystemExit(f"tidy: no clang-tidy at {tidy}; scripts/setup.sh installs it")
    version = subprocess.run([tidy, "--version"], capture_output=True, text=True,
                             check=True).stdout
    with open(os.path.join(ROOT, ".clang-tidy")) as f:
        common = version + f.read()
    hasher = Hasher()

    def check(source):
        entry = entries[source]
        stamp = os.path.join(cache, key(entry, hasher, common))
        if os.path.exists(stamp):
            return source, [], True
        # The compiler's own warnings are GCC's to report (-Werror in every GCC tree); clang's
        # differ by version (its 22 warns of libstdc++ 12's own deprecated helpers).
        run = subprocess.run([tidy, "-p", database.name, "--quiet",
                              "--extra-arg=-Wno-unknown-warning-option",
                              "--extra-arg=-Wno-deprecated-declarations", source],
                             capture_output=True, text=True, check=False)
        findings = [line for line in (run.stdout + run.stderr).splitlines()
                    if "warning:" in line or "error:" in line]
        if not findings and run.returncode == 0:
            with open(stamp, "w") as f:
                f.write(os.path.relpath(source, ROOT) + "\n")
        elif not findings:
            findings = [f"{source}: clang-tidy exited {run.returncode}: {run.stderr.strip()}"]
        return source, findings, False

    findings, cached = [], 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for source, found, hit in pool.map(check, sources):
            findings += found
            cached += hit
    print(f"tidy: {len(sources)} sources, {cached} clean in the cache, "
          f"{len(sources) - cached} checked, {len(findings)} findings")
    if findings:
        print("\n".join(findings))
        sys.exit(1)


if __name__ == "__main__":
    main()
