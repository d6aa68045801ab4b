// Field export/import and metadata encoding.
#include "ferry/format/schema.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "ferry/format/metadata.hpp"
#include "support/test_util.hpp"

namespace ferry {
namespace {

TEST(Metadata, EncodesTheCDataLayout) {
  std::string bytes = EncodeMetadata({{"k", "vv"}, {"", ""}});
  // int32 count, then int32 length + bytes for each key and value (little-endian here).
  const char expected[] = {2, 0,   0,   0, 1, 0, 0, 0, 'k', 2, 0, 0,
                           0, 'v', 'v', 0, 0, 0, 0, 0, 0,   0, 0};
  ASSERT_EQ(bytes.size(), sizeof(expected));
  EXPECT_EQ(std::memcmp(bytes.data(), expected, sizeof(expected)), 0);
  ASSERT_OK_AND_ASSIGN(MetadataView pairs, DecodeMetadata(bytes.data()));
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].first, "k");
  EXPECT_EQ(pairs[0].second, "vv");
  EXPECT_EQ(pairs[1].first, "");
  ASSERT_OK_AND_ASSIGN(auto value, MetadataGet(bytes.data(), "k"));
  EXPECT_EQ(value, std::optional<std::string_view>("vv"));
  ASSERT_OK_AND_ASSIGN(auto missing, MetadataGet(bytes.data(), "nope"));
  EXPECT_FALSE(missing.has_value());
}

TEST(Metadata, RejectsNegativeLengths) {
  const char bad[] = {1, 0, 0, 0, -1, -1, -1, -1};
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "negative key length", DecodeMetadata(bad));
  ASSERT_OK_AND_ASSIGN(MetadataView none, DecodeMetadata(nullptr));
  EXPECT_TRUE(none.empty());
}

TEST(Field, ExportImportRoundTrip) {
  Field f = Field::Make("+s", "root",
                        {Field::Make("i", "a").WithFlags(0),
                         Field::Dictionary("d", "i", Field::Make("u", "values"), true)});
  f.metadata = {{"origin", "test"}};
  ASSERT_OK_AND_ASSIGN(UniqueSchema schema, f.Export());
  EXPECT_STREQ(schema->format, "+s");
  EXPECT_EQ(schema->n_children, 2);
  EXPECT_EQ(schema->children[0]->flags, 0);
  ASSERT_NE(schema->children[1]->dictionary, nullptr);
  EXPECT_EQ(schema->children[1]->flags & ARROW_FLAG_DICTIONARY_ORDERED,
            ARROW_FLAG_DICTIONARY_ORDERED);
  ASSERT_OK_AND_ASSIGN(Field back, Field::Import(schema.get()));
  EXPECT_EQ(back.name, "root");
  EXPECT_EQ(back.metadata, f.metadata);
  ASSERT_EQ(back.children.size(), 2u);
  EXPECT_EQ(back.children[1].dictionary->format, "u");
  ASSERT_OK_AND_ASSIGN(UniqueSchema copy, CopySchema(schema.get()));
  ASSERT_OK_AND_ASSIGN(std::string a, SchemaToString(schema.get()));
  ASSERT_OK_AND_ASSIGN(std::string b, SchemaToString(copy.get()));
  EXPECT_EQ(a, b);
}

TEST(Field, ReleaseRunsOnceAndMovedChildrenAreSkipped) {
  ASSERT_OK_AND_ASSIGN(
      UniqueSchema schema,
      Field::Make("+s", "r", {Field::Make("i", "a"), Field::Make("u", "b")}).Export());
  // A consumer may move a child out; the parent's release must then leave it alone.
  ArrowSchema moved = *schema->children[0];
  schema->children[0]->release = nullptr;
  schema.reset();
  EXPECT_NE(moved.release, nullptr);
  moved.release(&moved);
  EXPECT_EQ(moved.release, nullptr);
}

}  // namespace
}  // namespace ferry
