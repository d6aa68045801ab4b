#!/usr/bin/env python3
"""The typed-error check against planted violations: each planted line must be reported with its
file and line, and the allowed forms (a factory, Status::FromErrno, a StatusCode comparison, a
system call's EINTR retry, the table itself, comments) must pass. Run by scripts/lint.sh."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_errors  # noqa: E402
import lint_check  # noqa: E402


class CheckErrors(lint_check.PlantedTree):

    def test_clean_code_passes(self):
        self.write("src/dipc/ok.cpp", """
Status A() { return Status::NotFound("no dataset"); }
Status B() { return Status::FromErrno(errno, "open"); }
bool C(const Status& st) { return st.code() == StatusCode::kDeadlineExceeded; }
void D() { while (read(fd, b, 1) < 0 && errno == EINTR) {} }
// A comment may say Status(EINVAL, ...) and code() == EIO.
int E(FILE* f) { return std::fgetc(f) != EOF; }
""")
        self.write("src/core/status_code.cpp", "switch (err) { case EPIPE: return x; }\n")
        self.assertEqual(check_errors.check(self.root), [])

    def test_each_violation_is_reported(self):
        planted = {
            "src/dipc/a.cpp": "return Status(EBUSY, \"busy\");\n",
            "src/flight/b.cpp": "return Status(\n    ENOENT, \"gone\");\n",
            "tools/ferry/c.cpp": "return Status(errno, \"x\");\n",
            "python/src/d.cpp": "if (st.code() == EINVAL) {}\n",
            "ruby/ext/ferry/e.cpp": "switch (code) {\n  case ENOTSUP:\n    break;\n}\n",
            "src/transport/f.cpp": "if (errno == EPIPE || errno == ECONNRESET) {}\n",
            "src/core/g.cpp": "if (st.os_error() != ENOSPC) {}\n",
        }
        for path, text in planted.items():
            self.write(path, text)
        findings = check_errors.check(self.root)
        for path in planted:
            self.assertTrue(any(f.startswith(path + ":") for f in findings), (path, findings))
        self.assertTrue(any(f.startswith("src/flight/b.cpp:1:") for f in findings), findings)
        self.assertTrue(any(f.startswith("ruby/ext/ferry/e.cpp:2:") for f in findings), findings)
        self.assertEqual(sum(f.startswith("src/transport/f.cpp:") for f in findings), 2, findings)


if __name__ == "__main__":
    unittest.main()
