// Memory views of Arrow arrays.
#include "ferry/memview/arrow.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <nlohmann/json.hpp>
#include <numeric>

#include "ferry/core/keep_alive.hpp"
#include "ferry/device/device.hpp"
#include "ferry/format/schema.hpp"
#include "memview/arrow_export.hpp"

namespace ferry::memview {

Result<std::string> ItemFormatOf(const SchemaView& type) {
  switch (type.storage_type) {
    case TypeId::kInt8:
      return std::string("c");
    case TypeId::kUInt8:
      return std::string("C");
    case TypeId::kInt16:
      return std::string("s");
    case TypeId::kUInt16:
      return std::string("S");
    case TypeId::kInt32:
    case TypeId::kDate32:
    case TypeId::kTime32:
    case TypeId::kIntervalMonths:
    case TypeId::kDecimal32:
      return std::string("l");
    case TypeId::kUInt32:
      return std::string("L");
    case TypeId::kInt64:
    case TypeId::kDate64:
    case TypeId::kTime64:
    case TypeId::kTimestamp:
    case TypeId::kDuration:
    case TypeId::kDecimal64:
      return std::string("q");
    case TypeId::kUInt64:
      return std::string("Q");
    case TypeId::kFloat:
      return std::string("f");
    case TypeId::kDouble:
      return std::string("d");
    case TypeId::kIntervalDayTime:
      return std::string("l2");
    case TypeId::kIntervalMonthDayNano:
      return std::string("l2q");
    case TypeId::kDecimal128:
      return std::string("q2");
    case TypeId::kDecimal256:
      return std::string("q4");
    case TypeId::kFixedSizeBinary:
      return "C" + std::to_string(type.fixed_size);
    case TypeId::kBool:
      return Status::NotSupported("bool arrays are bit-packed and have no item format");
    case TypeId::kHalfFloat:
      return std::string("{float16}");
    default:
      return Status::NotSupported(std::string(TypeIdName(type.storage_type)) +
                                  " is not a fixed-width type");
  }
}

namespace {

// Refuse an array with nulls: a declared count decides; an unknown one (-1) is counted.
Status CheckNoNullsOnHost(const ArrayView& v, const char* what) {
  int64_t nulls = v.null_count();
  if (nulls < 0) {
    nulls = 0;
    for (int64_t i = 0; i < v.length() && nulls == 0; ++i) nulls += v.IsNull(i) ? 1 : 0;
  }
  if (nulls > 0) {
    return Status::Invalid(std::string("memory view: the ") + what +
                           " has nulls; ask for allow_nulls to export the values anyway");
  }
  return Status::OK();
}

// Parse the arrow.fixed_shape_tensor metadata: shape and optional permutation.
Status ParseTensorMetadata(std::string_view text, std::vector<int64_t>* shape,
                           std::vector<int64_t>* permutation) {
  auto json = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (json.is_discarded() || !json.is_object() || !json.contains("shape") ||
      !json["shape"].is_array()) {
    return Status::Invalid("arrow.fixed_shape_tensor metadata has no \"shape\" array");
  }
  for (const auto& d : json["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) {
      return Status::Invalid(
          "arrow.fixed_shape_tensor shape entries must be non-negative integers");
    }
    shape->push_back(d.get<int64_t>());
  }
  permutation->resize(shape->size());
  std::iota(permutation->begin(), permutation->end(), 0);
  if (json.contains("permutation")) {
    const auto& p = json["permutation"];
    if (!p.is_array() || p.size() != shape->size()) {
      return Status::Invalid("arrow.fixed_shape_tensor permutation must list every dimension");
    }
    std::vector<bool> seen(shape->size(), false);
    for (size_t i = 0; i < p.size(); ++i) {
      if (!p[i].is_number_integer()) return Status::Invalid("permutation entries must be integers");
      const int64_t v = p[i].get<int64_t>();
      if (v < 0 || v >= static_cast<int64_t>(shape->size()) || seen[static_cast<size_t>(v)]) {
        return Status::Invalid("arrow.fixed_shape_tensor permutation is not a permutation");
      }
      seen[static_cast<size_t>(v)] = true;
      (*permutation)[i] = v;
    }
  }
  return Status::OK();
}

}  // namespace

namespace internal {

Result<MemoryView> ViewOfValues(const ArrayView& v, const NullCheck& check_no_nulls) {
  const SchemaView& t = v.type();
  const bool tensor =
      t.type == TypeId::kExtension && t.extension_name == "arrow.fixed_shape_tensor";
  MemoryView view;
  view.readonly = true;
  if (t.storage_type == TypeId::kFixedSizeList) {
    const ArrayView& values = v.child(0);
    FERRY_RETURN_NOT_OK(check_no_nulls(v, "array"));
    FERRY_RETURN_NOT_OK(check_no_nulls(values, "values child"));
    FERRY_ASSIGN_OR_RAISE(view.format, ItemFormatOf(values.type()));
    FERRY_ASSIGN_OR_RAISE(view.item_desc, ParseItemFormat(view.format));
    view.item_size = view.item_desc.item_size;
    const int64_t size = t.fixed_size;
    const int64_t first = values.offset() + v.offset() * size;
    view.data = const_cast<uint8_t*>(values.buffer(1).data) + first * view.item_size;
    std::vector<int64_t> inner = {size};
    std::vector<int64_t> permutation = {0};
    if (tensor) {
      inner.clear();
      FERRY_RETURN_NOT_OK(ParseTensorMetadata(t.extension_metadata, &inner, &permutation));
      int64_t product = 1;
      for (int64_t d : inner) product *= d;
      if (product != size) {
        return Status::Invalid("arrow.fixed_shape_tensor shape has " + std::to_string(product) +
                               " elements but the list size is " + std::to_string(size));
      }
    }
    // Physical (storage) order is row-major over the permuted shape.
    const size_t n = inner.size();
    std::vector<int64_t> physical_shape(n);
    for (size_t i = 0; i < n; ++i) physical_shape[i] = inner[static_cast<size_t>(permutation[i])];
    std::vector<int64_t> physical_strides(n);
    int64_t stride = view.item_size;
    for (size_t k = n; k-- > 0;) {
      physical_strides[k] = stride;
      stride *= physical_shape[k];
    }
    view.ndim = static_cast<int64_t>(n) + 1;
    view.shape = {v.length()};
    view.strides = {stride};
    view.shape.resize(n + 1);
    view.strides.resize(n + 1);
    for (size_t i = 0; i < n; ++i) {
      const auto logical = static_cast<size_t>(permutation[i]);
      view.shape[1 + logical] = inner[logical];
      view.strides[1 + logical] = physical_strides[i];
    }
    view.size = v.length() * stride;
  } else {
    FERRY_RETURN_NOT_OK(check_no_nulls(v, "array"));
    FERRY_ASSIGN_OR_RAISE(view.format, ItemFormatOf(t));
    FERRY_ASSIGN_OR_RAISE(view.item_desc, ParseItemFormat(view.format));
    view.item_size = view.item_desc.item_size;
    view.data = const_cast<uint8_t*>(v.buffer(1).data) + v.offset() * view.item_size;
    view.ndim = 1;
    view.shape = {v.length()};
    view.size = v.length() * view.item_size;
  }
  return view;
}

}  // namespace internal

Result<MemoryView> ViewOfArray(std::shared_ptr<const Array> array, int32_t flags,
                               const ArrowViewOptions& options) {
  if (!array) return Status::Invalid("memory view: array is NULL");
  auto check = [&](const ArrayView& v, const char* what) {
    return options.allow_nulls ? Status::OK() : CheckNoNullsOnHost(v, what);
  };
  FERRY_ASSIGN_OR_RAISE(MemoryView view, internal::ViewOfValues(array->view(), check));
  view.owner = std::move(array);
  FERRY_RETURN_NOT_OK(ConformToRequest(&view, flags));
  return view;
}

void RegisterArrowExporters(ExporterRegistry& registry) {
  Exporter exporter;
  exporter.get = [](const void* object, int32_t flags, MemoryView* out) -> Status {
    const auto& array = *static_cast<const std::shared_ptr<const Array>*>(object);
    FERRY_ASSIGN_OR_RAISE(*out, ViewOfArray(array, flags));
    return Status::OK();
  };
  exporter.available = [](const void* object) {
    const auto& array = *static_cast<const std::shared_ptr<const Array>*>(object);
    return array && ItemFormatOf(array->view().type().storage_type == TypeId::kFixedSizeList
                                     ? array->view().child(0).type()
                                     : array->view().type())
                        .ok();
  };
  registry.Register<std::shared_ptr<const Array>>(std::move(exporter));
}

}  // namespace ferry::memview

namespace ferry::memview {

namespace {

// The Arrow format of a one-member, native-order item.
Result<std::string> ArrowFormatOf(const MemoryView& view) {
  const ItemDesc& desc = view.item_desc;
  if (desc.components.size() != 1 || desc.components[0].repeat != 1 ||
      desc.components[0].size != view.item_size) {
    return Status::NotSupported("an Arrow array needs one scalar per item, not \"" + view.format +
                                "\"");
  }
  const ItemComponent& c = desc.components[0];
  if (c.size > 1 && c.little_endian != (std::endian::native == std::endian::little)) {
    return Status::NotSupported("an Arrow array needs native byte order");
  }
  if (c.low_float == LowFloat::kFloat16) return std::string("e");
  if (c.low_float != LowFloat::kNone) {
    return Status::NotSupported("Arrow has no " + std::string(LowFloatName(c.low_float)) + " type");
  }
  const char kind = ItemKind(c.format);
  if (kind == 'b') {
    return Status::NotSupported(
        "an Arrow boolean array is bit-packed: a view of one-byte booleans has no Arrow type");
  }
  if (kind == 'c') return Status::NotSupported("Arrow has no complex number type");
  if (kind == 'f') return std::string(c.size == 4 ? "f" : "g");
  const bool is_signed = kind == 'i';
  switch (c.size) {
    case 1:
      return std::string(is_signed ? "c" : "C");
    case 2:
      return std::string(is_signed ? "s" : "S");
    case 4:
      return std::string(is_signed ? "i" : "I");
    case 8:
      return std::string(is_signed ? "l" : "L");
    default:
      return Status::NotSupported("no Arrow type for this item");
  }
}

}  // namespace

namespace internal {

Result<ExportedArray> ExportView(const MemoryView& input, const FromViewOptions& options,
                                 bool host_readable) {
  if (!input.sub_offsets.empty())
    return Status::NotSupported("indirect views have no Arrow layout");
  FERRY_ASSIGN_OR_RAISE(std::string value_format, ArrowFormatOf(input));
  MemoryView view = input;
  const int64_t n = view.ndim == 0 ? 1 : view.shape[0];
  const size_t inner_n = view.ndim > 1 ? static_cast<size_t>(view.ndim - 1) : 0;
  int64_t inner_items = 1;
  for (size_t d = 0; d < inner_n; ++d) inner_items *= view.shape[d + 1];

  // Physical order of the inner dimensions: by decreasing stride, the innermost last.
  std::vector<int64_t> order(inner_n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return view.stride(a + 1) > view.stride(b + 1); });
  bool shareable = true;
  if (view.ndim == 1) shareable = view.shape[0] <= 1 || view.stride(0) == view.item_size;
  if (view.ndim > 1) {
    int64_t expected = view.item_size;
    for (size_t k = inner_n; k-- > 0;) {
      const int64_t d = order[k] + 1;
      if (view.shape[static_cast<size_t>(d)] > 1 && view.stride(d) != expected) shareable = false;
      expected *= view.shape[static_cast<size_t>(d)];
    }
    if (n > 1 && view.stride(0) != expected) shareable = false;
  }
  if (view.n_items() == 0) shareable = true;
  std::shared_ptr<const void> keep = view.owner;
  const uint8_t* base = view.data;
  if (!shareable) {
    if (!options.allow_copy) {
      return Status::Invalid(
          "the view's layout cannot be shared by an Arrow array (dimension 0 "
          "must be outermost and the items dense); allow a copy to convert");
    }
    if (!host_readable) {
      return Status::NotSupported(
          std::string("the view's layout cannot be shared by an Arrow array, and making it "
                      "dense would read ") +
          DeviceTypeName(input.device_type) +
          " memory from the host; copy the view's bytes to the CPU first");
    }
    // Copy into row-major order over the logical shape.
    auto copy = std::make_shared<std::vector<uint8_t>>(
        static_cast<size_t>(view.n_items() * view.item_size));
    std::vector<int64_t> idx(static_cast<size_t>(view.ndim), 0);
    for (int64_t item = 0; item < view.n_items(); ++item) {
      std::memcpy(copy->data() + item * view.item_size, GetItemPointer(view, idx.data()),
                  static_cast<size_t>(view.item_size));
      for (int64_t d = view.ndim - 1; d >= 0; --d) {
        if (++idx[static_cast<size_t>(d)] < view.shape[static_cast<size_t>(d)]) break;
        idx[static_cast<size_t>(d)] = 0;
      }
    }
    base = copy->data();
    keep = copy;
    std::iota(order.begin(), order.end(), 0);
  }

  Field field;
  if (view.ndim <= 1) {
    field = Field::Make(value_format, "");
  } else {
    Field storage = Field::Make("+w:" + std::to_string(inner_items), "",
                                {Field::Make(value_format, "item").WithFlags(0)});
    if (view.ndim == 2) {
      field = storage;
    } else {
      std::string shape = "[";
      std::string permutation = "[";
      for (size_t d = 0; d < inner_n; ++d) {
        shape += (d ? ", " : "") + std::to_string(view.shape[d + 1]);
        permutation += (d ? ", " : "") + std::to_string(order[d]);
      }
      field = Field::Extension("", "arrow.fixed_shape_tensor",
                               "{\"shape\": " + shape + "], \"permutation\": " + permutation + "]}",
                               storage);
    }
  }
  FERRY_ASSIGN_OR_RAISE(UniqueSchema schema, field.Export());

  UniqueArray array;
  KeepAlive nodes(std::move(keep));
  const void* values[2] = {nullptr, base};  // no validity: views have no nulls
  if (view.ndim <= 1) {
    nodes.MakeNode(array.get(), n, 0, 0, values, 2, 0);
  } else {
    const KeepAlive::Slots slots = nodes.MakeNode(array.get(), n, 0, 0, values, 1, 1);
    nodes.MakeNode(&slots.children[0], n * inner_items, 0, 0, values, 2, 0);
  }
  return ExportedArray{std::move(schema), std::move(array)};
}

}  // namespace internal

Result<Array> ArrayFromView(const MemoryView& view, const FromViewOptions& options) {
  if (view.device_type != ARROW_DEVICE_CPU) {
    return Status::NotSupported(
        std::string("ArrayFromView builds a CPU array, but the view is on ") +
        DeviceTypeName(view.device_type) + "; use DeviceArrayFromView to keep it there");
  }
  FERRY_ASSIGN_OR_RAISE(internal::ExportedArray out,
                        internal::ExportView(view, options, /*host_readable=*/true));
  return Array::Import(std::move(out.schema), std::move(out.array));
}

}  // namespace ferry::memview
