// Field export/import, metadata encoding, and SchemaEquals against hand-stated expectations.
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

// SchemaEquals(a, b) with and without metadata, for two trees built from Fields.
struct Verdict {
  bool ignoring_metadata;
  bool with_metadata;
};

Verdict Compare(const Field& a, const Field& b) {
  Result<UniqueSchema> ea = a.Export();
  Result<UniqueSchema> eb = b.Export();
  EXPECT_TRUE(ea.ok() && eb.ok());
  if (!ea.ok() || !eb.ok()) return {false, false};
  Result<bool> loose = SchemaEquals(ea->get(), eb->get());
  Result<bool> strict = SchemaEquals(ea->get(), eb->get(), /*check_metadata=*/true);
  // Equality is symmetric.
  Result<bool> loose_back = SchemaEquals(eb->get(), ea->get());
  EXPECT_TRUE(loose.ok() && strict.ok() && loose_back.ok());
  if (!loose.ok() || !strict.ok() || !loose_back.ok()) return {false, false};
  EXPECT_EQ(*loose, *loose_back);
  return {*loose, *strict};
}

Field Batch(std::vector<Field> columns) {
  return Field::Make("+s", "", std::move(columns)).WithFlags(0);
}

TEST(SchemaEquals, EqualTreesAreEqualAndTheFormatIsComparedParsed) {
  Field a = Batch({Field::Make("i", "x"), Field::Make("d:10,2", "price"),
                   Field::Make("+l", "xs", {Field::Make("u", "item")})});
  Field b = Batch({Field::Make("i", "x"), Field::Make("d:10,2,128", "price"),
                   Field::Make("+l", "xs", {Field::Make("u", "item")})});
  EXPECT_TRUE(Compare(a, a).ignoring_metadata);
  EXPECT_TRUE(Compare(a, a).with_metadata);
  // "d:10,2" is "d:10,2,128": the same decimal in two spellings.
  EXPECT_TRUE(Compare(a, b).with_metadata);
  EXPECT_FALSE(Compare(Field::Make("d:10,2", "p"), Field::Make("d:10,3", "p")).ignoring_metadata);
  EXPECT_FALSE(
      Compare(Field::Make("d:10,2", "p"), Field::Make("d:10,2,256", "p")).ignoring_metadata);
  EXPECT_FALSE(Compare(Field::Make("i", "x"), Field::Make("l", "x")).ignoring_metadata);
  EXPECT_FALSE(Compare(Field::Make("w:4", "x"), Field::Make("w:8", "x")).ignoring_metadata);
}

TEST(SchemaEquals, TimeUnitsAndZonesCountAsWritten) {
  EXPECT_FALSE(Compare(Field::Make("tsu:UTC", "t"), Field::Make("tsn:UTC", "t")).ignoring_metadata);
  // Arrow compares time zones as strings: "UTC" and "+00:00" are two types.
  EXPECT_FALSE(
      Compare(Field::Make("tsu:UTC", "t"), Field::Make("tsu:+00:00", "t")).ignoring_metadata);
  EXPECT_FALSE(Compare(Field::Make("tsu:", "t"), Field::Make("tsu:UTC", "t")).ignoring_metadata);
  EXPECT_TRUE(Compare(Field::Make("tsu:UTC", "t"), Field::Make("tsu:UTC", "t")).ignoring_metadata);
  EXPECT_FALSE(Compare(Field::Make("tts", "t"), Field::Make("ttm", "t")).ignoring_metadata);
}

TEST(SchemaEquals, NamesAndNullabilityOfFieldsCount) {
  EXPECT_FALSE(
      Compare(Batch({Field::Make("i", "x")}), Batch({Field::Make("i", "y")})).ignoring_metadata);
  EXPECT_FALSE(Compare(Batch({Field::Make("i", "x")}), Batch({Field::Make("i", "x").WithFlags(0)}))
                   .ignoring_metadata);
  Field s1 = Field::Make("+s", "s", {Field::Make("i", "a"), Field::Make("u", "b")});
  Field s2 = Field::Make("+s", "s", {Field::Make("i", "a"), Field::Make("u", "c")});
  EXPECT_FALSE(Compare(s1, s2).ignoring_metadata);
  EXPECT_FALSE(
      Compare(Batch({Field::Make("i", "x")}), Batch({Field::Make("i", "x"), Field::Make("i", "y")}))
          .ignoring_metadata);
  // The order of columns is part of the schema.
  EXPECT_FALSE(Compare(Batch({Field::Make("i", "x"), Field::Make("u", "y")}),
                       Batch({Field::Make("u", "y"), Field::Make("i", "x")}))
                   .ignoring_metadata);
  Field u1 = Field::Make("+us:0,1", "u", {Field::Make("i", "a"), Field::Make("u", "b")});
  Field u2 = Field::Make("+us:0,2", "u", {Field::Make("i", "a"), Field::Make("u", "b")});
  EXPECT_FALSE(Compare(u1, u2).ignoring_metadata);
  Field u3 = Field::Make("+ud:0,1", "u", {Field::Make("i", "a"), Field::Make("u", "b")});
  EXPECT_FALSE(Compare(u1, u3).ignoring_metadata);
}

TEST(SchemaEquals, NamesFixedByConventionCountOnlyWithTheMetadata) {
  // A list's child is "item" in Arrow C++, "element" in Parquet: one type, as Arrow decides it
  // unless the metadata is compared too.
  Field item = Field::Make("+l", "xs", {Field::Make("i", "item")});
  Field element = Field::Make("+l", "xs", {Field::Make("i", "element")});
  EXPECT_TRUE(Compare(item, element).ignoring_metadata);
  EXPECT_FALSE(Compare(item, element).with_metadata);
  EXPECT_TRUE(Compare(Field::Make("+w:2", "xs", {Field::Make("i", "a")}),
                      Field::Make("+w:2", "xs", {Field::Make("i", "b")}))
                  .ignoring_metadata);
  EXPECT_TRUE(Compare(Field::Make("+vl", "xs", {Field::Make("i", "a")}),
                      Field::Make("+vl", "xs", {Field::Make("i", "b")}))
                  .ignoring_metadata);
  EXPECT_TRUE(Compare(item, item).with_metadata);
  // Its nullability counts either way.
  Field strict_item = Field::Make("+l", "xs", {Field::Make("i", "item").WithFlags(0)});
  EXPECT_FALSE(Compare(item, strict_item).ignoring_metadata);
  // So with a map's entries, key and value names; its keys_sorted flag counts either way.
  auto map = [](const char* entries, const char* key, const char* value, int64_t flags) {
    Field m = Field::Make(
        "+m", "m",
        {Field::Make("+s", entries, {Field::Make("u", key).WithFlags(0), Field::Make("i", value)})
             .WithFlags(0)});
    m.flags = flags;
    return m;
  };
  EXPECT_TRUE(Compare(map("entries", "key", "value", ARROW_FLAG_NULLABLE),
                      map("key_value", "k", "v", ARROW_FLAG_NULLABLE))
                  .ignoring_metadata);
  EXPECT_FALSE(Compare(map("entries", "key", "value", ARROW_FLAG_NULLABLE),
                       map("entries", "k", "value", ARROW_FLAG_NULLABLE))
                   .with_metadata);
  EXPECT_FALSE(
      Compare(map("entries", "key", "value", ARROW_FLAG_NULLABLE),
              map("entries", "key", "value", ARROW_FLAG_NULLABLE | ARROW_FLAG_MAP_KEYS_SORTED))
          .ignoring_metadata);
}

TEST(SchemaEquals, DictionariesCompareIndexValuesAndOrder) {
  Field d = Field::Dictionary("d", "c", Field::Make("u", ""));
  EXPECT_TRUE(Compare(d, Field::Dictionary("d", "c", Field::Make("u", "values"))).with_metadata);
  EXPECT_FALSE(Compare(d, Field::Dictionary("d", "s", Field::Make("u", ""))).ignoring_metadata);
  EXPECT_FALSE(Compare(d, Field::Dictionary("d", "c", Field::Make("U", ""))).ignoring_metadata);
  EXPECT_FALSE(
      Compare(d, Field::Dictionary("d", "c", Field::Make("u", ""), true)).ignoring_metadata);
  // A dictionary of strings is not the strings, though its index type is their format's int8.
  EXPECT_FALSE(Compare(d, Field::Make("c", "d")).ignoring_metadata);
  EXPECT_FALSE(Compare(d, Field::Make("u", "d")).ignoring_metadata);
}

TEST(SchemaEquals, MetadataCountsOnlyWhenAskedInAnyOrderAtAnyDepth) {
  Field plain = Batch({Field::Make("i", "x")});
  Field tagged = plain;
  tagged.metadata = {{"origin", "a"}, {"owner", "b"}};
  Field reordered = plain;
  reordered.metadata = {{"owner", "b"}, {"origin", "a"}};
  Field other = plain;
  other.metadata = {{"origin", "a"}, {"owner", "c"}};
  EXPECT_TRUE(Compare(plain, tagged).ignoring_metadata);
  EXPECT_FALSE(Compare(plain, tagged).with_metadata);
  EXPECT_TRUE(Compare(tagged, reordered).with_metadata);
  EXPECT_FALSE(Compare(tagged, other).with_metadata);
  Field deep = Batch({Field::Make("+l", "xs", {Field::Make("i", "item")})});
  Field deep_tagged = deep;
  deep_tagged.children[0].children[0].metadata = {{"k", "v"}};
  EXPECT_TRUE(Compare(deep, deep_tagged).ignoring_metadata);
  EXPECT_FALSE(Compare(deep, deep_tagged).with_metadata);
}

TEST(SchemaEquals, ExtensionTypesCountWithoutMetadata) {
  Field storage = Field::Make("w:16", "id");
  Field uuid = Field::Extension("id", "arrow.uuid", "", storage);
  // The extension name and its serialized metadata are the type, not notes about it.
  EXPECT_FALSE(Compare(uuid, storage).ignoring_metadata);
  EXPECT_FALSE(Compare(uuid, Field::Extension("id", "other.uuid", "", storage)).ignoring_metadata);
  EXPECT_FALSE(
      Compare(uuid, Field::Extension("id", "arrow.uuid", "v2", storage)).ignoring_metadata);
  Field noted = uuid;
  noted.metadata.emplace_back("note", "x");
  EXPECT_TRUE(Compare(uuid, noted).ignoring_metadata);
  EXPECT_FALSE(Compare(uuid, noted).with_metadata);
}

TEST(SchemaEquals, MalformedTreesAreErrors) {
  ASSERT_OK_AND_ASSIGN(UniqueSchema good, Field::Make("i", "x").Export());
  ASSERT_OK_AND_ASSIGN(UniqueSchema bad, Field::Make("i", "x").Export());
  bad->format = "zz";
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "zz", SchemaEquals(good.get(), bad.get()));
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "NULL", SchemaEquals(good.get(), nullptr));
  ArrowSchema released{};
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "released", SchemaEquals(&released, good.get()));
}

}  // namespace
}  // namespace ferry
