// Ferry::Buffer: bytes ferry owns (64-byte aligned), exported to Ruby as a typed N-d MemoryView
// with a format, shape, strides and an offset of the caller's choosing.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ferry/memview/format.hpp"
#include "ferry_ext.hpp"

namespace ferry_ruby {

VALUE cBuffer = Qnil;

namespace {

namespace mv = ferry::memview;

// The allocation itself, shared with every view exported from it.
struct Bytes {
  uint8_t* data = nullptr;
  int64_t size = 0;
  ~Bytes() { std::free(data); }
};

// A Ferry::Buffer: the bytes and how they are viewed.
struct BufferObject {
  std::shared_ptr<Bytes> bytes;
  std::string format = "C";
  int64_t item_size = 1;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // empty: row-major
  int64_t offset = 0;
  bool readonly = false;
};

void FreeBuffer(void* p) { delete static_cast<BufferObject*>(p); }
size_t BufferSize(const void* p) {
  const auto* b = static_cast<const BufferObject*>(p);
  return sizeof(*b) + (b->bytes ? static_cast<size_t>(b->bytes->size) : 0);
}

const rb_data_type_t kBufferType = {"Ferry::Buffer",
                                    {nullptr, FreeBuffer, BufferSize, nullptr, {nullptr}},
                                    nullptr,
                                    nullptr,
                                    RUBY_TYPED_FREE_IMMEDIATELY};

BufferObject* Get(VALUE self) {
  auto* b = static_cast<BufferObject*>(rb_check_typeddata(self, &kBufferType));
  if (b == nullptr || !b->bytes) rb_raise(eError, "Ferry::Buffer is not initialised");
  return b;
}

VALUE Alloc(VALUE klass) { return TypedData_Wrap_Struct(klass, &kBufferType, new BufferObject()); }

// Raise unless `ary` is nil or an Array of Integers that fit in 64 bits. Runs before any C++
// object exists, so raising leaks nothing.
void CheckIntList(VALUE ary, const char* what) {
  if (NIL_P(ary)) return;
  if (!RB_TYPE_P(ary, T_ARRAY)) {
    rb_raise(rb_eTypeError, "Ferry::Buffer %s must be an Array of Integers (got %s)", what,
             rb_obj_classname(ary));
  }
  for (long i = 0; i < RARRAY_LEN(ary); ++i) (void)NUM2LL(rb_ary_entry(ary, i));
}

// The entries of an Array CheckIntList accepted (no Ruby call here can raise).
std::vector<int64_t> IntList(VALUE ary) {
  std::vector<int64_t> out;
  for (long i = 0; i < RARRAY_LEN(ary); ++i) out.push_back(NUM2LL(rb_ary_entry(ary, i)));
  return out;
}

// Check that every item the layout reaches lies inside the allocation.
ferry::Status CheckLayout(const BufferObject& b) {
  for (int64_t s : b.shape) {
    if (s < 0) return ferry::Status::Invalid("shape entries must be >= 0");
  }
  if (!b.strides.empty() && b.strides.size() != b.shape.size()) {
    return ferry::Status::Invalid("strides has " + std::to_string(b.strides.size()) +
                                  " entries for " + std::to_string(b.shape.size()) + " dimensions");
  }
  int64_t lo = b.offset;
  int64_t hi = b.offset;
  int64_t row_major = b.item_size;
  bool empty = false;
  for (size_t d = b.shape.size(); d-- > 0;) {
    int64_t stride = b.strides.empty() ? row_major : b.strides[d];
    if (b.shape[d] == 0) empty = true;
    int64_t reach = 0;
    if (b.shape[d] > 0 && __builtin_mul_overflow(b.shape[d] - 1, stride, &reach)) {
      return ferry::Status::Invalid("shape x strides overflows");
    }
    if (__builtin_add_overflow(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi) ||
        __builtin_mul_overflow(row_major, b.shape[d] ? b.shape[d] : 1, &row_major)) {
      return ferry::Status::Invalid("shape x strides overflows");
    }
  }
  if (empty) return ferry::Status::OK();
  if (lo < 0 || hi > b.bytes->size - b.item_size) {
    return ferry::Status::Invalid("the layout reaches bytes [" + std::to_string(lo) + ", " +
                                  std::to_string(hi + b.item_size) + ") outside the " +
                                  std::to_string(b.bytes->size) + "-byte buffer");
  }
  return ferry::Status::OK();
}

// Ferry::Buffer.new(size_or_string, format: "C", shape: nil, strides: nil, offset: 0,
//                   readonly: false)
VALUE Initialize(int argc, VALUE* argv, VALUE self) {
  VALUE source, opts;
  rb_scan_args(argc, argv, "1:", &source, &opts);
  auto* b = static_cast<BufferObject*>(rb_check_typeddata(self, &kBufferType));
  VALUE format = Qnil, shape = Qnil, strides = Qnil, offset = Qnil, readonly = Qnil;
  if (!NIL_P(opts)) {
    ID keys[5] = {rb_intern("format"), rb_intern("shape"), rb_intern("strides"),
                  rb_intern("offset"), rb_intern("readonly")};
    VALUE values[5];
    rb_get_kwargs(opts, keys, 0, 5, values);
    format = values[0] == Qundef ? Qnil : values[0];
    shape = values[1] == Qundef ? Qnil : values[1];
    strides = values[2] == Qundef ? Qnil : values[2];
    offset = values[3] == Qundef ? Qnil : values[3];
    readonly = values[4] == Qundef ? Qnil : values[4];
  }
  if (!NIL_P(format)) StringValueCStr(format);
  CheckIntList(shape, "shape");
  CheckIntList(strides, "strides");
  const int64_t at = NIL_P(offset) ? 0 : NUM2LL(offset);
  int64_t size = 0;
  if (RB_TYPE_P(source, T_STRING)) {
    size = RSTRING_LEN(source);
  } else {
    size = NUM2LL(source);
    if (size < 0) {
      rb_raise(rb_eArgError, "Ferry::Buffer size must be >= 0 (got %lld)",
               static_cast<long long>(size));
    }
  }
  return Guarded([&](VALUE* exc) {
    BufferObject next;
    next.bytes = std::make_shared<Bytes>();
    size_t rounded = (static_cast<size_t>(size) + 63) / 64 * 64;
    next.bytes->data = static_cast<uint8_t*>(std::aligned_alloc(64, rounded ? rounded : 64));
    if (next.bytes->data == nullptr) {
      *exc = MakeError(rb_eNoMemError, "Ferry::Buffer",
                       ferry::Status::OutOfMemory(std::to_string(size) + " bytes"));
      return Qnil;
    }
    next.bytes->size = size;
    if (RB_TYPE_P(source, T_STRING)) {
      std::memcpy(next.bytes->data, RSTRING_PTR(source), static_cast<size_t>(size));
    } else {
      std::memset(next.bytes->data, 0, static_cast<size_t>(size));
    }
    if (!NIL_P(format)) next.format = RSTRING_PTR(format);
    if (!NIL_P(shape)) next.shape = IntList(shape);
    if (!NIL_P(strides)) next.strides = IntList(strides);
    next.offset = at;
    next.readonly = RTEST(readonly);
    auto desc = mv::ParseItemFormat(next.format);
    if (!desc.ok()) {
      *exc = MakeError(rb_eArgError, "Ferry::Buffer format \"" + next.format + "\"", desc.status());
      return Qnil;
    }
    next.item_size = desc->item_size;
    if (next.shape.empty() && NIL_P(shape)) {
      next.shape = {next.item_size ? (next.bytes->size - next.offset) / next.item_size : 0};
    }
    ferry::Status st =
        next.item_size > 0 ? CheckLayout(next) : ferry::Status::Invalid("items of 0 bytes");
    if (st.ok() && next.offset < 0) st = ferry::Status::Invalid("offset must be >= 0");
    if (!st.ok()) {
      *exc = MakeError(rb_eArgError, "Ferry::Buffer layout", st);
      return Qnil;
    }
    *b = std::move(next);
    return self;
  });
}

mv::MemoryView ViewOf(const BufferObject& b) {
  mv::MemoryView v;
  v.owner = b.bytes;
  v.data = b.bytes->data + b.offset;
  v.readonly = b.readonly;
  v.format = b.format;
  v.item_size = b.item_size;
  v.item_desc = mv::ParseItemFormat(b.format).ValueOrDie();  // checked by Initialize
  v.ndim = static_cast<int64_t>(b.shape.size());
  v.shape = b.shape;
  v.strides = b.strides;
  v.size = v.n_items() * v.item_size;
  return v;
}

bool GetView(VALUE obj, rb_memory_view_t* view, int flags) {
  auto* b = static_cast<BufferObject*>(rb_check_typeddata(obj, &kBufferType));
  if (b == nullptr || !b->bytes) return false;
  return ExportToRuby(obj, ViewOf(*b), flags, view);
}

bool Available(VALUE obj) {
  auto* b = static_cast<BufferObject*>(rb_check_typeddata(obj, &kBufferType));
  return b != nullptr && b->bytes;
}

const rb_memory_view_entry_t kEntry = {GetView, ReleaseRubyExport, Available};

VALUE ByteSize(VALUE self) { return LL2NUM(Get(self)->bytes->size); }
VALUE Address(VALUE self) { return ULL2NUM(reinterpret_cast<uintptr_t>(Get(self)->bytes->data)); }
VALUE Format(VALUE self) { return rb_str_new_cstr(Get(self)->format.c_str()); }
VALUE ReadonlyP(VALUE self) { return Get(self)->readonly ? Qtrue : Qfalse; }
VALUE ToS(VALUE self) {
  BufferObject* b = Get(self);
  return rb_str_new(reinterpret_cast<const char*>(b->bytes->data), b->bytes->size);
}
// Copy `string` into the buffer at byte `offset` (refused for read-only buffers).
VALUE Write(VALUE self, VALUE offset, VALUE string) {
  BufferObject* b = Get(self);
  int64_t at = NUM2LL(offset);
  StringValue(string);
  if (b->readonly) rb_raise(eError, "Ferry::Buffer#write: the buffer is read-only");
  if (at < 0 || RSTRING_LEN(string) > b->bytes->size - at) {
    rb_raise(rb_eIndexError, "Ferry::Buffer#write: %ld bytes at %lld pass the end (%lld bytes)",
             RSTRING_LEN(string), static_cast<long long>(at),
             static_cast<long long>(b->bytes->size));
  }
  std::memcpy(b->bytes->data + at, RSTRING_PTR(string), static_cast<size_t>(RSTRING_LEN(string)));
  return self;
}

}  // namespace

void InitBuffer() {
  /* Bytes owned by ferry, exported as a MemoryView of any format, shape and strides. */
  cBuffer = rb_define_class_under(mFerry, "Buffer", rb_cObject);
  rb_define_alloc_func(cBuffer, Alloc);
  rb_define_method(cBuffer, "initialize", RUBY_METHOD_FUNC(Initialize), -1);
  rb_define_method(cBuffer, "byte_size", RUBY_METHOD_FUNC(ByteSize), 0);
  rb_define_method(cBuffer, "address", RUBY_METHOD_FUNC(Address), 0);
  rb_define_method(cBuffer, "format", RUBY_METHOD_FUNC(Format), 0);
  rb_define_method(cBuffer, "readonly?", RUBY_METHOD_FUNC(ReadonlyP), 0);
  rb_define_method(cBuffer, "to_s", RUBY_METHOD_FUNC(ToS), 0);
  rb_define_method(cBuffer, "write", RUBY_METHOD_FUNC(Write), 2);
  rb_memory_view_register(cBuffer, &kEntry);
}

}  // namespace ferry_ruby
