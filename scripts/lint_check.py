"""What the repository's own lint checks share: reporting findings as a check's exit status, and
the planted tree their tests write violations into. Imported by scripts/check_*.py and
scripts/test_check_*.py; runs nothing itself."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest


def report(name, findings):
    """Print each finding on stderr and a count naming the check; 1 if there was any, else 0."""
    for f in findings:
        print(f, file=sys.stderr)
    if findings:
        print(f"{name}: {len(findings)} finding(s)", file=sys.stderr)
        return 1
    return 0


def main(name, check):
    """Run `check(root)` on argv[1], or on the repository this script is in, and report it."""
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))
    return report(name, check(root))


class PlantedTree(unittest.TestCase):
    """A test case with a fresh tree of its own to plant files in, removed after each test. With
    `git_tracked`, the tree is a git repository and each file written is added to it, as the
    checks that read `git ls-files` need."""

    git_tracked = True

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="ferry-lint-")
        if self.git_tracked:
            subprocess.run(["git", "init", "-q", self.root], check=True)

    def tearDown(self):
        shutil.rmtree(self.root)

    def write(self, path, text):
        full = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
        if self.git_tracked:
            subprocess.run(["git", "add", path], cwd=self.root, check=True)
