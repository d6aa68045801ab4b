// Ferry::Error's subclasses, one per row of the error table (ferry/core/status_code.hpp), and
// the lookup that picks one for a failed Status.
#include "ferry/core/status_code.hpp"

#include <array>
#include <string>

#include "ferry_ext.hpp"

namespace ferry_ruby {

namespace {

// Each row's class by StatusCode (registered with the GC as module constants).
std::array<VALUE, static_cast<size_t>(ferry::StatusCode::kIOError) + 1> g_classes{};

// Ferry.status_codes: the table's rows as hashes, the same rows every face maps from.
VALUE StatusCodes(VALUE /*self*/) {
  VALUE out = rb_ary_new();
  for (const ferry::StatusCodeInfo& row : ferry::StatusCodeTable()) {
    VALUE h = rb_hash_new();
    rb_hash_aset(h, ID2SYM(rb_intern("name")), rb_str_new_cstr(row.name));
    rb_hash_aset(h, ID2SYM(rb_intern("error_class")), rb_str_new_cstr(row.error_class));
    rb_hash_aset(h, ID2SYM(rb_intern("c_code")), INT2NUM(row.c_code));
    rb_hash_aset(h, ID2SYM(rb_intern("grpc_code")), INT2NUM(row.grpc_code));
    rb_ary_push(out, h);
  }
  return out;
}

// Ferry.raise_status(name, message): raises what a failure with that code raises (for tests).
VALUE RaiseStatus(VALUE /*self*/, VALUE name, VALUE message) {
  const std::string wanted = StringValueCStr(name);
  for (const ferry::StatusCodeInfo& row : ferry::StatusCodeTable()) {
    if (wanted == row.name) {
      rb_exc_raise(rb_exc_new_str(ErrorClassFor(row.code), StringValue(message)));
    }
  }
  rb_raise(rb_eArgError, "no error code named \"%s\"", wanted.c_str());
}

}  // namespace

VALUE ErrorClassFor(ferry::StatusCode code) {
  const auto i = static_cast<size_t>(code);
  return i < g_classes.size() && g_classes[i] != 0 ? g_classes[i] : eError;
}

void InitStatusCode() {
  for (const ferry::StatusCodeInfo& row : ferry::StatusCodeTable()) {
    VALUE cls = rb_define_class_under(mFerry, row.error_class, eError);
    rb_define_const(cls, "CODE", rb_obj_freeze(rb_str_new_cstr(row.name)));
    g_classes[static_cast<size_t>(row.code)] = cls;
  }
  rb_define_module_function(mFerry, "status_codes", StatusCodes, 0);
  rb_define_module_function(mFerry, "raise_status", RaiseStatus, 2);
}

}  // namespace ferry_ruby
