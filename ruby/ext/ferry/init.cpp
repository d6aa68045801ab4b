// Init_ferry: the Ferry module, its error classes and the helpers every class shares.
#include "ferry/core/version.hpp"
#include "ferry_ext.hpp"

namespace ferry_ruby {

VALUE mFerry = Qnil;
VALUE eError = Qnil;

VALUE MakeError(VALUE klass, const std::string& what, const ferry::Status& status) {
  if (klass == eError) klass = ErrorClassFor(status.code());
  std::string message = what + ": " + status.message();
  return rb_exc_new(klass, message.data(), static_cast<long>(message.size()));
}

std::string& LastExportError() {
  thread_local std::string message;
  return message;
}

void* AddressOf(VALUE obj) {
  if (!RB_INTEGER_TYPE_P(obj)) {
    if (!rb_respond_to(obj, rb_intern("to_i"))) {
      rb_raise(rb_eTypeError, "an address must be an Integer or respond to #to_i (got %s)",
               rb_obj_classname(obj));
    }
    obj = rb_funcall(obj, rb_intern("to_i"), 0);
  }
  return reinterpret_cast<void*>(static_cast<uintptr_t>(NUM2ULL(obj)));
}

}  // namespace ferry_ruby

extern "C" __attribute__((visibility("default"))) void Init_ferry() {
  using namespace ferry_ruby;
  mFerry = rb_define_module("Ferry");
  /* The version of the ferry library built into this extension; the gem's version is the same. */
  rb_define_const(mFerry, "VERSION", rb_obj_freeze(rb_str_new_cstr(ferry::Version())));
  /* Raised when ferry refuses an operation; the message names what was wrong. */
  eError = rb_define_class_under(mFerry, "Error", rb_eStandardError);
  InitStatusCode();
  InitBuffer();
  InitArray();
  InitMemoryView();
  InitFormat();
  InitIpc();
}
