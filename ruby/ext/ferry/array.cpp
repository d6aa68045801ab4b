// Ferry::Array and Ferry::Tensor: owned Arrow arrays (any type), exported to Ruby as MemoryViews
// when fixed-width (1-D), fixed-size lists (2-D) or arrow.fixed_shape_tensor (N-D).
#include <cstring>

#include "array_ref.hpp"
#include "ferry/format/json.hpp"
#include "ferry/format/schema.hpp"
#include "ferry/format/schema_view.hpp"
#include "ferry/memview/arrow.hpp"
#include "ferry_ext.hpp"

namespace ferry_ruby {

VALUE cArray = Qnil;
VALUE cTensor = Qnil;

namespace {

namespace mv = ferry::memview;

// A Ferry::Array: a shared, immutable ferry array.
struct ArrayObject {
  std::shared_ptr<const ferry::Array> array;
};

void FreeArray(void* p) { delete static_cast<ArrayObject*>(p); }
size_t ArraySize(const void*) { return sizeof(ArrayObject); }

const rb_data_type_t kArrayType = {"Ferry::Array",
                                   {nullptr, FreeArray, ArraySize, nullptr, {nullptr}},
                                   nullptr,
                                   nullptr,
                                   RUBY_TYPED_FREE_IMMEDIATELY};

VALUE Alloc(VALUE klass) { return TypedData_Wrap_Struct(klass, &kArrayType, new ArrayObject()); }

const ferry::Array& Get(VALUE self) { return *UnwrapArray(self); }

bool IsTensor(const ferry::Array& array) {
  return array.view().type().type == ferry::TypeId::kExtension &&
         array.view().type().extension_name == "arrow.fixed_shape_tensor";
}

ferry::Result<mv::MemoryView> ViewOf(VALUE obj, int32_t flags) {
  auto* a = static_cast<ArrayObject*>(rb_check_typeddata(obj, &kArrayType));
  if (a == nullptr || !a->array) return ferry::Status::Invalid("Ferry::Array is not initialised");
  return mv::ViewOfArray(a->array, flags);
}

bool GetView(VALUE obj, rb_memory_view_t* view, int flags) {
  auto v = ViewOf(obj, mv::kStrides | mv::kFormat);
  if (!v.ok()) {
    LastExportError() = v.status().message();
    return false;
  }
  return ExportToRuby(obj, std::move(v).ValueOrDie(), flags, view);
}

bool Available(VALUE obj) {
  auto v = ViewOf(obj, mv::kStrides | mv::kFormat);
  if (!v.ok()) LastExportError() = v.status().message();
  return v.ok();
}

const rb_memory_view_entry_t kEntry = {GetView, ReleaseRubyExport, Available};

// Ferry::Array.from_json(format, json): an array of the Arrow C data format (e.g. "i", "u",
// "+w:2" is not enough: only formats without children) built from JSON values.
VALUE FromJson(VALUE, VALUE format, VALUE json) {
  StringValueCStr(format);
  StringValue(json);
  return Guarded([&](VALUE* exc) {
    auto schema = ferry::Field::Make(RSTRING_PTR(format), "").Export();
    if (!schema.ok()) {
      *exc = MakeError(rb_eArgError, "Ferry::Array.from_json format", schema.status());
      return Qnil;
    }
    auto array = ferry::ArrayFromJson(
        schema->get(), std::string_view(RSTRING_PTR(json), static_cast<size_t>(RSTRING_LEN(json))));
    if (!array.ok()) {
      *exc = MakeError(rb_eArgError, "Ferry::Array.from_json values", array.status());
      return Qnil;
    }
    auto imported =
        ferry::Array::Import(std::move(schema).ValueOrDie(), std::move(array).ValueOrDie());
    if (!imported.ok()) {
      *exc = MakeError(eError, "Ferry::Array.from_json", imported.status());
      return Qnil;
    }
    return WrapArray(std::make_shared<const ferry::Array>(std::move(imported).ValueOrDie()));
  });
}

// Ferry::Array.import_from_c(schema_address, array_address): take a producer's ArrowSchema and
// ArrowArray (both marked released); no buffer is copied.
VALUE ImportFromC(VALUE, VALUE schema_address, VALUE array_address) {
  auto* schema = static_cast<ArrowSchema*>(AddressOf(schema_address));
  auto* array = static_cast<ArrowArray*>(AddressOf(array_address));
  if (schema == nullptr || array == nullptr) {
    rb_raise(rb_eArgError, "Ferry::Array.import_from_c: NULL address");
  }
  return Guarded([&](VALUE* exc) {
    auto imported = ferry::Array::Import(schema, array);
    if (!imported.ok()) {
      *exc = MakeError(eError, "Ferry::Array.import_from_c", imported.status());
      return Qnil;
    }
    ferry::Status st = imported->Validate(ferry::ValidationLevel::kDefault);
    if (!st.ok()) {
      *exc = MakeError(eError, "Ferry::Array.import_from_c: invalid array", st);
      return Qnil;
    }
    return WrapArray(std::make_shared<const ferry::Array>(std::move(imported).ValueOrDie()));
  });
}

// #export_to_c(schema_address, array_address): fill a consumer's structs through the C data
// interface. The schema is a deep copy; the array shares this array's buffers.
VALUE ExportToC(VALUE self, VALUE schema_address, VALUE array_address) {
  auto* schema = static_cast<ArrowSchema*>(AddressOf(schema_address));
  auto* array = static_cast<ArrowArray*>(AddressOf(array_address));
  if (schema == nullptr || array == nullptr) {
    rb_raise(rb_eArgError, "Ferry::Array#export_to_c: NULL address");
  }
  const std::shared_ptr<const ferry::Array>& keep = UnwrapArray(self);
  return Guarded([&](VALUE* exc) {
    auto copy = ferry::CopySchema(keep->schema());
    if (!copy.ok()) {
      *exc = MakeError(eError, "Ferry::Array#export_to_c", copy.status());
      return Qnil;
    }
    *array = RefArray(keep, keep->array());
    *schema = *copy->get();
    copy->get()->release = nullptr;  // moved into *schema
    return Qnil;
  });
}

VALUE Length(VALUE self) { return LL2NUM(Get(self).length()); }
VALUE NullCount(VALUE self) { return LL2NUM(Get(self).view().null_count()); }
VALUE Format(VALUE self) { return rb_str_new_cstr(Get(self).schema()->format); }

// #type: a readable type such as "fixed_size_list<item: int32>[3]".
VALUE Type(VALUE self) {
  const std::shared_ptr<const ferry::Array>& a = UnwrapArray(self);
  return Guarded([&](VALUE* exc) {
    auto s = ferry::SchemaToString(a->schema());
    if (!s.ok()) {
      *exc = MakeError(eError, "Ferry::Array#type", s.status());
      return Qnil;
    }
    return rb_str_new(s->data(), static_cast<long>(s->size()));
  });
}

// #to_json: every value in ferry's JSON rendering (docs/json.md); validates fully first.
VALUE ToJson(VALUE self) {
  const std::shared_ptr<const ferry::Array>& a = UnwrapArray(self);
  return Guarded([&](VALUE* exc) {
    ferry::Status st = a->Validate(ferry::ValidationLevel::kFull);
    auto s = st.ok() ? ferry::ArrayToJson(a->view()) : ferry::Result<std::string>(st);
    if (!s.ok()) {
      *exc = MakeError(eError, "Ferry::Array#to_json", s.status());
      return Qnil;
    }
    return rb_str_new(s->data(), static_cast<long>(s->size()));
  });
}

// #buffer_address(i): the address of buffer i of the top-level node (0 when absent).
VALUE BufferAddress(VALUE self, VALUE index) {
  long long i = NUM2LL(index);
  const ferry::Array& a = Get(self);
  if (i < 0 || i >= a.array()->n_buffers) {
    rb_raise(rb_eIndexError, "Ferry::Array#buffer_address: buffer %lld of %lld", i,
             static_cast<long long>(a.array()->n_buffers));
  }
  return ULL2NUM(reinterpret_cast<uintptr_t>(a.array()->buffers[i]));
}

// #n_children, #child_name(i) and #child(i): the children of nested arrays (a record batch's
// columns, a list's values), sharing buffers; the names C++ and Python use.
VALUE NChildren(VALUE self) { return LL2NUM(Get(self).schema()->n_children); }
VALUE ChildName(VALUE self, VALUE index) {
  long long i = NUM2LL(index);
  const ferry::Array& a = Get(self);
  if (i < 0 || i >= a.schema()->n_children) {
    rb_raise(rb_eIndexError, "Ferry::Array#child_name: child %lld of %lld", i,
             static_cast<long long>(a.schema()->n_children));
  }
  const char* name = a.schema()->children[i]->name;
  return rb_str_new_cstr(name ? name : "");
}
VALUE Child(VALUE self, VALUE index) {
  long long i = NUM2LL(index);
  const std::shared_ptr<const ferry::Array>& keep = UnwrapArray(self);
  const bool is_struct = keep->view().type().storage_type == ferry::TypeId::kStruct;
  if (i < 0 || i >= keep->array()->n_children) {
    rb_raise(rb_eIndexError, "Ferry::Array#child: child %lld of %lld", i,
             static_cast<long long>(keep->array()->n_children));
  }
  return Guarded([&](VALUE* exc) {
    auto schema = ferry::CopySchema(keep->schema()->children[i]);
    if (!schema.ok()) {
      *exc = MakeError(eError, "Ferry::Array#child", schema.status());
      return Qnil;
    }
    const ArrowArray* parent = keep->array();
    ferry::UniqueArray child;
    *child.get() = RefArray(keep, parent->children[i]);
    // A struct's slice applies to its fields; other children (a list's values) are whole.
    if (is_struct) {
      child.get()->offset += parent->offset;
      child.get()->length = parent->length;
      if (parent->offset != 0 || parent->length != parent->children[i]->length) {
        child.get()->null_count = -1;
      }
    }
    auto imported = ferry::Array::Import(std::move(schema).ValueOrDie(), std::move(child));
    if (!imported.ok()) {
      *exc = MakeError(eError, "Ferry::Array#child", imported.status());
      return Qnil;
    }
    return WrapArray(std::make_shared<const ferry::Array>(std::move(imported).ValueOrDie()));
  });
}

// Ferry::Tensor#shape: [length, *the tensor's logical shape].
VALUE TensorShape(VALUE self) {
  return Guarded([&](VALUE* exc) {
    auto v = ViewOf(self, mv::kStrides | mv::kFormat);
    if (!v.ok()) {
      *exc = MakeError(eError, "Ferry::Tensor#shape", v.status());
      return Qnil;
    }
    VALUE out = rb_ary_new();
    for (int64_t s : v->shape) rb_ary_push(out, LL2NUM(s));
    return out;
  });
}

// Ferry.export_count(obj): views of a ferry object handed to Ruby and not yet released.
VALUE ExportCount(VALUE, VALUE obj) { return LL2NUM(RubyExportCount(obj)); }

}  // namespace

VALUE WrapArray(std::shared_ptr<const ferry::Array> array) {
  VALUE klass = IsTensor(*array) ? cTensor : cArray;
  return TypedData_Wrap_Struct(klass, &kArrayType, new ArrayObject{std::move(array)});
}

const std::shared_ptr<const ferry::Array>& UnwrapArray(VALUE obj) {
  auto* a = static_cast<ArrayObject*>(rb_check_typeddata(obj, &kArrayType));
  if (!a->array) rb_raise(eError, "Ferry::Array is not initialised (use from_json or a view)");
  return a->array;
}

void InitArray() {
  /* An immutable Arrow array; fixed-width arrays and fixed-size lists export MemoryViews. */
  cArray = rb_define_class_under(mFerry, "Array", rb_cObject);
  rb_define_alloc_func(cArray, Alloc);
  rb_define_singleton_method(cArray, "from_json", RUBY_METHOD_FUNC(FromJson), 2);
  rb_define_singleton_method(cArray, "import_from_c", RUBY_METHOD_FUNC(ImportFromC), 2);
  rb_define_method(cArray, "export_to_c", RUBY_METHOD_FUNC(ExportToC), 2);
  rb_define_method(cArray, "length", RUBY_METHOD_FUNC(Length), 0);
  rb_define_method(cArray, "null_count", RUBY_METHOD_FUNC(NullCount), 0);
  rb_define_method(cArray, "format", RUBY_METHOD_FUNC(Format), 0);
  rb_define_method(cArray, "type", RUBY_METHOD_FUNC(Type), 0);
  rb_define_method(cArray, "to_json", RUBY_METHOD_FUNC(ToJson), 0);
  rb_define_method(cArray, "buffer_address", RUBY_METHOD_FUNC(BufferAddress), 1);
  rb_define_method(cArray, "n_children", RUBY_METHOD_FUNC(NChildren), 0);
  rb_define_method(cArray, "child_name", RUBY_METHOD_FUNC(ChildName), 1);
  rb_define_method(cArray, "child", RUBY_METHOD_FUNC(Child), 1);
  rb_memory_view_register(cArray, &kEntry);
  /* An arrow.fixed_shape_tensor array: N-d items, permutation honoured through strides. */
  cTensor = rb_define_class_under(mFerry, "Tensor", cArray);
  rb_define_method(cTensor, "shape", RUBY_METHOD_FUNC(TensorShape), 0);
  rb_memory_view_register(cTensor, &kEntry);
  rb_define_module_function(mFerry, "export_count", RUBY_METHOD_FUNC(ExportCount), 1);
}

}  // namespace ferry_ruby
