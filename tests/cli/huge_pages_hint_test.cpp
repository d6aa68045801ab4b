// SharedHugePagesHint (tools/ferry/huge_pages_hint.hpp): the hint `ferry serve --keep` tells at
// start, read from a file written as the kernel writes its shmem_enabled setting.
#include "tools/ferry/huge_pages_hint.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "support/test_util.hpp"

namespace ferry {
namespace {

using ::testing::HasSubstr;

std::string HintFor(const std::string& setting) {
  const std::string path = testing::ScratchPath("shmem_enabled");
  std::ofstream(path) << setting << "\n";
  return cli::SharedHugePagesHint(path);
}

TEST(SharedHugePagesHint, NamesTheSettingWhereSharedMemoryGetsNoHugePages) {
  for (const char* chosen : {"never", "deny"}) {
    std::string setting = "always within_size advise never deny force";
    setting.replace(setting.find(chosen), std::string(chosen).size(),
                    "[" + std::string(chosen) + "]");
    const std::string hint = HintFor(setting);
    EXPECT_THAT(hint, HasSubstr(std::string("is ") + chosen)) << setting;
    EXPECT_THAT(hint, HasSubstr("with advise")) << setting;
    EXPECT_THAT(hint, HasSubstr("docs/dipc.md")) << setting;
  }
}

TEST(SharedHugePagesHint, SaysNothingWhereTheyAreGivenOrTheSettingIsUnknown) {
  EXPECT_EQ(HintFor("always within_size [advise] never deny force"), "");
  EXPECT_EQ(HintFor("[always] within_size advise never deny force"), "");
  EXPECT_EQ(HintFor("always [within_size] advise never deny force"), "");
  EXPECT_EQ(HintFor("always within_size advise never deny [force]"), "");
  EXPECT_EQ(HintFor("nothing chosen"), "");
  EXPECT_EQ(cli::SharedHugePagesHint(testing::ScratchPath("no-such-setting")), "");
}

}  // namespace
}  // namespace ferry
