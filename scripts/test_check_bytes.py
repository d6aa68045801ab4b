#!/usr/bin/env python3
"""The byte-vocabulary check against planted violations: each planted span of bytes and each
pointer-and-length pair (parameters over several lines, members, defaults) must be reported with
its file and line, and the allowed forms (ByteSpan and SharedBytes, the C headers' structs and
functions, the vocabulary's own members, constructor and conversions, writable pointers, a
pointer beside an integer that is no length, comments) must pass. Run by scripts/lint.sh."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_bytes  # noqa: E402
import lint_check  # noqa: E402


class CheckBytes(lint_check.PlantedTree):

    def test_clean_headers_pass(self):
        self.write("include/ferry/ipc/ok.hpp", """
Status Consume(ByteSpan metadata, const SharedBytes& body);
Status Write(std::span<const ByteSpan> pieces);
Result<MemoryView> Get(const void* object, int32_t flags);
virtual void Free(void* ptr, int64_t size) noexcept = 0;
Status CopyBytes(Device& src_dev, const void* src, Device& dst_dev, void* dst, int64_t n);
std::string DecimalToString(const uint8_t* bytes, int32_t bitwidth, int32_t scale);
// A comment may say std::span<const uint8_t> or (const void* data, int64_t size).
""")
        self.write("include/ferry/abi/device_abi.h",
                   "struct FerryBufferView {\n  const void* data;\n  int64_t size;\n};\n")
        self.write("include/ferry/capi/ipc.h",
                   "FerryErrorCode FerryIpcReadBuffer(const uint8_t* data, int64_t size);\n")
        self.write("include/ferry/core/bytes.hpp", """
struct ByteSpan {
  const uint8_t* data = nullptr;
  int64_t size = 0;
  ByteSpan(const void* bytes, int64_t n) noexcept : data(bytes), size(n) {}
  ByteSpan(std::span<const uint8_t> span) noexcept;
};
struct SharedBytes {
  const uint8_t* data = nullptr;
  int64_t size = 0;
  explicit operator std::span<const uint8_t>() const noexcept;
};
""")
        self.assertEqual(check_bytes.check(self.root), [])

    def test_each_violation_is_reported(self):
        planted = {
            "include/ferry/dipc/a.hpp": "Result<Message> Parse(std::span<const uint8_t> bytes);\n",
            "include/ferry/ipc/b.hpp": "Status ConsumeMessage(const uint8_t* metadata,\n"
                                      "                      int64_t metadata_size);\n",
            "include/ferry/format/c.hpp": "struct View {\n  const void* data = nullptr;\n"
                                         "  int64_t size_bytes = 0;\n};\n",
            "include/ferry/core/d.hpp": "Status Append(const char* p = nullptr, size_t n = 0);\n",
            "include/ferry/device/e.hpp": "bool In(std::span<const std::byte, 8> b);\n",
            "include/ferry/core/bytes.hpp": "static SharedBytes Borrow(const void* data, "
                                           "int64_t size);\n",
        }
        for path, text in planted.items():
            self.write(path, text)
        findings = check_bytes.check(self.root)
        for path in planted:
            self.assertTrue(any(f.startswith(path + ":") for f in findings), (path, findings))
        self.assertTrue(any(f.startswith("include/ferry/ipc/b.hpp:1:") for f in findings),
                        findings)
        self.assertTrue(any(f.startswith("include/ferry/format/c.hpp:2:") for f in findings),
                        findings)
        self.assertEqual(len(findings), len(planted), findings)


if __name__ == "__main__":
    unittest.main()
