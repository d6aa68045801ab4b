// DLPack bridge.
#include "ferry/memview/dlpack.hpp"

#include <bit>
#include <new>

namespace ferry::memview {

namespace {

constexpr bool kHostLittle = std::endian::native == std::endian::little;

// What an exported tensor owns: a copy of the view plus the shape and strides arrays.
struct ExportContext {
  MemoryView view;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

Status FillTensor(const MemoryView& view, ExportContext* ctx, DLTensor* t) {
  const ItemDesc& desc = view.item_desc;
  if (desc.components.size() != 1 || desc.components[0].repeat != 1 ||
      desc.components[0].size != view.item_size) {
    return Status::NotSupported("DLPack: the item must be one scalar, not \"" + view.format + "\"");
  }
  const ItemComponent& c = desc.components[0];
  if (c.size > 1 && c.little_endian != kHostLittle) {
    return Status::NotSupported("DLPack: data must be in native byte order");
  }
  const char kind = ItemKind(c.format);
  t->dtype.code = kind == 'f' ? kDLFloat : kind == 'i' ? kDLInt : kDLUInt;
  t->dtype.bits = static_cast<uint8_t>(c.size * 8);
  t->dtype.lanes = 1;
  ctx->shape = view.shape;
  ctx->strides.resize(static_cast<size_t>(view.ndim));
  for (int64_t d = 0; d < view.ndim; ++d) {
    const int64_t bytes = view.stride(d);
    if (bytes % view.item_size != 0) {
      return Status::Invalid("DLPack: stride " + std::to_string(bytes) + " of dimension " +
                             std::to_string(d) + " is not a multiple of the item size " +
                             std::to_string(view.item_size));
    }
    ctx->strides[static_cast<size_t>(d)] = bytes / view.item_size;
  }
  if (!view.sub_offsets.empty())
    return Status::NotSupported("DLPack cannot express indirect views");
  t->data = view.data;
  t->device.device_type = static_cast<DLDeviceType>(view.device_type);
  t->device.device_id =
      static_cast<int32_t>(view.device_type == ARROW_DEVICE_CPU ? 0 : view.device_id);
  t->ndim = static_cast<int32_t>(view.ndim);
  t->shape = ctx->shape.empty() ? nullptr : ctx->shape.data();
  t->strides = ctx->strides.empty() ? nullptr : ctx->strides.data();
  t->byte_offset = 0;
  return Status::OK();
}

Result<MemoryView> ViewOfTensor(const DLTensor& t, bool readonly,
                                std::shared_ptr<const void> owner) {
  const char* format = nullptr;
  if (t.dtype.lanes != 1) return Status::NotSupported("DLPack: vector lanes are not supported");
  switch (t.dtype.code) {
    case kDLInt:
      format = t.dtype.bits == 8    ? "c"
               : t.dtype.bits == 16 ? "s"
               : t.dtype.bits == 32 ? "l"
               : t.dtype.bits == 64 ? "q"
                                    : nullptr;
      break;
    case kDLUInt:
      format = t.dtype.bits == 8    ? "C"
               : t.dtype.bits == 16 ? "S"
               : t.dtype.bits == 32 ? "L"
               : t.dtype.bits == 64 ? "Q"
                                    : nullptr;
      break;
    case kDLFloat:
      format = t.dtype.bits == 32 ? "f" : t.dtype.bits == 64 ? "d" : nullptr;
      break;
    case kDLBool:
      format = t.dtype.bits == 8 ? "C" : nullptr;
      break;
    default:
      break;
  }
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
  auto ctx = std::make_unique<ExportContext>();
  ctx->view = view;
  auto out = std::make_unique<DLManagedTensorVersioned>();
  FERRY_RETURN_NOT_OK(FillTensor(ctx->view, ctx.get(), &out->dl_tensor));
  out->version.major = DLPACK_MAJOR_VERSION;
  out->version.minor = DLPACK_MINOR_VERSION;
  out->flags = view.readonly ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
  out->manager_ctx = ctx.release();
  out->deleter = [](DLManagedTensorVersioned* self) {
    delete static_cast<ExportContext*>(self->manager_ctx);
    delete self;
  };
  return out.release();
}

Result<DLManagedTensor*> ToDLPackLegacy(const MemoryView& view) {
  if (view.readonly) {
    return Status::NotSupported(
        "DLPack: the legacy DLManagedTensor cannot mark data read-only; "
        "use the versioned tensor");
  }
  auto ctx = std::make_unique<ExportContext>();
  ctx->view = view;
  auto out = std::make_unique<DLManagedTensor>();
  FERRY_RETURN_NOT_OK(FillTensor(ctx->view, ctx.get(), &out->dl_tensor));
  out->manager_ctx = ctx.release();
  out->deleter = [](DLManagedTensor* self) {
    delete static_cast<ExportContext*>(self->manager_ctx);
    delete self;
  };
  return out.release();
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
  return ViewOfTensor(tensor->dl_tensor, readonly, std::move(owner));
}

Result<MemoryView> FromDLPackLegacy(DLManagedTensor* tensor) {
  if (tensor == nullptr) return Status::Invalid("DLPack: tensor is NULL");
  std::shared_ptr<const void> owner(tensor, [](const void* p) {
    auto* t = static_cast<DLManagedTensor*>(const_cast<void*>(p));
    if (t->deleter != nullptr) t->deleter(t);
  });
  return ViewOfTensor(tensor->dl_tensor, /*readonly=*/false, std::move(owner));
}

}  // namespace ferry::memview
