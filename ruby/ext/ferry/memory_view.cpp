// Ferry::MemoryView: any Ruby MemoryView exporter's view (Fiddle::Pointer, another extension's,
// ferry's own) held as a ferry memview::MemoryView, readable from Ruby and convertible to Arrow.
#include <mutex>
#include <vector>

#include "ferry/memview/arrow.hpp"
#include "ferry/memview/format.hpp"
#include "ferry_ext.hpp"

namespace ferry_ruby {

VALUE cMemoryView = Qnil;

namespace {

namespace mv = ferry::memview;

// Views whose last reference went on a thread Ruby does not know; released with the GVL later.
std::mutex g_pending_mu;
std::vector<rb_memory_view_t> g_pending;

void DrainPending() {
  std::vector<rb_memory_view_t> pending;
  {
    std::lock_guard<std::mutex> lock(g_pending_mu);
    pending.swap(g_pending);
  }
  for (rb_memory_view_t& v : pending) rb_memory_view_release(&v);
}

// The owner of one Ruby view: releasing it (once) happens when the last ferry view, array or
// tensor built over it goes. Until then Ruby's exported-object registry keeps the exporter alive.
struct RubyView {
  rb_memory_view_t view{};
  ~RubyView() {
    if (ruby_native_thread_p()) {
      rb_memory_view_release(&view);
    } else {
      std::lock_guard<std::mutex> lock(g_pending_mu);
      g_pending.push_back(view);
    }
  }
};

// A Ferry::MemoryView: the ferry view (its owner is the RubyView) and the exporting object.
struct MemoryViewObject {
  mv::MemoryView view;
  VALUE obj = Qnil;
  bool held = false;
};

void Mark(void* p) {
  auto* m = static_cast<MemoryViewObject*>(p);
  if (m->held) rb_gc_mark(m->obj);  // pinned: the exporter's memory may live inside it
}
void Free(void* p) { delete static_cast<MemoryViewObject*>(p); }
size_t Size(const void*) { return sizeof(MemoryViewObject); }

const rb_data_type_t kType = {"Ferry::MemoryView",
                              {Mark, Free, Size, nullptr, {nullptr}},
                              nullptr,
                              nullptr,
                              RUBY_TYPED_FREE_IMMEDIATELY};

VALUE Alloc(VALUE klass) { return TypedData_Wrap_Struct(klass, &kType, new MemoryViewObject()); }

MemoryViewObject* Get(VALUE self) {
  auto* m = static_cast<MemoryViewObject*>(rb_check_typeddata(self, &kType));
  if (!m->held) rb_raise(eError, "Ferry::MemoryView has been released");
  return m;
}

// Turn Ruby's view into ferry's; the RubyView is the owner, so a failure releases it.
ferry::Status FromRuby(std::shared_ptr<RubyView> holder, int flags, mv::MemoryView* out) {
  const rb_memory_view_t& r = holder->view;
  mv::MemoryView v;
  v.data = static_cast<uint8_t*>(r.data);
  v.size = r.byte_size;
  v.readonly = r.readonly;
  v.format = r.format == nullptr ? "C" : r.format;
  auto desc = mv::ParseItemFormat(v.format);
  if (!desc.ok()) return desc.status().WithContext("format \"" + v.format + "\"");
  v.item_desc = std::move(desc).ValueOrDie();
  v.item_size = r.item_size;
  if (v.item_size <= 0 || v.item_desc.item_size != v.item_size) {
    return ferry::Status::Invalid(
        "format \"" + v.format + "\" has items of " + std::to_string(v.item_desc.item_size) +
        " bytes but the exporter says item_size " + std::to_string(v.item_size));
  }
  v.ndim = r.ndim;
  if (v.ndim < 0) return ferry::Status::Invalid("ndim " + std::to_string(v.ndim) + " < 0");
  if (r.shape == nullptr || v.ndim == 0) {
    if (v.ndim > 1) return ferry::Status::Invalid("no shape for a view of ndim > 1");
    if (v.ndim == 1) v.shape = {v.size / v.item_size};
  } else {
    v.shape.assign(r.shape, r.shape + r.ndim);
  }
  for (int64_t s : v.shape) {
    if (s < 0) return ferry::Status::Invalid("a shape entry is negative");
  }
  if (r.strides != nullptr) v.strides.assign(r.strides, r.strides + r.ndim);
  if (r.sub_offsets != nullptr) v.sub_offsets.assign(r.sub_offsets, r.sub_offsets + r.ndim);
  v.owner = std::move(holder);
  // Exporters may ignore the flags (Fiddle::Pointer does); ferry checks them again here.
  mv::MemoryView checked = v;
  FERRY_RETURN_NOT_OK(mv::ConformToRequest(&checked, flags | mv::kStrides | mv::kFormat));
  *out = std::move(v);
  return ferry::Status::OK();
}

// Ferry::MemoryView.new(obj, flags = 0)
VALUE Initialize(int argc, VALUE* argv, VALUE self) {
  VALUE target, flags_v;
  rb_scan_args(argc, argv, "11", &target, &flags_v);
  const int flags = NIL_P(flags_v) ? 0 : NUM2INT(flags_v);
  auto* m = static_cast<MemoryViewObject*>(rb_check_typeddata(self, &kType));
  if (m->held) rb_raise(eError, "Ferry::MemoryView is already initialised");
  DrainPending();
  rb_memory_view_t raw{};
  LastExportError().clear();
  if (!rb_memory_view_available_p(target) || !rb_memory_view_get(target, &raw, flags)) {
    VALUE why = LastExportError().empty()
                    ? rb_str_new_cstr("it exports no MemoryView (or refused the request)")
                    : rb_str_new_cstr(LastExportError().c_str());
    rb_raise(rb_eArgError, "Ferry::MemoryView: cannot get a MemoryView of %s with flags 0x%x: %s",
             rb_obj_classname(target), flags, StringValueCStr(why));
  }
  return Guarded([&](VALUE* exc) {
    auto holder = std::make_shared<RubyView>();
    holder->view = raw;
    mv::MemoryView view;
    ferry::Status st = FromRuby(std::move(holder), flags, &view);
    if (!st.ok()) {
      *exc = MakeError(rb_eArgError,
                       std::string("Ferry::MemoryView of ") + rb_obj_classname(target), st);
      return Qnil;
    }
    m->view = std::move(view);
    m->obj = raw.obj;
    m->held = true;
    RB_OBJ_WRITTEN(self, Qundef, raw.obj);
    return self;
  });
}

// #release: drop this object's hold; the Ruby view is released when nothing built over it
// (arrays from #to_arrow) remains. Releasing again does nothing.
VALUE Release(VALUE self) {
  auto* m = static_cast<MemoryViewObject*>(rb_check_typeddata(self, &kType));
  if (!m->held) return Qnil;
  m->held = false;
  m->obj = Qnil;
  return Guarded([&](VALUE*) {
    m->view = mv::MemoryView();
    return Qnil;
  });
}

VALUE ReleasedP(VALUE self) {
  return static_cast<MemoryViewObject*>(rb_check_typeddata(self, &kType))->held ? Qfalse : Qtrue;
}
VALUE Obj(VALUE self) { return Get(self)->obj; }
VALUE Format(VALUE self) { return rb_str_new_cstr(Get(self)->view.format.c_str()); }
VALUE ItemSize(VALUE self) { return LL2NUM(Get(self)->view.item_size); }
VALUE Ndim(VALUE self) { return LL2NUM(Get(self)->view.ndim); }
VALUE ByteSize(VALUE self) { return LL2NUM(Get(self)->view.size); }
VALUE ReadonlyP(VALUE self) { return Get(self)->view.readonly ? Qtrue : Qfalse; }
VALUE Address(VALUE self) { return ULL2NUM(reinterpret_cast<uintptr_t>(Get(self)->view.data)); }
VALUE Shape(VALUE self) {
  const mv::MemoryView& v = Get(self)->view;
  VALUE out = rb_ary_new();
  for (int64_t s : v.shape) rb_ary_push(out, LL2NUM(s));
  return out;
}
// #strides: byte strides of every dimension (row-major ones when the exporter gave none).
VALUE Strides(VALUE self) {
  const mv::MemoryView& v = Get(self)->view;
  VALUE out = rb_ary_new();
  for (int64_t d = 0; d < v.ndim; ++d) rb_ary_push(out, LL2NUM(v.stride(d)));
  return out;
}

VALUE ScalarToRuby(const mv::ItemScalar& s) {
  if (const auto* i = std::get_if<int64_t>(&s)) return LL2NUM(*i);
  if (const auto* u = std::get_if<uint64_t>(&s)) return ULL2NUM(*u);
  return DBL2NUM(std::get<double>(s));
}

// An item as Ruby holds it: DecodeItem's values grouped by the item's members, a boolean as true
// or false and a complex number as a Complex; a number (or Complex, or boolean) for one member,
// an Array of them otherwise.
VALUE ItemToRuby(const mv::MemoryView& v, const uint8_t* item) {
  const mv::ItemValue value = mv::DecodeItem(v.item_desc, item);
  const auto& members = v.item_desc.components;
  if (const auto* s = std::get_if<mv::ItemScalar>(&value)) {
    if (members.size() == 1 && members[0].format == mv::kBoolLetter) {
      return std::get<uint64_t>(*s) != 0 ? Qtrue : Qfalse;
    }
    return ScalarToRuby(*s);
  }
  const auto* list = std::get_if<std::vector<mv::ItemScalar>>(&value);
  if (list == nullptr) return Qnil;
  VALUE out = rb_ary_new_capa(static_cast<long>(list->size()));
  size_t k = 0;
  for (const mv::ItemComponent& c : members) {
    for (int64_t r = 0; r < c.repeat && k < list->size(); ++r) {
      if (c.format == mv::kComplexLetter && k + 1 < list->size()) {
        rb_ary_push(out, rb_Complex(ScalarToRuby((*list)[k]), ScalarToRuby((*list)[k + 1])));
        k += 2;
      } else if (c.format == mv::kBoolLetter) {
        rb_ary_push(out, std::get<uint64_t>((*list)[k++]) != 0 ? Qtrue : Qfalse);
      } else {
        // A float4_e2m1fn_x2 byte gives two values: each is one element here.
        const int per = mv::LowFloatValuesPerByte(c.low_float);
        for (int n = 0; n < per && k < list->size(); ++n)
          rb_ary_push(out, ScalarToRuby((*list)[k++]));
      }
    }
  }
  // One complex number alone is the item's value, as one number is.
  if (members.size() == 1 && members[0].repeat == 1 && RARRAY_LEN(out) == 1) {
    return rb_ary_entry(out, 0);
  }
  return out;
}

// #[](*indices): the item at the indices (negative ones count from the end), decoded by the
// format: a number for one-member items, an Array otherwise.
VALUE Aref(int argc, VALUE* argv, VALUE self) {
  MemoryViewObject* m = Get(self);
  const mv::MemoryView& v = m->view;
  if (argc != v.ndim) {
    rb_raise(rb_eIndexError, "Ferry::MemoryView#[]: %d indices for %lld dimensions", argc,
             static_cast<long long>(v.ndim));
  }
  for (int d = 0; d < argc; ++d) {
    long long i = NUM2LL(argv[d]);
    const long long n = v.shape[static_cast<size_t>(d)];
    if (i < -n || i >= n) {
      rb_raise(rb_eIndexError,
               "Ferry::MemoryView#[]: index %lld out of range in dimension %d "
               "(extent %lld)",
               i, d, n);
    }
  }
  return Guarded([&](VALUE*) {
    std::vector<int64_t> idx;
    for (int d = 0; d < argc; ++d) {
      long long i = NUM2LL(argv[d]);
      idx.push_back(i < 0 ? i + v.shape[static_cast<size_t>(d)] : i);
    }
    return ItemToRuby(v, mv::GetItemPointer(v, idx.data()));
  });
}

// #to_a: every item as nested Arrays following shape and strides (the item itself for ndim 0).
VALUE ToA(VALUE self) {
  MemoryViewObject* m = Get(self);
  return Guarded([&](VALUE*) {
    const mv::MemoryView& v = m->view;
    std::vector<int64_t> idx(static_cast<size_t>(v.ndim), 0);
    if (v.ndim == 0) return ItemToRuby(v, v.data);
    // Depth-first: stack[d] is the Array being filled for dimension d.
    std::vector<VALUE> stack(static_cast<size_t>(v.ndim));
    VALUE root = rb_ary_new();
    stack[0] = root;
    if (v.n_items() == 0) {
      // Build the empty nesting up to the first zero extent.
      VALUE cur = root;
      for (size_t d = 0; d + 1 < v.shape.size() && v.shape[d] > 0; ++d) {
        for (int64_t i = 0; i < v.shape[d]; ++i) {
          VALUE inner = rb_ary_new();
          rb_ary_push(cur, inner);
          if (i + 1 == v.shape[d]) cur = inner;
        }
      }
      return root;
    }
    for (size_t d = 1; d < stack.size(); ++d) {
      stack[d] = rb_ary_new();
      rb_ary_push(stack[d - 1], stack[d]);
    }
    const size_t last = stack.size() - 1;
    while (true) {
      rb_ary_push(stack[last], ItemToRuby(v, mv::GetItemPointer(v, idx.data())));
      size_t d = last;
      while (true) {
        if (++idx[d] < v.shape[d]) break;
        idx[d] = 0;
        if (d == 0) return root;
        --d;
      }
      for (size_t k = d + 1; k < stack.size(); ++k) {
        stack[k] = rb_ary_new();
        rb_ary_push(stack[k - 1], stack[k]);
      }
    }
  });
}

// #to_arrow(allow_copy = false): a Ferry::Array (1-D fixed-width, 2-D fixed-size list) or a
// Ferry::Tensor (N-D) over the view's memory, zero-copy when dimension 0 is outermost and the
// items are dense. The array keeps the Ruby view (and so the exporter) alive.
VALUE ToArrow(int argc, VALUE* argv, VALUE self) {
  VALUE allow_copy;
  rb_scan_args(argc, argv, "01", &allow_copy);
  MemoryViewObject* m = Get(self);
  return Guarded([&](VALUE* exc) {
    mv::FromViewOptions options;
    options.allow_copy = RTEST(allow_copy);
    auto array = mv::ArrayFromView(m->view, options);
    if (!array.ok()) {
      *exc = MakeError(eError, "Ferry::MemoryView#to_arrow", array.status());
      return Qnil;
    }
    return WrapArray(std::make_shared<const ferry::Array>(std::move(array).ValueOrDie()));
  });
}

}  // namespace

void InitMemoryView() {
  /* A consumer of any Ruby MemoryView, held as a ferry memory view. */
  cMemoryView = rb_define_class_under(mFerry, "MemoryView", rb_cObject);
  rb_define_alloc_func(cMemoryView, Alloc);
  rb_define_const(cMemoryView, "SIMPLE", INT2NUM(RUBY_MEMORY_VIEW_SIMPLE));
  rb_define_const(cMemoryView, "WRITABLE", INT2NUM(RUBY_MEMORY_VIEW_WRITABLE));
  rb_define_const(cMemoryView, "FORMAT", INT2NUM(RUBY_MEMORY_VIEW_FORMAT));
  rb_define_const(cMemoryView, "MULTI_DIMENSIONAL", INT2NUM(RUBY_MEMORY_VIEW_MULTI_DIMENSIONAL));
  rb_define_const(cMemoryView, "STRIDES", INT2NUM(RUBY_MEMORY_VIEW_STRIDES));
  rb_define_const(cMemoryView, "ROW_MAJOR", INT2NUM(RUBY_MEMORY_VIEW_ROW_MAJOR));
  rb_define_const(cMemoryView, "COLUMN_MAJOR", INT2NUM(RUBY_MEMORY_VIEW_COLUMN_MAJOR));
  rb_define_const(cMemoryView, "ANY_CONTIGUOUS", INT2NUM(RUBY_MEMORY_VIEW_ANY_CONTIGUOUS));
  rb_define_const(cMemoryView, "INDIRECT", INT2NUM(RUBY_MEMORY_VIEW_INDIRECT));
  rb_define_method(cMemoryView, "initialize", RUBY_METHOD_FUNC(Initialize), -1);
  rb_define_method(cMemoryView, "release", RUBY_METHOD_FUNC(Release), 0);
  rb_define_method(cMemoryView, "released?", RUBY_METHOD_FUNC(ReleasedP), 0);
  rb_define_method(cMemoryView, "obj", RUBY_METHOD_FUNC(Obj), 0);
  rb_define_method(cMemoryView, "format", RUBY_METHOD_FUNC(Format), 0);
  rb_define_method(cMemoryView, "item_size", RUBY_METHOD_FUNC(ItemSize), 0);
  rb_define_method(cMemoryView, "ndim", RUBY_METHOD_FUNC(Ndim), 0);
  rb_define_method(cMemoryView, "byte_size", RUBY_METHOD_FUNC(ByteSize), 0);
  rb_define_method(cMemoryView, "readonly?", RUBY_METHOD_FUNC(ReadonlyP), 0);
  rb_define_method(cMemoryView, "address", RUBY_METHOD_FUNC(Address), 0);
  rb_define_method(cMemoryView, "shape", RUBY_METHOD_FUNC(Shape), 0);
  rb_define_method(cMemoryView, "strides", RUBY_METHOD_FUNC(Strides), 0);
  rb_define_method(cMemoryView, "[]", RUBY_METHOD_FUNC(Aref), -1);
  rb_define_method(cMemoryView, "to_a", RUBY_METHOD_FUNC(ToA), 0);
  rb_define_method(cMemoryView, "to_arrow", RUBY_METHOD_FUNC(ToArrow), -1);
}

}  // namespace ferry_ruby
