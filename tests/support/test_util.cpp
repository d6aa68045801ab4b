#include "support/test_util.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "ferry/format/schema_view.hpp"

namespace ferry::testing {

Result<Array> ArrayFromJson(const Field& field, const std::string& json) {
  FERRY_ASSIGN_OR_RAISE(UniqueSchema schema, field.Export());
  FERRY_ASSIGN_OR_RAISE(UniqueArray array, ::ferry::ArrayFromJson(schema.get(), json));
  return Array::Import(std::move(schema), std::move(array));
}

std::string ToJson(const ArrayView& view) {
  auto json = ArrayToJson(view);
  EXPECT_TRUE(json.ok()) << json.status().message();
  return json.ok() ? *json : std::string("<error: ") + json.status().message() + ">";
}

void ExpectArraysEqual(const ArrayView& expected, const ArrayView& actual) {
  auto expected_type = SchemaToString(expected.type().schema);
  auto actual_type = SchemaToString(actual.type().schema);
  ASSERT_TRUE(expected_type.ok()) << expected_type.status().message();
  ASSERT_TRUE(actual_type.ok()) << actual_type.status().message();
  EXPECT_EQ(*expected_type, *actual_type);
  EXPECT_EQ(expected.length(), actual.length());
  EXPECT_EQ(ToJson(expected), ToJson(actual));
}

std::string SourceDir() { return FERRY_SOURCE_DIR; }

std::string SharedTestDataDir() {
  if (const char* dir = std::getenv("FERRY_SHARED_DIR")) return std::string(dir) + "/testdata";
  return SourceDir() + "/../shared/testdata";
}

std::string ScratchPath(const std::string& name) {
  return ::testing::TempDir() + "/ferry-" + std::to_string(getpid()) + "-" + name;
}

}  // namespace ferry::testing

namespace ferry::testing {

namespace {

void ReleaseSlice(ArrowArray* array) {
  delete static_cast<UniqueArray*>(array->private_data);
  array->release = nullptr;
}

}  // namespace

ArrowArray HandMadeArray(int64_t length, int64_t offset, const void** buffers, int64_t n_buffers,
                         ArrowArray** children, int64_t n_children) {
  ArrowArray a{};
  a.length = length;
  a.offset = offset;
  a.null_count = 0;
  a.n_buffers = n_buffers;
  a.buffers = buffers;
  a.n_children = n_children;
  a.children = children;
  a.release = [](ArrowArray* self) { self->release = nullptr; };
  return a;
}

DenseUnionPastItsChild::DenseUnionPastItsChild()
    : schema(Field::Make("+ud:0", "x", {Field::Make("i", "a")}).Export().ValueOrDie()),
      child(HandMadeArray(2, 0, child_buffers, 2)),
      array(HandMadeArray(2, 0, buffers, 2, children, 1)) {}

UniqueArray SliceArray(UniqueArray parent, int64_t offset, int64_t length) {
  auto* owner = new UniqueArray(std::move(parent));
  ArrowArray slice = *owner->get();
  slice.offset = owner->get()->offset + offset;
  slice.length = length;
  slice.null_count = -1;  // unknown for the slice
  slice.private_data = owner;
  slice.release = &ReleaseSlice;
  return UniqueArray(&slice);
}

Result<Array> SlicedArrayFromJson(const Field& field, const std::string& json, int64_t offset,
                                  int64_t length) {
  FERRY_ASSIGN_OR_RAISE(UniqueSchema schema, field.Export());
  FERRY_ASSIGN_OR_RAISE(UniqueArray array, ::ferry::ArrayFromJson(schema.get(), json));
  return Array::Import(std::move(schema), SliceArray(std::move(array), offset, length));
}

}  // namespace ferry::testing

namespace ferry::testing {

std::map<int, std::string> ThreadNames() {
  // The kernel flag of a task in do_exit: set before the thread's joiner is woken, so a thread
  // that was joined but is not reaped yet (still listed, for a moment or longer on a loaded
  // machine) is left out.
  constexpr unsigned long kExiting = 0x4;  // PF_EXITING
  std::map<int, std::string> names;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    // stat: "tid (name) state ppid pgrp session tty_nr tpgid flags ..."; the name may hold
    // spaces and parentheses, so it ends at the last ')'.
    std::ifstream in(task.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;  // gone meanwhile
    const size_t open = stat.find('(');
    const size_t close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string skipped;  // state, ppid, pgrp, session, tty_nr, tpgid
    for (int i = 0; i < 6; ++i) rest >> skipped;
    unsigned long flags = 0;
    if (!(rest >> flags) || (flags & kExiting) != 0) continue;
    names[std::stoi(task.path().filename().string())] = stat.substr(open + 1, close - open - 1);
  }
  return names;
}

std::set<int> ThreadIdsNamed(const std::string& name) {
  std::set<int> out;
  for (const auto& [tid, named] : ThreadNames()) {
    if (named == name) out.insert(tid);
  }
  return out;
}

std::set<int> ThreadsAlive(const std::set<int>& tids) {
  std::set<int> out;
  const std::map<int, std::string> now = ThreadNames();
  for (int tid : tids) {
    if (now.count(tid) != 0) out.insert(tid);
  }
  return out;
}

MapsEntry MapsEntryOf(const void* address) {
  std::ifstream maps("/proc/self/maps");
  const auto at = reinterpret_cast<uintptr_t>(address);
  for (std::string line; std::getline(maps, line);) {
    unsigned long lo = 0;
    unsigned long hi = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %4s", &lo, &hi, perms) != 3 || at < lo || at >= hi) {
      continue;
    }
    const size_t slash = line.find('/');
    return {perms, slash == std::string::npos ? "" : line.substr(slash)};
  }
  return {};
}

}  // namespace ferry::testing
