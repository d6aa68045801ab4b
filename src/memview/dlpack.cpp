// DLPack bridge.
#include "ferry/memview/dlpack.hpp"

#include <algorithm>
#include <bit>
#include <memory>
#include <new>
#include <optional>
#include <string>

#include "memview/host_endian.hpp"

namespace ferry::memview {

namespace {

// What an exported tensor keeps: the view's owners and its shape and strides (in items), inline
// up to kInlineDims dimensions, so that a tensor of up to 4 dimensions is one allocation with
// the managed tensor itself (ExportBlock).
struct ExportContext {
  static constexpr int64_t kInlineDims = 4;
  std::shared_ptr<const void> owner;
  std::shared_ptr<void> private_data;
  std::shared_ptr<void> export_token;
  int64_t dims[2 * kInlineDims] = {};  // shape, then strides
  std::vector<int64_t> spill;          // the same, beyond kInlineDims dimensions

  int64_t* Dims(int64_t ndim) {
    if (ndim <= kInlineDims) return dims;
    spill.resize(static_cast<size_t>(2 * ndim));
    return spill.data();
  }
};

// An exported tensor and what it keeps, freed together by the tensor's deleter.
template <typename Managed>
struct ExportBlock {
  // Zeroed here, device included (0 is no DLDeviceType), and filled in before it is handed out.
  Managed tensor{};  // NOLINT(bugprone-invalid-enum-default-initialization)
  ExportContext ctx;
};

// DLPack's code for each low-precision float (LowFloat's order, kNone first).
constexpr uint8_t kLowFloatCodes[] = {0,
                                      kDLFloat8_e3m4,
                                      kDLFloat8_e4m3,
                                      kDLFloat8_e4m3b11fnuz,
                                      kDLFloat8_e4m3fn,
                                      kDLFloat8_e4m3fnuz,
                                      kDLFloat8_e5m2,
                                      kDLFloat8_e5m2fnuz,
                                      kDLFloat8_e8m0fnu,
                                      kDLFloat6_e2m3fn,
                                      kDLFloat6_e3m2fn,
                                      kDLFloat4_e2m1fn,
                                      kDLFloat4_e2m1fn,
                                      kDLFloat,
                                      kDLBfloat};

// The dtype of a low-precision float member; fp6 and fp4 alone in a byte need the versioned
// tensor's padded flag, which `flags` (NULL for the legacy struct) receives.
Status LowFloatDtype(LowFloat type, DLDataType* dtype, uint64_t* flags) {
  dtype->code = kLowFloatCodes[static_cast<size_t>(type)];
  dtype->bits = static_cast<uint8_t>(LowFloatBits(type));
  dtype->lanes = static_cast<uint16_t>(LowFloatValuesPerByte(type));
  if (dtype->bits * dtype->lanes % 8 == 0) return Status::OK();  // whole bytes: no padding
  if (flags == nullptr) {
    return Status::NotSupported("DLPack: the legacy DLManagedTensor cannot mark " +
                                std::string(LowFloatName(type)) +
                                " as padded (one value a byte); use the versioned tensor");
  }
  *flags |= DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;
  return Status::OK();
}

Status FillTensor(const MemoryView& view, ExportContext* ctx, DLTensor* t, uint64_t* flags) {
  const ItemDesc& desc = view.item_desc;
  if (desc.components.size() != 1 || desc.components[0].repeat != 1 ||
      desc.components[0].size != view.item_size) {
    return Status::NotSupported("DLPack: the item must be one scalar, not \"" + view.format + "\"");
  }
  const ItemComponent& c = desc.components[0];
  if (c.size > 1 && c.little_endian != internal::kHostLittle) {
    return Status::NotSupported("DLPack: data must be in native byte order");
  }
  if (c.low_float != LowFloat::kNone) {
    FERRY_RETURN_NOT_OK(LowFloatDtype(c.low_float, &t->dtype, flags));
  } else {
    const char kind = ItemKind(c.format);
    t->dtype.code = kind == 'f'   ? kDLFloat
                    : kind == 'i' ? kDLInt
                    : kind == 'b' ? kDLBool
                    : kind == 'c' ? kDLComplex
                                  : kDLUInt;
    t->dtype.bits = static_cast<uint8_t>(c.size * 8);
    t->dtype.lanes = 1;
  }
  int64_t* shape = ctx->Dims(view.ndim);
  int64_t* strides = shape + std::max<int64_t>(view.ndim, ExportContext::kInlineDims);
  for (int64_t d = 0; d < view.ndim; ++d) {
    shape[d] = view.shape[static_cast<size_t>(d)];
    const int64_t bytes = view.stride(d);
    if (bytes % view.item_size != 0) {
      return Status::Invalid("DLPack: stride " + std::to_string(bytes) + " of dimension " +
                             std::to_string(d) + " is not a multiple of the item size " +
                             std::to_string(view.item_size));
    }
    strides[d] = bytes / view.item_size;
  }
  if (!view.sub_offsets.empty())
    return Status::NotSupported("DLPack cannot express indirect views");
  ctx->owner = view.owner;
  ctx->private_data = view.private_data;
  ctx->export_token = view.export_token;
  t->data = view.data;
  t->device.device_type = static_cast<DLDeviceType>(view.device_type);
  t->device.device_id =
      static_cast<int32_t>(view.device_type == ARROW_DEVICE_CPU ? 0 : view.device_id);
  t->ndim = static_cast<int32_t>(view.ndim);
  t->shape = view.ndim == 0 ? nullptr : shape;
  t->strides = view.ndim == 0 ? nullptr : strides;
  t->byte_offset = 0;
  return Status::OK();
}

// The item format of a low-precision float dtype (codes 7-17), or an error saying why it has none.
Result<std::string> LowFloatFormat(const DLDataType& dtype, bool padded) {
  LowFloat type = LowFloat::kNone;
  for (size_t i = 1; i < sizeof(kLowFloatCodes); ++i) {
    if (kLowFloatCodes[i] == dtype.code) {
      type = static_cast<LowFloat>(i);
      break;
    }
  }
  const std::string name(LowFloatName(type));
  if (dtype.bits != LowFloatBits(type)) {
    return Status::Invalid("DLPack: " + name + " must have " + std::to_string(LowFloatBits(type)) +
                           " bits, not " + std::to_string(dtype.bits));
  }
  if (dtype.bits == 8) {
    if (dtype.lanes != 1) return Status::NotSupported("DLPack: vector lanes are not supported");
    return "{" + name + "}";
  }
  if (type == LowFloat::kFloat4E2M1Fn && dtype.lanes == 2 && !padded) {
    return std::string("{float4_e2m1fn_x2}");  // two packed values fill one byte
  }
  if (dtype.lanes != 1) {
    return Status::NotSupported("DLPack: " + name + " with " + std::to_string(dtype.lanes) +
                                " lanes has no item format (one lane padded, or fp4 with two "
                                "packed lanes, have)");
  }
  if (!padded) {
    return Status::NotSupported(
        "DLPack: packed " + name +
        " values do not fill whole bytes, and memory-view items do; "
        "the producer's padded layout (DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED) or, for fp4, "
        "two lanes a byte can be viewed");
  }
  return "{" + name + "}";
}

// The item format of a one-lane integer, float or bool dtype (a static string), or NULL.
const char* PlainFormat(const DLDataType& dtype) {
  switch (dtype.code) {
    case kDLInt:
      return dtype.bits == 8    ? "c"
             : dtype.bits == 16 ? "s"
             : dtype.bits == 32 ? "l"
             : dtype.bits == 64 ? "q"
                                : nullptr;
    case kDLUInt:
      return dtype.bits == 8    ? "C"
             : dtype.bits == 16 ? "S"
             : dtype.bits == 32 ? "L"
             : dtype.bits == 64 ? "Q"
                                : nullptr;
    case kDLFloat:
      return dtype.bits == 16   ? "{float16}"
             : dtype.bits == 32 ? "f"
             : dtype.bits == 64 ? "d"
                                : nullptr;
    case kDLBfloat:
      return dtype.bits == 16 ? "{bfloat16}" : nullptr;
    case kDLBool:
      return dtype.bits == 8 ? "{bool}" : nullptr;
    case kDLComplex:
      return dtype.bits == 64 ? "{complex64}" : dtype.bits == 128 ? "{complex128}" : nullptr;
    default:
      return nullptr;
  }
}

Result<MemoryView> ViewOfTensor(const DLTensor& t, bool readonly, bool padded,
                                std::shared_ptr<const void> owner) {
  const char* format = nullptr;
  std::string low_float;
  if (t.dtype.code >= kDLFloat8_e3m4 && t.dtype.code <= kDLFloat4_e2m1fn) {
    FERRY_ASSIGN_OR_RAISE(low_float, LowFloatFormat(t.dtype, padded));
    format = low_float.c_str();
  } else if (t.dtype.lanes != 1) {
    return Status::NotSupported("DLPack: vector lanes are not supported");
  }
  if (format == nullptr) format = PlainFormat(t.dtype);
  if (format == nullptr) {
    return Status::NotSupported("DLPack: dtype code " + std::to_string(t.dtype.code) + " with " +
                                std::to_string(t.dtype.bits) + " bits has no item format");
  }
  if (t.ndim < 0) return Status::Invalid("DLPack: ndim is negative");
  if (t.ndim > 0 && t.shape == nullptr) return Status::Invalid("DLPack: shape is NULL");
  MemoryView view;
  FERRY_ASSIGN_OR_RAISE(view.item_desc, ParseItemFormat(format));
  view.format = format;
  view.item_size = view.item_desc.item_size;
  view.ndim = t.ndim;
  view.shape.assign(t.shape, t.shape + t.ndim);
  for (int64_t extent : view.shape) {
    if (extent < 0) return Status::Invalid("DLPack: negative extent in the shape");
  }
  if (t.strides != nullptr) {
    view.strides.reserve(static_cast<size_t>(t.ndim));
    for (int32_t d = 0; d < t.ndim; ++d) {
      int64_t bytes = 0;
      if (__builtin_mul_overflow(t.strides[d], view.item_size, &bytes)) {
        return Status::Invalid("DLPack: stride overflows");
      }
      view.strides.push_back(bytes);
    }
  }
  view.data = static_cast<uint8_t*>(t.data) + t.byte_offset;
  view.size = view.n_items() * view.item_size;
  view.readonly = readonly;
  view.device_type = static_cast<ArrowDeviceType>(t.device.device_type);
  view.device_id = t.device.device_type == kDLCPU ? -1 : t.device.device_id;
  view.owner = std::move(owner);
  return view;
}

}  // namespace

Result<DLManagedTensorVersioned*> ToDLPack(const MemoryView& view) {
  auto block = std::make_unique<ExportBlock<DLManagedTensorVersioned>>();
  DLManagedTensorVersioned& out = block->tensor;
  out.flags = view.readonly ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
  FERRY_RETURN_NOT_OK(FillTensor(view, &block->ctx, &out.dl_tensor, &out.flags));
  out.version.major = DLPACK_MAJOR_VERSION;
  out.version.minor = DLPACK_MINOR_VERSION;
  out.manager_ctx = block.get();
  out.deleter = [](DLManagedTensorVersioned* self) {
    delete static_cast<ExportBlock<DLManagedTensorVersioned>*>(self->manager_ctx);
  };
  return &block.release()->tensor;
}

Result<DLManagedTensor*> ToDLPackLegacy(const MemoryView& view) {
  if (view.readonly) {
    return Status::NotSupported(
        "DLPack: the legacy DLManagedTensor cannot mark data read-only; "
        "use the versioned tensor");
  }
  auto block = std::make_unique<ExportBlock<DLManagedTensor>>();
  DLManagedTensor& out = block->tensor;
  FERRY_RETURN_NOT_OK(FillTensor(view, &block->ctx, &out.dl_tensor, nullptr));
  out.manager_ctx = block.get();
  out.deleter = [](DLManagedTensor* self) {
    delete static_cast<ExportBlock<DLManagedTensor>*>(self->manager_ctx);
  };
  return &block.release()->tensor;
}

std::optional<DLPackPlainLayout> DescribePlainDLPack(const DLManagedTensorVersioned& tensor,
                                                     int64_t* byte_strides, int64_t max_dims) {
  const DLTensor& t = tensor.dl_tensor;
  if (tensor.version.major != DLPACK_MAJOR_VERSION || t.dtype.lanes != 1 || t.ndim < 0 ||
      t.ndim > max_dims || (t.ndim > 0 && t.shape == nullptr)) {
    return std::nullopt;
  }
  DLPackPlainLayout layout;
  const char* format = PlainFormat(t.dtype);
  if (format == nullptr) return std::nullopt;
  layout.format = format;
  layout.item_size = t.dtype.bits / 8;
  layout.readonly = (tensor.flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
  layout.byte_size = layout.item_size;
  for (int32_t d = 0; d < t.ndim; ++d) {
    if (t.shape[d] < 0 || __builtin_mul_overflow(layout.byte_size, t.shape[d], &layout.byte_size)) {
      return std::nullopt;
    }
    if (t.strides != nullptr &&
        __builtin_mul_overflow(t.strides[d], layout.item_size, &byte_strides[d])) {
      return std::nullopt;
    }
  }
  return layout;
}

Result<MemoryView> FromDLPack(DLManagedTensorVersioned* tensor) {
  if (tensor == nullptr) return Status::Invalid("DLPack: tensor is NULL");
  // The owner deletes the tensor exactly once, whatever happens below.
  std::shared_ptr<const void> owner(tensor, [](const void* p) {
    auto* t = static_cast<DLManagedTensorVersioned*>(const_cast<void*>(p));
    if (t->deleter != nullptr) t->deleter(t);
  });
  if (tensor->version.major != DLPACK_MAJOR_VERSION) {
    return Status::NotSupported("DLPack: major version " + std::to_string(tensor->version.major) +
                                " is not supported (expected " +
                                std::to_string(DLPACK_MAJOR_VERSION) + "); the tensor was deleted");
  }
  const bool readonly = (tensor->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
  const bool padded = (tensor->flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED) != 0;
  return ViewOfTensor(tensor->dl_tensor, readonly, padded, std::move(owner));
}

Result<MemoryView> FromDLPackLegacy(DLManagedTensor* tensor) {
  if (tensor == nullptr) return Status::Invalid("DLPack: tensor is NULL");
  std::shared_ptr<const void> owner(tensor, [](const void* p) {
    auto* t = static_cast<DLManagedTensor*>(const_cast<void*>(p));
    if (t->deleter != nullptr) t->deleter(t);
  });
  return ViewOfTensor(tensor->dl_tensor, /*readonly=*/false, /*padded=*/false, std::move(owner));
}

}  // namespace ferry::memview
