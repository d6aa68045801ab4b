#!/usr/bin/env python3
"""The include-direction check against planted violations: each planted include must fail the
check with a line naming the file and the edge, and the clean tree must pass. Run by
scripts/lint.sh (python3 scripts/test_check_layers.py)."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check_layers.py")


class CheckLayers(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="ferry-layers-")
        os.makedirs(os.path.join(self.root, "scripts"))
        shutil.copy(os.path.join(HERE, "layers.txt"), os.path.join(self.root, "scripts"))
        self.write("include/ferry/core/status.hpp", "#pragma once\n")
        self.write("include/ferry/ipc/reader.hpp", '#include "ferry/core/status.hpp"\n')
        self.write("src/format/bits.hpp", "#pragma once\n")
        self.write("src/format/type.cpp", '#include "bits.hpp"\n#include "ferry/core/status.hpp"\n')
        self.write("src/ipc/reader.cpp", '#include "ferry/ipc/reader.hpp"\n#include <vector>\n')
        self.write("src/testing/integration_json.hpp", "#pragma once\n")
        self.write("tools/ferry/main.cpp",
                   '#include "ferry/ipc/reader.hpp"\n#include "testing/integration_json.hpp"\n')

    def tearDown(self):
        shutil.rmtree(self.root)

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def run_check(self):
        return subprocess.run([sys.executable, CHECK, "--root", self.root],
                              capture_output=True, text=True)

    def test_the_clean_tree_passes(self):
        r = self.run_check()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_a_lower_layer_including_a_higher_one_fails(self):
        self.write("src/format/array.cpp", '#include "ferry/ipc/reader.hpp"\n')
        r = self.run_check()
        self.assertEqual(r.returncode, 1)
        self.assertIn("src/format/array.cpp:1: format includes ferry/ipc/reader.hpp", r.stdout)

    def test_transport_may_not_see_arrow_types(self):
        self.write("src/transport/shm.cpp", '#include "ferry/format/type.hpp"\n')
        self.write("include/ferry/format/type.hpp", "#pragma once\n")
        r = self.run_check()
        self.assertEqual(r.returncode, 1)
        self.assertIn("transport includes ferry/format/type.hpp", r.stdout)

    def test_another_layers_private_header_fails(self):
        self.write("src/ipc/assembler.cpp", '#include "format/bits.hpp"\n')
        r = self.run_check()
        self.assertEqual(r.returncode, 1)
        self.assertIn("src/ipc/assembler.cpp:1: ipc includes src/format/bits.hpp", r.stdout)

    def test_a_face_including_a_private_header_fails(self):
        self.write("tools/ferry/cat.cpp", '#include "format/bits.hpp"\n')
        r = self.run_check()
        self.assertEqual(r.returncode, 1)
        self.assertIn("tools/ferry/cat.cpp:1: tools includes src/format/bits.hpp", r.stdout)

    def test_a_public_header_including_a_private_one_fails(self):
        self.write("include/ferry/format/type.hpp", '#include "format/bits.hpp"\n')
        r = self.run_check()
        self.assertEqual(r.returncode, 1)
        self.assertIn("public header includes private header src/format/bits.hpp", r.stdout)

    def test_extern_c_outside_capi_fails(self):
        self.write("src/ipc/writer.cpp", 'extern "C" int f();\n')
        r = self.run_check()
        self.assertEqual(r.returncode, 1)
        self.assertIn('extern "C" outside capi', r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=1)
