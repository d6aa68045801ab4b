#!/usr/bin/env python3
"""The include-direction check against planted violations: each planted include must fail the
check with a line naming the file and the edge, and the clean tree must pass. Run by
scripts/lint.sh (python3 scripts/test_check_layers.py)."""
import os
import shutil
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check_layers.py")
sys.path.insert(0, HERE)
import lint_check  # noqa: E402


class CheckLayers(lint_check.PlantedTree):
    git_tracked = False  # check_layers reads every file below --root

    def setUp(self):
        super().setUp()
        os.makedirs(os.path.join(self.root, "scripts"))
        shutil.copy(os.path.join(HERE, "layers.txt"), os.path.join(self.root, "scripts"))
        self.write("include/ferry/core/status.hpp", "#pragma once\n")
        self.write("include/ferry/ipc/reader.hpp", '#include "ferry/core/status.hpp"\n')
        self.write("src/format/bits.hpp", "#pragma once\n")
        self.write("src/format/type.cpp", '#include "bits.hpp"\n#include "ferry/core/status.hpp"\n')
        self.write("src/ipc/reader.cpp", '#include "ferry/ipc/reader.hpp"\n#include <vector>\n')
        self.write("include/ferry/testing/integration_json.hpp", "#pragma once\n")
        self.write("tools/ferry/main.cpp",
                   '#include "ferry/ipc/reader.hpp"\n#include "ferry/testing/integration_json.hpp"\n')
        # Allowed beside the library: a layer's tests may use its private headers and the
        # support; transport may reach the export macro.
        self.write("include/ferry/abi/export.h", "#pragma once\n")
        self.write("include/ferry/abi/arrow_c_abi.h", "#pragma once\n")
        self.write("include/ferry/core/bytes.hpp", '#include "ferry/abi/export.h"\n')
        self.write("include/ferry/core/keep_alive.hpp", '#include "ferry/abi/arrow_c_abi.h"\n')
        self.write("src/transport/shm.cpp", '#include "ferry/core/bytes.hpp"\n')
        self.write("tests/support/test_util.hpp", '#include "ferry/core/status.hpp"\n')
        self.write("tests/format/bits_test.cpp",
                   '#include "format/bits.hpp"\n#include "support/test_util.hpp"\n')
        self.write("bench/format/bits_bench.cpp", '#include "format/bits.hpp"\n')
        self.write("fuzz/format/bits_fuzz.cpp", '#include "format/bits.hpp"\n')
        self.write("tests/interop/peer.c", '#include "peer.h"\n#include <stdio.h>\n')
        self.write("tests/interop/peer.h", "#pragma once\n")

    def run_check(self):
        return subprocess.run([sys.executable, CHECK, "--root", self.root],
                              capture_output=True, text=True)

    def test_the_clean_tree_passes(self):
        r = self.run_check()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_a_layers_tests_may_not_use_another_layers_private_headers(self):
        self.write("src/ipc/framing.hpp", "#pragma once\n")
        self.write("tests/format/array_test.cpp", '#include "ipc/framing.hpp"\n')
        r = self.run_check()
        self.assertEqual(r.returncode, 1)
        self.assertIn("tests/format/array_test.cpp:1: tests/ includes src/ipc/framing.hpp, a "
                      "private header of layer ipc", r.stdout)

    def test_a_benchmark_of_another_layer_fails(self):
        self.write("bench/ipc/reader_bench.cpp", '#include "format/bits.hpp"\n')
        r = self.run_check()
        self.assertEqual(r.returncode, 1)
        self.assertIn("bench/ipc/reader_bench.cpp:1: bench/ includes src/format/bits.hpp", r.stdout)

    def test_a_fuzz_target_may_not_use_the_test_support(self):
        self.write("fuzz/format/bits_fuzz.cpp", '#include "support/test_util.hpp"\n')
        r = self.run_check()
        self.assertEqual(r.returncode, 1)
        self.assertIn("fuzz/format/bits_fuzz.cpp:1: fuzz/ includes tests/support/test_util.hpp",
                      r.stdout)

    def test_the_independent_peer_may_not_use_ferry(self):
        self.write("tests/interop/peer.c", '#include "ferry/core/status.hpp"\n')
        r = self.run_check()
        self.assertEqual(r.returncode, 1)
        self.assertIn("tests/interop/peer.c:1: tests/interop/ includes ferry/core/status.hpp",
                      r.stdout)

    def test_the_library_may_not_include_test_code(self):
        self.write("src/format/array.cpp", '#include "tests/support/test_util.hpp"\n')
        r = self.run_check()
        self.assertEqual(r.returncode, 1)
        self.assertIn("src/format/array.cpp:1: format includes tests/support/test_util.hpp", r.stdout)

    def test_transport_may_not_reach_arrow_through_core(self):
        self.write("src/transport/ucx.cpp", '#include "ferry/core/keep_alive.hpp"\n')
        r = self.run_check()
        self.assertEqual(r.returncode, 1)
        self.assertIn("src/transport/ucx.cpp:1: transport reaches ferry/abi/arrow_c_abi.h through "
                      "ferry/core/keep_alive.hpp", r.stdout)

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
        self.assertIn("tools/ferry/cat.cpp:1: tools/ includes src/format/bits.hpp", r.stdout)

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
