"""Every code block of docs/*.md and README.md runs (tests/docs/doc_blocks.py says how): Python
blocks in a fresh interpreter, where a nanobind leak report at exit fails the block; C and C++
fragments compiled against the built library (one program per language, one function per block);
Ruby against the built extension; sh and console commands against the built CLI, a `ferry serve`
among them in the background, its URI standing in for the one the page shows."""
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import doc_blocks
import fixtures
import preludes

ROOT = Path(doc_blocks.ROOT)
BLOCKS = doc_blocks.all_blocks()
RUN = [b for b in BLOCKS if b.language in doc_blocks.RUNNABLE]
URI = re.compile(r"'?\b(?:grpc(?:\+tls)?|shm|ucx)://[^\s']*'?")


def build_dir():
    library = os.environ.get("FERRY_LIBRARY")
    if library:
        return Path(library).parent
    return ROOT / "build" / "test"


def cli():
    return os.environ.get("FERRY_CLI") or str(build_dir() / "tools" / "ferry" / "ferry")


def environment():
    env = dict(os.environ)
    env["PATH"] = str(Path(cli()).parent) + os.pathsep + env.get("PATH", "")
    env.setdefault("FERRY_CUDA_DRIVER",
                   str(build_dir() / "tests" / "support" / "cuda_standin" / "libferry_cuda_standin.so"))
    return env


@pytest.fixture
def workdir(tmp_path):
    return tmp_path


def start_servers(block, directory, env):
    servers, replace = [], {}
    for name in block.option_list("server"):
        server, shown = fixtures.start_server(name, cli(), directory, env)
        servers.append(server)
        replace.update(shown)
    return servers, replace


def substitute(code, replace):
    for shown, real in replace.items():
        code = code.replace(shown, real)
    return code


# ---------------------------------------------------------------------------------------------
# Python and Ruby


def python_source(block):
    """The block, preceded by the page's earlier Python blocks it continues (after=previous)."""
    chain = [block]
    page = [b for b in BLOCKS if b.page == block.page and b.language == "python"]
    while chain[0].options.get("after") == "previous":
        earlier = [b for b in page if b.index < chain[0].index]
        chain.insert(0, earlier[-1])
    return chain


def write_configs(block, workdir):
    """The page's toml blocks that `block` names (configs=), written in `workdir`."""
    for name in block.option_list("configs"):
        found = [b for b in BLOCKS if b.page == block.page and b.language == "toml"
                 and b.options.get("file", "ferry.toml") == name]
        assert len(found) == 1, f"{block.page}:{block.line}: no one toml block file={name}"
        (workdir / name).write_text(found[0].code)


def run_python(block, workdir):
    env = environment()
    chain = python_source(block)
    for b in chain:
        fixtures.make_files(b.option_list("files"), workdir)
        write_configs(b, workdir)
    servers, replace = [], {}
    try:
        for b in chain:
            s, r = start_servers(b, workdir, env)
            servers += s
            replace.update(r)
        script = workdir / "block.py"
        script.write_text("".join(substitute(b.code, replace) for b in chain))
        # faulthandler: a block that dies in native code (pyarrow's gRPC client once aborted
        # with "double free" in a CI run) shows each thread's Python stack, not only the signal.
        r = subprocess.run([sys.executable, "-X", "faulthandler", str(script)], cwd=workdir,
                           env=env, text=True, capture_output=True, timeout=120)
    finally:
        for s in servers:
            s.close()
    assert r.returncode == 0, f"{block.page}:{block.line}:\n{r.stdout}\n{r.stderr}"
    assert "nanobind: leaked" not in r.stderr, f"{block.page}:{block.line}: {r.stderr}"


def run_ruby(block, workdir):
    fixtures.make_files(block.option_list("files"), workdir)
    script = workdir / "block.rb"
    script.write_text(block.code)
    r = subprocess.run(["ruby", "-I", str(build_dir() / "ruby"), "-I", str(ROOT / "ruby" / "lib"),
                        str(script)], cwd=workdir, text=True, capture_output=True, timeout=120)
    assert r.returncode == 0, f"{block.page}:{block.line}:\n{r.stdout}\n{r.stderr}"


# ---------------------------------------------------------------------------------------------
# C and C++: one program per language, one function per block, #line pointing at the page


def headers():
    include = ROOT / "include" / "ferry"
    return sorted(str(p.relative_to(ROOT / "include")) for p in include.glob("*/*.hpp")
                  if p.parent.name not in ("testing",))


def block_name(block):
    return re.sub(r"\W", "_", f"{Path(block.page).stem}_{block.index}")


def program(language, blocks):
    table = preludes.CPP if language == "cpp" else preludes.C
    out = []
    if language == "cpp":
        out += ["#include <fcntl.h>", "#include <unistd.h>", "#include <cstdio>",
                "#include <cstring>", "#include <memory>", "#include <string>",
                "#include <vector>"]
        out += [f'#include "{h}"' for h in headers()]
    else:
        out += ["#include <stdio.h>", "#include <stdlib.h>", "#include <string.h>",
                '#include "ferry/capi/ferry.h"', '#include "ferry/capi/flight.h"']
    globals_done = set()
    bodies = []
    for b in blocks:
        names = b.option_list("prelude")
        for name in names:
            if name not in globals_done:
                out.append(table[name][0])
                globals_done.add(name)
        code_lines = b.code.split("\n")
        includes = [line for line in code_lines if line.startswith("#include")]
        out += includes
        body = "\n".join("" if line.startswith("#include") else line for line in code_lines)
        locals_ = "".join(table[name][1] for name in names)
        if language == "cpp":
            bodies.append(f"namespace docs_{block_name(b)} {{\nusing namespace ferry;\n"
                          f"static ferry::Status Block() {{\n{locals_}\n"
                          f'#line {b.line} "{b.page}"\n{body}\n'
                          f"  return ferry::Status::OK();\n}}\n}}\n")
        else:
            bodies.append(f"static void Block_{block_name(b)}(void) {{\n{locals_}\n"
                          f'#line {b.line} "{b.page}"\n{body}\n}}\n')
    out += bodies
    out.append("int main(int argc, char** argv) {")
    out.append("  if (argc < 2) return 2;")
    for b in blocks:
        name = block_name(b)
        if language == "cpp":
            out.append(f'  if (std::strcmp(argv[1], "{name}") == 0) {{\n'
                       f"    ferry::Status st = docs_{name}::Block();\n"
                       f'    if (!st.ok()) {{ std::fprintf(stderr, "%s\\n", st.message().c_str()); '
                       f"return 1; }}\n    return 0;\n  }}")
        else:
            out.append(f'  if (strcmp(argv[1], "{name}") == 0) {{ Block_{name}(); return 0; }}')
    out.append("  return 2;\n}")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="session")
def programs(tmp_path_factory):
    """language -> (the built program, or the compiler's complaint)."""
    out = {}
    where = tmp_path_factory.mktemp("docs-programs")
    lib = build_dir()
    for language, compiler, std in (("cpp", "g++", "-std=c++20"), ("c", "gcc", "-std=c11")):
        blocks = [b for b in RUN if b.language == language]
        source = where / f"blocks.{language}"
        source.write_text(program(language, blocks))
        binary = where / f"blocks-{language}"
        cmd = [compiler, std, "-O0", "-w", f"-I{ROOT / 'include'}", str(source), "-o", str(binary),
               f"-L{lib}", f"-Wl,-rpath,{lib}", "-lferry_flight", "-lferry"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        out[language] = (binary if r.returncode == 0 else None, r.stderr[-6000:])
    return out


def run_compiled(block, workdir, programs):
    binary, complaint = programs[block.language]
    assert binary is not None, f"the {block.language} blocks do not compile:\n{complaint}"
    env = environment()
    fixtures.make_files(block.option_list("files"), workdir)
    r = subprocess.run([str(binary), block_name(block)], cwd=workdir, env=env, text=True,
                       capture_output=True, timeout=120)
    assert r.returncode == 0, f"{block.page}:{block.line}:\n{r.stdout}\n{r.stderr}"
    if block.language == "c":
        # The C fragments print what failed and carry on; a clean run prints nothing to stderr.
        assert r.stderr == "", f"{block.page}:{block.line}: {r.stderr}"


# ---------------------------------------------------------------------------------------------
# Shell transcripts and command lists


def run_commands(block, workdir):
    env = environment()
    fixtures.make_files(block.option_list("files"), workdir)
    write_configs(block, workdir)
    servers, replace = start_servers(block, workdir, env)
    served = None
    try:
        listed = doc_blocks.commands(block.code, block.language)
        for i, (command, shown) in enumerate(listed):
            if command.startswith("echo $?") or command == "^C":
                continue
            # A failing command is followed by `$ echo $?` and the status it exits with.
            expected = 0
            if i + 1 < len(listed) and listed[i + 1][0] == "echo $?" and listed[i + 1][1]:
                expected = int(listed[i + 1][1][0])
            command = substitute(command, replace)
            words = shlex.split(command)
            first = next((k for k, w in enumerate(words) if "=" not in w), 0)
            if words[first:first + 2] == ["ferry", "serve"] and "--check-config" not in words:
                if served is not None:
                    # A second server names the first (--peer): the first's own URI.
                    words = [URI.sub(served, w) for w in words]
                server = fixtures.Server(cli(), words[first + 2:], workdir, env)
                servers.append(server)
                served = server.uri
                continue
            if served is not None:
                # Later commands name the URI the page shows; they get the server's own.
                command = URI.sub(lambda _: f"'{served}'", command)
            r = subprocess.run(["bash", "-c", command], cwd=workdir, env=env, text=True,
                               capture_output=True, timeout=300)
            assert r.returncode == expected, (f"{block.page}:{block.line}: {command}: exit "
                                              f"{r.returncode}, the page shows {expected}:\n"
                                              f"{r.stdout}\n{r.stderr}")
    finally:
        for s in servers:
            s.close()


def check_ci(block):
    """Each command of the block is run by CI: its program and subcommand, and each argument that
    names a file of the repository (tracked by git: dist/ and build/ hold what the commands make),
    appear in one of the files named by ci=."""
    text = " ".join(" ".join((ROOT / f).read_text().split()) for f in block.option_list("ci"))
    tracked = set(subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                                 check=True, timeout=60).stdout.split())
    for command, _ in doc_blocks.commands(block.code, "sh"):
        words = shlex.split(command)
        needed = [" ".join(words[:2])] + [w for w in words[2:] if w in tracked]
        for n in needed:
            assert n in text, (f"{block.page}:{block.line}: `{command}`: CI "
                               f"({', '.join(block.option_list('ci'))}) never runs {n!r}")


def check_bench(block):
    """A benchmark's commands take minutes of a quiet machine, so their full form is checked: every
    repository file they name exists, every benchmark binary is a target of bench/CMakeLists.txt,
    every -D option is one of the project's, and every --flag given to a Python script is one the
    script defines."""
    cmake = (ROOT / "CMakeLists.txt").read_text() + (ROOT / "bench" / "CMakeLists.txt").read_text()
    bench_cmake = (ROOT / "bench" / "CMakeLists.txt").read_text()
    for command, _ in doc_blocks.commands(block.code, "sh"):
        words = shlex.split(command)
        where = f"{block.page}:{block.line}: `{command}`"
        script = None
        for w in words:
            name = os.path.basename(w)
            m = re.fullmatch(r"ferry_(\w+?)_bench", name)
            if m:
                assert (ROOT / "bench" / m.group(1)).is_dir() or name in bench_cmake, \
                    f"{where}: no benchmark target {name}"
            elif w.startswith("-DFERRY_"):
                option = w[2:].split("=", 1)[0]
                assert option in cmake, f"{where}: no CMake option {option}"
            elif w.startswith(("bench/", "scripts/", "tests/")):
                assert (ROOT / w).exists(), f"{where}: no file {w}"
                if w.endswith(".py"):
                    script = (ROOT / w).read_text()
            elif script is not None and w.startswith("--"):
                flag = w.split("=", 1)[0]
                assert f'"{flag}"' in script or f"'{flag}'" in script, \
                    f"{where}: the script has no option {flag}"


# The shortest run of each benchmark, appended to its command (a later flag wins, in argparse and
# in Google Benchmark); FERRY_BENCH_SMOKE=1 shrinks the data of those with no flag for it.
SMOKE_GBENCH = ["--benchmark_min_time=0.001", "--benchmark_repetitions=1"]
SMOKE_SCRIPT = {
    "flight_bench.py": ["--gib", "0.02", "--batch-mib", "4", "--repeat", "1", "--rounds", "1",
                        "--latency-calls", "20", "--pairs", "1"],
    "cli_bench.py": ["--mib", "16", "--batches", "4", "--repeat", "1"],
    "crossing_bench.py": ["--number", "200", "--repeat", "1"],
    "cluster_bench.py": ["--mib", "4", "--repeat", "1", "--rounds", "1", "--small-reads", "2"],
    "parallel_read.py": ["--mib", "1", "--runs", "1", "--own-servers"],
    "cpu_per_byte.py": ["--mib", "4", "--rounds", "1", "--reads", "1"],
    "paired_reads.py": ["--mib", "4", "--rounds", "2"],
    "polars_bench.py": ["--mib", "4", "--repeat", "1"],
    "compression_bench.py": ["--mib", "8", "--repeat", "1"],
    "ray_bench.py": ["--mib", "1", "--repeat", "0", "--no-parquet"],
    "small_batches.py": ["--rows", "100"],
    "get_small_batches.py": ["--batches", "200", "--rounds", "1"],
    "python_producer.py": ["--rounds", "1", "--sizes", "1000:200"],
    "many_clients.py": ["--mib", "16", "--clients", "1,2"],
    "metrics_bench.py": ["--gib", "0.02", "--small-batches", "50", "--repeat", "2"],
    "shared_dictionary.py": ["--batches", "5", "--values", "1000", "--repeat", "1"],
    "reread.py": ["--mib", "16", "--rounds", "1", "--pause", "1.1"],
}


def bench_tree():
    """FERRY_BENCH_TREE: a tree configured with -DFERRY_BUILD_BENCH=ON (scripts/test.sh sets it to
    the test tree), which stands in for the pages' build/bench; None where it is not set."""
    tree = os.environ.get("FERRY_BENCH_TREE")
    return Path(tree).resolve() if tree else None


def is_setup(words):
    """What builds or installs (the setup script, CMake, pip): CI's own stages do that, so a
    benchmark block's such lines are checked, not run."""
    return (words[:2] == ["bash", "scripts/setup.sh"] or words[0] == "cmake"
            or words[1:4] == ["-m", "pip", "install"])


def script_of(words):
    """The file name of the Python script a command runs, or None."""
    return next((os.path.basename(w) for w in words if w.endswith(".py")), None)


def smoke_command(words, tree, workdir):
    """`words` with the pages' paths mapped to this run (build/bench to `tree`, repository files
    to the checkout, docs/img outputs to `workdir`) and the benchmark's shortest-run flags."""
    def place(w):
        if w.startswith("build/bench/"):
            return str(tree / w[len("build/bench/"):])
        if w.startswith("docs/img/"):
            return str(workdir / os.path.basename(w))
        if w.startswith(("bench/", ".venv/", "scripts/")):
            return str(ROOT / w)
        return w
    out = []
    for w in words:
        name, eq, value = w.partition("=")
        out.append(f"{name}={place(value)}" if eq and re.fullmatch(r"[A-Z_]+", name) else place(w))
    program = next((os.path.basename(w) for w in words if "=" not in w or w.startswith("-")), "")
    script = script_of(words)
    if re.fullmatch(r"ferry_\w+_bench", program):
        out += SMOKE_GBENCH
    elif script in SMOKE_SCRIPT:
        out += SMOKE_SCRIPT[script]
    return out


def run_bench(block, workdir):
    """A benchmark block runs at its smallest (SMOKE_*), proving its commands still work; the
    figures of such a run mean nothing and are not kept. A `--only` line whose script ran whole
    earlier in the block is checked only. Without FERRY_BENCH_TREE the block is only checked."""
    check_bench(block)
    tree = bench_tree()
    if tree is None:
        return
    env = dict(environment(), FERRY_BENCH_SMOKE="1")
    ran_whole = set()  # scripts this block ran without --only
    for command, _ in doc_blocks.commands(block.code, "sh"):
        words = shlex.split(command)
        if is_setup(words):
            continue
        script = script_of(words)
        # --only runs a part of what the script's whole run does: after a whole smoke run in the
        # same block it is checked (check_bench), not run again.
        if "--only" in words and script in ran_whole:
            continue
        if "--only" not in words:
            ran_whole.add(script)
        words = smoke_command(words, tree, workdir)
        # shlex.join leaves VAR=value unquoted, so bash still reads it as an assignment.
        r = subprocess.run(["bash", "-c", shlex.join(words)], cwd=workdir, env=env, text=True,
                           capture_output=True, timeout=300)
        assert r.returncode == 0, (f"{block.page}:{block.line}: `{command}` (smoke run: "
                                   f"{' '.join(words)}): exit {r.returncode}\n{r.stdout[-2000:]}\n"
                                   f"{r.stderr[-4000:]}")


def run_shell(block, workdir):
    if block.options.get("ci"):
        check_ci(block)
    elif block.options.get("bench"):
        run_bench(block, workdir)
    else:
        run_commands(block, workdir)


# ---------------------------------------------------------------------------------------------
# CMake: the lines a consumer writes, against ferry installed from the build tree


@pytest.fixture(scope="session")
def installed(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("docs-install")
    r = subprocess.run(["cmake", "--install", str(build_dir()), "--prefix", str(prefix)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return prefix


def run_cmake(block, workdir, installed):
    (workdir / "main.c").write_text("int main(void) { return 0; }\n")
    (workdir / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(docs_consumer C CXX)\n"
        "add_executable(app main.c)\n" + block.code)
    for cmd in (["cmake", "-S", ".", "-B", "b", "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={installed}"],
                ["cmake", "--build", "b"]):
        r = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"{block.page}:{block.line}:\n{r.stdout}\n{r.stderr}"


# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# A `ferry serve` configuration: checked as `ferry serve --check-config` checks it


def run_toml(block, workdir):
    fixtures.make_files(block.option_list("files"), workdir)
    path = workdir / block.options.get("file", "ferry.toml")
    path.write_text(block.code)
    r = subprocess.run([cli(), "serve", "--check-config", str(path)], cwd=workdir,
                       env=environment(), text=True, capture_output=True, timeout=60)
    assert r.returncode == 0, f"{block.page}:{block.line}: {r.stderr}"


RUNNERS = {"python": run_python, "ruby": run_ruby, "cpp": run_compiled, "c": run_compiled,
           "sh": run_shell, "console": run_shell, "cmake": run_cmake, "toml": run_toml}


# Under pytest-xdist (--dist loadgroup) the benchmarks, which load both cores themselves, run one
# at a time on one worker, and every other block on whichever worker is free.
@pytest.mark.parametrize("block", [
    pytest.param(b, marks=pytest.mark.xdist_group("bench")) if b.options.get("bench") else b
    for b in RUN], ids=[b.id for b in RUN])
def test_block(block, request):
    runner = RUNNERS[block.language]
    kwargs = {"block": block}
    for name in runner.__code__.co_varnames[:runner.__code__.co_argcount]:
        if name != "block":
            kwargs[name] = request.getfixturevalue(name)
    runner(**kwargs)


def test_every_page_parses_and_tags_its_fences():
    # doc_blocks raises for an untagged or unknown fence; collecting BLOCKS above already did,
    # so reaching here means every page passed. Check that the runnable set is not empty.
    assert len(RUN) > 20, [b.id for b in BLOCKS]
