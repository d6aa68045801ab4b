"""Which `ferry` options the tests pass: every option of every subcommand, as `ferry SUB --help`
lists it, against the command lines the test sources (tests/ and python/tests/) build.

The sources are read as Python syntax trees, not as text, so that only a string a test hands to
a program counts: an element of a list or tuple, an argument of a call, a value assigned to a
name (an argv fragment spliced in later), or a word of a command-line string. A comment never
counts; neither does a docstring, a string compared with another (`"--x" in r.stderr`), one in an
assert that is not inside a call, nor one given to a string method or a `re` function that parses
output (`line.split(" --data-uri ")`) or to an exception or message (`pytest.fail(...)`).

An option counts for the subcommands that the code passing it runs: a subcommand is run where its
name follows the tool in a list, tuple or call (`[cli(), "serve", ...]`, `run("get", ...)`) or in
a command-line string (`"ferry get URI --to F"`). A list or call that runs a subcommand gives its
options to that subcommand alone; otherwise an option goes to the subcommands its function (or
class) runs, itself or through the helpers it calls, fixtures and base classes included, found
in its own module or in the test modules it imports; a module-level option (a table of argv
fragments) goes to every subcommand its module runs."""
import ast
import os
import re
from dataclasses import dataclass, field

# An option line of CLI11's help ("  -v,--verbose   ...", "  --no-progress{false}   ...").
HELP_OPTION = re.compile(r"^  (-\S+)")
HELP_SUBCOMMAND = re.compile(r"^  ([a-z][a-z0-9-]*)\s")
# A word that is an option: --name, --name=value, or a one-letter -x.
OPTION_WORD = re.compile(r"^(--[a-z0-9][a-z0-9-]*|-[a-zA-Z])(?:=.*)?$")
# What names the tool in an argv list or a command line (cli(), ferry_cli, FERRY_CLI, .../ferry,
# a copy called tool) or runs it given the subcommand first: run("get", ...) (the suites'
# fixture), _run(...), a helper handed that fixture (`loaded_libraries(run, "list", ...)`).
TOOL = re.compile(r"cli|ferry|tool|(^|_)run$", re.IGNORECASE)
# Callees whose string arguments parse or report rather than run: string methods, `re`'s
# functions, messages.
PARSERS = {"split", "rsplit", "startswith", "endswith", "find", "rfind", "index", "rindex",
           "count", "partition", "rpartition", "replace", "removeprefix", "removesuffix",
           "strip", "lstrip", "rstrip", "join", "format", "match", "search", "fullmatch",
           "findall", "finditer", "compile", "sub", "subn", "escape", "fail", "skip", "xfail",
           "importorskip", "raises", "warns", "print", "write", "log", "debug", "info",
           "warning", "error"}
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def subcommands(help_text):
    """The subcommands `ferry --help` lists, in its order."""
    out, inside = [], False
    for line in help_text.splitlines():
        if line.startswith("Subcommands:"):
            inside = True
        elif inside and line and not line.startswith(" "):
            break
        elif inside and (m := HELP_SUBCOMMAND.match(line)):
            out.append(m.group(1))
    return out


def options(help_text):
    """The options `ferry SUB --help` lists, each as the tuple of its names (("-v", "--verbose")),
    --help left out."""
    out, inside = [], False
    for line in help_text.splitlines():
        if line and not line.startswith(" "):
            inside = line.startswith("Options:")
        elif inside and (m := HELP_OPTION.match(line)):
            names = tuple(n for n in re.sub(r"\{.*", "", m.group(1)).split(",") if n)
            if "--help" not in names:
                out.append(names)
    return out


def option_words(text):
    """The options among the words of `text` (quotes stripped, values after '=' dropped)."""
    found = []
    for word in text.split():
        m = OPTION_WORD.match(word.strip("'\"`"))
        if m:
            found.append(m.group(1))
    return found


def _callee(call):
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _is_message(call):
    name = _callee(call)
    return (name in PARSERS or name.endswith(("Error", "Exception", "Warning")) or
            (isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) and
             call.func.value.id == "re"))


def _docstrings(tree):
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, *DEFINITIONS)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _text(node):
    """The literal text of a string constant or f-string, with each placeholder as `{expr}`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}"
                       for v in node.values)
    return None


def _launches(elements, names):
    """Subcommands that a sequence of argv elements runs: a name right after the tool."""
    found = set()
    for before, node in zip(elements, elements[1:]):
        text = _text(node)
        if text in names and _text(before) is None and TOOL.search(ast.unparse(before)):
            found.add(text)
    return found


def _words_launch(text, names):
    """Subcommands that a command-line string runs: a name right after the tool's word."""
    words = text.split()
    return {w for b, w in zip(words, words[1:]) if w in names and TOOL.search(b)}


@dataclass
class _Scope:
    """A top-level function or class of a module (or the module's own statements): the
    subcommands it runs itself, the names it calls (fixtures and base classes included), and the
    options it passes."""
    launches: set = field(default_factory=set)
    callees: set = field(default_factory=set)
    # (option, the subcommands its list or call runs, or None: its scope's)
    passed: list = field(default_factory=list)


class _Module:
    """One test source, read into scopes."""

    def __init__(self, path, source, names):
        self.path = path
        self.tree = ast.parse(source, filename=path)
        self.names = names
        self.docstrings = _docstrings(self.tree)
        self.parents = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
        # Names imported from other modules: local name -> (module, name in it).
        self.imports = {}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    self.imports[a.asname or a.name] = (node.module.split(".")[-1], a.name)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    self.imports[a.asname or a.name] = (a.name.split(".")[-1], None)
        self.scopes = {"<module>": _Scope()}
        for node in self.tree.body:
            if isinstance(node, DEFINITIONS):
                self.scopes[node.name] = _Scope()
                self._scan(node, self.scopes[node.name])
            else:
                self._scan(node, self.scopes["<module>"])

    def _passes(self, node):
        """Whether a string node is handed to a program (see the module's docstring)."""
        if id(node) in self.docstrings:
            return False
        child = node
        while (parent := self.parents.get(id(child))) is not None:
            if isinstance(parent, ast.Call):
                return child is not parent.func and not _is_message(parent)
            if isinstance(parent, (ast.List, ast.Tuple, ast.Set, ast.Assign, ast.AnnAssign,
                                   ast.Return, ast.Yield)):
                return True
            if isinstance(parent, (ast.Compare, ast.Assert, ast.Expr, ast.Subscript)):
                return False
            child = parent
        return False

    def _container(self, node):
        """The nearest list, tuple or call holding `node`, and the subcommands it runs."""
        child = node
        while (parent := self.parents.get(id(child))) is not None:
            if isinstance(parent, (ast.List, ast.Tuple)):
                return _launches(parent.elts, self.names)
            if isinstance(parent, ast.Call):
                return self._call_launches(parent)
            child = parent
        return set()

    def _call_launches(self, call):
        found = _launches(call.args, self.names)
        first = _text(call.args[0]) if call.args else None
        if first in self.names and TOOL.search(_callee(call)):
            found.add(first)
        return found

    def _scan(self, root, scope):
        for node in ast.walk(root):
            if isinstance(node, DEFINITIONS[:2]):
                scope.callees.update(a.arg for a in node.args.args)  # fixtures
            if isinstance(node, ast.ClassDef):
                scope.callees.update(b.id for b in node.bases if isinstance(b, ast.Name))
            if isinstance(node, ast.Call):
                scope.callees.add(_callee(node))
                if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                    scope.callees.add(f"{node.func.value.id}.{node.func.attr}")
                scope.launches |= self._call_launches(node)
            if isinstance(node, (ast.List, ast.Tuple)):
                scope.launches |= _launches(node.elts, self.names)
            text = _text(node)
            if (text is None or isinstance(self.parents.get(id(node)), ast.JoinedStr) or
                    not self._passes(node)):
                continue
            words = _words_launch(text, self.names)
            scope.launches |= words
            here = words or self._container(node) or None
            scope.passed += [(o, here) for o in option_words(text)]


class Coverage:
    """What the test sources pass, by subcommand. `sources` maps a path to its Python text;
    `names` are the subcommands."""

    def __init__(self, sources, names):
        self.names = set(names)
        self.modules = {p: _Module(p, s, self.names) for p, s in sources.items()}
        self._runs = {}

    def _resolve(self, module, name):
        """The scopes `name`, as `module` uses it, may be: its own definition, an imported one, a
        fixture in a conftest.py of its directory or above."""
        m = self.modules[module]
        found = []
        if name in m.scopes and name != "<module>":
            found.append((module, name))
        target, inner = m.imports.get(name.split(".")[0], (None, None))
        if target is not None:
            inner = inner if "." not in name else name.split(".", 1)[1]
            for path, other in self.modules.items():
                if os.path.basename(path) == f"{target}.py" and inner in other.scopes:
                    found.append((path, inner))
        directory = os.path.dirname(module) + os.sep
        for path, other in self.modules.items():
            if (os.path.basename(path) == "conftest.py" and
                    directory.startswith(os.path.dirname(path) + os.sep) and name in other.scopes):
                found.append((path, name))
        return found

    def runs(self, module, scope):
        """The subcommands a scope runs, itself or through what it calls."""
        key = (module, scope)
        if key not in self._runs:
            out, seen, todo = set(), {key}, [key]
            while todo:
                path, name = todo.pop()
                s = self.modules[path].scopes[name]
                out |= s.launches
                for callee in s.callees:
                    for target in self._resolve(path, callee):
                        if target not in seen:
                            seen.add(target)
                            todo.append(target)
            self._runs[key] = out
        return self._runs[key]

    def passed(self):
        """{subcommand: the options some test passes it}."""
        out = {n: set() for n in self.names}
        for path, m in self.modules.items():
            whole = set().union(*(self.runs(path, name) for name in m.scopes))
            for name, scope in m.scopes.items():
                mine = self.runs(path, name) or whole
                for option, here in scope.passed:
                    for sub in (here or mine):
                        out[sub].add(option)
        return out


def test_sources(root, leave_out=()):
    """Every .py file under tests/ and python/tests/ of `root`, but those in `leave_out`."""
    out = {}
    for top in ("tests", os.path.join("python", "tests")):
        for directory, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                path = os.path.join(directory, name)
                if name.endswith(".py") and os.path.abspath(path) not in leave_out:
                    with open(path) as f:
                        out[os.path.relpath(path, root)] = f.read()
    return out


def missing(helps, sources):
    """`ferry SUB OPTION` for each option no test passes. `helps` maps each subcommand (and ""
    for the tool) to its --help text; `sources` maps paths to Python text."""
    names = subcommands(helps[""])
    passed = Coverage(sources, names).passed()
    out = []
    for sub in names:
        for aliases in options(helps[sub]):
            if not passed[sub] & set(aliases):
                out.append(f"ferry {sub} {aliases[-1]}")
    return out
