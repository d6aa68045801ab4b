// Schemas to their flatbuffer form, with dictionary ids assigned in pre-order.
#include <string>
#include <utility>
#include <vector>

#include "ferry/format/schema_view.hpp"
#include "ipc/schema_flatbuffer.hpp"

namespace ferry::ipc::internal {

namespace {

using Builder = flatbuffers::FlatBufferBuilder;
template <typename T>
using Off = flatbuffers::Offset<T>;

fb::TimeUnit ToUnit(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kSecond:
      return fb::TimeUnit::SECOND;
    case TimeUnit::kMilli:
      return fb::TimeUnit::MILLISECOND;
    case TimeUnit::kMicro:
      return fb::TimeUnit::MICROSECOND;
    case TimeUnit::kNano:
      return fb::TimeUnit::NANOSECOND;
  }
  return fb::TimeUnit::SECOND;
}

Result<Off<fb::Int>> IntOf(Builder& b, TypeId id) {
  switch (id) {
    case TypeId::kInt8:
      return fb::CreateInt(b, 8, true);
    case TypeId::kUInt8:
      return fb::CreateInt(b, 8, false);
    case TypeId::kInt16:
      return fb::CreateInt(b, 16, true);
    case TypeId::kUInt16:
      return fb::CreateInt(b, 16, false);
    case TypeId::kInt32:
      return fb::CreateInt(b, 32, true);
    case TypeId::kUInt32:
      return fb::CreateInt(b, 32, false);
    case TypeId::kInt64:
      return fb::CreateInt(b, 64, true);
    case TypeId::kUInt64:
      return fb::CreateInt(b, 64, false);
    default:
      return Status::Invalid(std::string("dictionary indices must be integers, not ") +
                             TypeIdName(id));
  }
}

Result<std::pair<fb::Type, Off<void>>> TypeOf(Builder& b, const SchemaView& v) {
  using T = fb::Type;
  auto done = [](T t, auto off) { return std::make_pair(t, off.Union()); };
  switch (v.storage_type) {
    case TypeId::kNull:
      return done(T::Null, fb::CreateNull(b));
    case TypeId::kBool:
      return done(T::Bool, fb::CreateBool(b));
    case TypeId::kInt8:
    case TypeId::kUInt8:
    case TypeId::kInt16:
    case TypeId::kUInt16:
    case TypeId::kInt32:
    case TypeId::kUInt32:
    case TypeId::kInt64:
    case TypeId::kUInt64: {
      FERRY_ASSIGN_OR_RAISE(auto off, IntOf(b, v.storage_type));
      return done(T::Int, off);
    }
    case TypeId::kHalfFloat:
      return done(T::FloatingPoint, fb::CreateFloatingPoint(b, fb::Precision::HALF));
    case TypeId::kFloat:
      return done(T::FloatingPoint, fb::CreateFloatingPoint(b, fb::Precision::SINGLE));
    case TypeId::kDouble:
      return done(T::FloatingPoint, fb::CreateFloatingPoint(b, fb::Precision::DOUBLE));
    case TypeId::kDecimal32:
    case TypeId::kDecimal64:
    case TypeId::kDecimal128:
    case TypeId::kDecimal256:
      return done(T::Decimal,
                  fb::CreateDecimal(b, v.decimal_precision, v.decimal_scale, v.decimal_bitwidth));
    case TypeId::kFixedSizeBinary:
      return done(T::FixedSizeBinary, fb::CreateFixedSizeBinary(b, v.fixed_size));
    case TypeId::kBinary:
      return done(T::Binary, fb::CreateBinary(b));
    case TypeId::kLargeBinary:
      return done(T::LargeBinary, fb::CreateLargeBinary(b));
    case TypeId::kString:
      return done(T::Utf8, fb::CreateUtf8(b));
    case TypeId::kLargeString:
      return done(T::LargeUtf8, fb::CreateLargeUtf8(b));
    case TypeId::kBinaryView:
      return done(T::BinaryView, fb::CreateBinaryView(b));
    case TypeId::kStringView:
      return done(T::Utf8View, fb::CreateUtf8View(b));
    case TypeId::kDate32:
      return done(T::Date, fb::CreateDate(b, fb::DateUnit::DAY));
    case TypeId::kDate64:
      return done(T::Date, fb::CreateDate(b, fb::DateUnit::MILLISECOND));
    case TypeId::kTime32:
      return done(T::Time, fb::CreateTime(b, ToUnit(v.time_unit), 32));
    case TypeId::kTime64:
      return done(T::Time, fb::CreateTime(b, ToUnit(v.time_unit), 64));
    case TypeId::kTimestamp: {
      Off<flatbuffers::String> tz;
      if (!v.timezone.empty()) tz = b.CreateString(v.timezone.data(), v.timezone.size());
      return done(T::Timestamp, fb::CreateTimestamp(b, ToUnit(v.time_unit), tz));
    }
    case TypeId::kDuration:
      return done(T::Duration, fb::CreateDuration(b, ToUnit(v.time_unit)));
    case TypeId::kIntervalMonths:
      return done(T::Interval, fb::CreateInterval(b, fb::IntervalUnit::YEAR_MONTH));
    case TypeId::kIntervalDayTime:
      return done(T::Interval, fb::CreateInterval(b, fb::IntervalUnit::DAY_TIME));
    case TypeId::kIntervalMonthDayNano:
      return done(T::Interval, fb::CreateInterval(b, fb::IntervalUnit::MONTH_DAY_NANO));
    case TypeId::kList:
      return done(T::List, fb::CreateList(b));
    case TypeId::kLargeList:
      return done(T::LargeList, fb::CreateLargeList(b));
    case TypeId::kListView:
      return done(T::ListView, fb::CreateListView(b));
    case TypeId::kLargeListView:
      return done(T::LargeListView, fb::CreateLargeListView(b));
    case TypeId::kFixedSizeList:
      return done(T::FixedSizeList, fb::CreateFixedSizeList(b, v.fixed_size));
    case TypeId::kStruct:
      return done(T::Struct_, fb::CreateStruct_(b));
    case TypeId::kMap:
      return done(T::Map, fb::CreateMap(b, v.map_keys_sorted));
    case TypeId::kRunEndEncoded:
      return done(T::RunEndEncoded, fb::CreateRunEndEncoded(b));
    case TypeId::kSparseUnion:
    case TypeId::kDenseUnion: {
      std::vector<int32_t> ids(v.union_type_ids.begin(), v.union_type_ids.end());
      auto ids_off = b.CreateVector(ids);
      return done(T::Union,
                  fb::CreateUnion(b,
                                  v.storage_type == TypeId::kSparseUnion ? fb::UnionMode::Sparse
                                                                         : fb::UnionMode::Dense,
                                  ids_off));
    }
    default:
      return Status::NotSupported(std::string("IPC cannot write type ") +
                                  TypeIdName(v.storage_type));
  }
}

Result<Off<flatbuffers::Vector<Off<fb::KeyValue>>>> MetadataOf(Builder& b, const char* metadata) {
  FERRY_ASSIGN_OR_RAISE(MetadataView pairs, DecodeMetadata(metadata));
  if (pairs.empty()) return Off<flatbuffers::Vector<Off<fb::KeyValue>>>();
  std::vector<Off<fb::KeyValue>> kvs;
  for (const auto& [k, val] : pairs) {
    auto ko = b.CreateString(k.data(), k.size());
    auto vo = b.CreateString(val.data(), val.size());
    kvs.push_back(fb::CreateKeyValue(b, ko, vo));
  }
  return b.CreateVector(kvs);
}

Result<Off<fb::Field>> FieldTo(Builder& b, const ArrowSchema* s, int depth,
                               std::vector<int64_t>* ids) {
  if (depth > kMaxDepth) return Status::Invalid("schema nesting is deeper than 64");
  FERRY_ASSIGN_OR_RAISE(SchemaView v, SchemaView::Make(s));
  // A dictionary node is written as its value type; its id is taken before the values' own.
  const ArrowSchema* type_node = s;
  int64_t dict_id = -1;
  if (s->dictionary != nullptr) {
    dict_id = static_cast<int64_t>(ids->size());
    ids->push_back(dict_id);
    type_node = s->dictionary;
  }
  FERRY_ASSIGN_OR_RAISE(SchemaView tv, SchemaView::Make(type_node));
  std::vector<Off<fb::Field>> children;
  for (int64_t i = 0; i < type_node->n_children; ++i) {
    FERRY_ASSIGN_OR_RAISE(auto child, FieldTo(b, type_node->children[i], depth + 1, ids));
    children.push_back(child);
  }
  FERRY_ASSIGN_OR_RAISE(auto type, TypeOf(b, tv));
  Off<fb::DictionaryEncoding> dict;
  if (dict_id >= 0) {
    FERRY_ASSIGN_OR_RAISE(auto index, IntOf(b, v.storage_type));
    dict = fb::CreateDictionaryEncoding(b, dict_id, index, v.dictionary_ordered);
  }
  FERRY_ASSIGN_OR_RAISE(auto metadata, MetadataOf(b, s->metadata));
  auto name = b.CreateString(s->name ? s->name : "");
  auto children_off = b.CreateVector(children);
  return fb::CreateField(b, name, (s->flags & ARROW_FLAG_NULLABLE) != 0, type.first, type.second,
                         dict, children_off, metadata);
}

}  // namespace

Result<flatbuffers::Offset<fb::Schema>> SchemaToFlatbuffer(flatbuffers::FlatBufferBuilder& b,
                                                           const ArrowSchema* root,
                                                           std::vector<int64_t>* ids,
                                                           bool big_endian) {
  if (root == nullptr || root->release == nullptr) {
    return Status::Invalid("schema is NULL or released");
  }
  FERRY_ASSIGN_OR_RAISE(SchemaView v, SchemaView::Make(root));
  if (v.type != TypeId::kStruct) {
    return Status::Invalid("an IPC schema must be a struct (one child per column), not " +
                           std::string(TypeIdName(v.type)));
  }
  std::vector<Off<fb::Field>> fields;
  for (int64_t i = 0; i < root->n_children; ++i) {
    FERRY_ASSIGN_OR_RAISE(auto f, FieldTo(b, root->children[i], 1, ids));
    fields.push_back(f);
  }
  auto fields_off = b.CreateVector(fields);
  FERRY_ASSIGN_OR_RAISE(auto metadata, MetadataOf(b, root->metadata));
  const auto endianness = big_endian ? fb::Endianness::Big : fb::Endianness::Little;
  return fb::CreateSchema(b, endianness, fields_off, metadata);
}

}  // namespace ferry::ipc::internal
