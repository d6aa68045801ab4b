#!/usr/bin/env python3
"""scripts/tidy.py's compile database against hand-written ones: a unity batch
(cmake/FerryUnity.cmake) is replaced by one entry for each file it includes, each with the batch's
flags and its own path, found on the batch's include path; other entries pass as they are; a
batch that includes a file on no include path is refused, naming both. Run by scripts/lint.sh."""
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tidy  # noqa: E402


class Unbatched(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        for rel in ("src/core/a.cpp", "src/core/b.cpp", "src/core/c.cpp"):
            path = os.path.join(self.root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "w").close()
        os.makedirs(os.path.join(self.root, "build/unity"))

    def tearDown(self):
        self.tmp.cleanup()

    def batch(self, name, includes):
        path = os.path.join(self.root, "build/unity", name)
        with open(path, "w") as f:
            f.write("// Generated: ferry_core's batch 0.\n")
            f.writelines(f'#include "{rel}"\n' for rel in includes)
        return path

    def entry(self, source):
        build = os.path.join(self.root, "build")
        return {"directory": build, "file": source,
                "command": f"/usr/bin/g++ -I{self.root}/src -O2 -o x.o -c {source}"}

    def test_a_batch_becomes_its_files(self):
        batch = self.batch("ferry_core_0.cpp", ["core/a.cpp", "core/b.cpp"])
        alone = os.path.join(self.root, "src/core/c.cpp")
        out = tidy.unbatched([self.entry(batch), self.entry(alone)])
        files = [e["file"] for e in out]
        self.assertEqual(files, [os.path.join(self.root, "src/core/a.cpp"),
                                 os.path.join(self.root, "src/core/b.cpp"), alone])
        self.assertEqual(out[0]["arguments"],
                         ["/usr/bin/g++", f"-I{self.root}/src", "-O2", "-o", "x.o", "-c",
                          os.path.join(self.root, "src/core/a.cpp")])
        self.assertEqual(out[2]["command"], self.entry(alone)["command"])

    def test_a_file_on_no_include_path_is_refused(self):
        batch = self.batch("ferry_core_1.cpp", ["core/a.cpp", "core/missing.cpp"])
        with self.assertRaises(SystemExit) as caught:
            tidy.unbatched([self.entry(batch)])
        self.assertIn("ferry_core_1.cpp includes core/missing.cpp", str(caught.exception))

    def test_a_file_named_like_a_batch_but_not_generated_passes(self):
        path = os.path.join(self.root, "build/unity/handwritten.cpp")
        with open(path, "w") as f:
            f.write('#include "core/a.cpp"\n')
        self.assertEqual(tidy.unbatched([self.entry(path)]), [self.entry(path)])


if __name__ == "__main__":
    unittest.main()
