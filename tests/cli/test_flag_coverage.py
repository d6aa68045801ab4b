"""Every option of every `ferry` subcommand is passed by some test: the subcommands come from
`ferry --help`, their options from `ferry SUB --help`, and the command lines from the test
sources (flag_coverage.py says how they are read). A new option fails here until a test passes it.
The refusal table (test_refused_options.py) does not count: it shows where an option is refused,
not that it does what its help says. The checker itself is tested on planted sources below."""
import os
import subprocess
import textwrap

import pytest

import flag_coverage as fc

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
NOT_COUNTED = {os.path.join(HERE, name) for name in
               ("flag_coverage.py", "test_flag_coverage.py", "test_refused_options.py")}


@pytest.fixture(scope="module")
def helps(ferry_cli):
    def text(*args):
        r = subprocess.run([ferry_cli, *args, "--help"], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        return r.stdout

    out = {"": text()}
    for sub in fc.subcommands(out[""]):
        out[sub] = text(sub)
    return out


def test_every_option_of_every_subcommand_is_passed_by_a_test(helps):
    subs = fc.subcommands(helps[""])
    assert {"serve", "get", "list", "put", "convert"} <= set(subs), subs
    assert sum(len(fc.options(helps[s])) for s in subs) > 50
    missing = fc.missing(helps, fc.test_sources(REPO, NOT_COUNTED))
    assert missing == [], "no test passes these options (add a test that does): " + ", ".join(
        missing)


# ---- the checker on planted help texts and sources --------------------------------------------

TOOL_HELP = """ferry: planted.
Usage: ferry [OPTIONS] SUBCOMMAND

Options:
  -h,--help                   Print this help message and exit

Subcommands:
  serve                       Serve.
  get                         Get.
"""
SERVE_HELP = """Serve.
Usage: ferry serve [OPTIONS]

Options:
  -h,--help                   Print this help message and exit
  --keep                      Keep
  --region-bytes INT:SIZE [b, kb(=1024b), ...]:INT in [1048576 - 1099511627776]=268435456
                              The region: --not-an-option in a wrapped line
  -v,--verbose                Log
"""
GET_HELP = """Get.
Usage: ferry get [OPTIONS] uri

Positionals:
  uri TEXT REQUIRED           The URI

Options:
  -h,--help                   Print this help message and exit
  --columns TEXT ...          Columns
  --no-progress{false}        No bar
  --timeout FLOAT:POSITIVE=30 Seconds
"""
HELPS = {"": TOOL_HELP, "serve": SERVE_HELP, "get": GET_HELP}


def test_help_texts_are_read_as_cli11_writes_them():
    assert fc.subcommands(TOOL_HELP) == ["serve", "get"]
    assert fc.options(SERVE_HELP) == [("--keep",), ("--region-bytes",), ("-v", "--verbose")]
    assert fc.options(GET_HELP) == [("--columns",), ("--no-progress",), ("--timeout",)]


def _missing(**sources):
    return fc.missing(HELPS, {f"tests/x/{name}.py": textwrap.dedent(text)
                              for name, text in sources.items()})


ALL = ["ferry serve --keep", "ferry serve --region-bytes", "ferry serve --verbose",
       "ferry get --columns", "ferry get --no-progress", "ferry get --timeout"]


def test_options_a_test_only_mentions_do_not_count():
    assert _missing(test_mentions='''
        """A docstring: ferry serve --keep, ferry get --columns 0."""
        import subprocess

        def test_words(cli):
            # ferry serve --region-bytes 1MiB, in a comment
            r = subprocess.run([cli(), "get", "x", "--no-progress"], capture_output=True)
            assert "--timeout" in r.stderr
            assert r.stderr.startswith("ferry: --columns: ")
            parts = r.stderr.split(" --verbose ")
            pytest.fail(f"--keep was {parts}")
            raise AssertionError("-v")
        ''') == [m for m in ALL if m != "ferry get --no-progress"]


def test_an_argv_list_a_run_call_and_a_command_line_count():
    assert _missing(test_passes='''
        import subprocess

        def test_list(cli):
            subprocess.run([cli(), "serve", "--keep", "--region-bytes=1MiB", "t=x"])

        def test_fixture(run):
            run("get", "shm://x", "--columns", "0")

        def test_line():
            subprocess.run("ferry get shm://x --timeout 2 --no-progress", shell=True)
        ''') == ["ferry serve --verbose"]


def test_an_option_counts_only_for_the_subcommand_that_is_run():
    # --keep goes to `get`, which has none; -v is given in a function that runs only `get`.
    assert _missing(test_one='''
        def test_get(run):
            run("get", "shm://x", "--keep", "--columns", "0", "--timeout", "1", "--no-progress")

        def test_verbose(run):
            run("get", "shm://x", "-v")
        ''') == ["ferry serve --keep", "ferry serve --region-bytes", "ferry serve --verbose"]


def test_helpers_fixtures_and_argv_tables_are_followed():
    support = '''
        import subprocess

        class Serve:
            def __init__(self, *args):
                self.proc = subprocess.Popen([ferry_cli(), "serve", *args])

        def get(uri, *args):
            return subprocess.run([cli(), "get", uri, *args])
        '''
    tests = '''
        from support import Serve, get

        SHAPES = {"keep": ["--keep"], "plain": []}
        BOUNDS = ["--timeout", "2"]

        class Twice(Serve):
            pass

        def test_table(shape):
            with Twice("--region-bytes", "1MiB", *SHAPES[shape]):
                pass

        def test_helper():
            get("shm://x", *BOUNDS, "--columns", "0")
            extra = ["-v"]
            Serve(*extra)
        '''
    assert _missing(support=support, test_uses=tests) == ["ferry get --no-progress"]


def test_a_new_option_no_test_passes_is_reported():
    helps = dict(HELPS, get=GET_HELP + "  --planted-option INT     Planted\n")
    sources = {"tests/x/test_all.py": textwrap.dedent('''
        def test_all(run):
            run("serve", "--keep", "--region-bytes", "1", "--verbose")
            run("get", "x", "--columns", "0", "--no-progress", "--timeout", "1")
        ''')}
    assert fc.missing(HELPS, sources) == []
    assert fc.missing(helps, sources) == ["ferry get --planted-option"]
