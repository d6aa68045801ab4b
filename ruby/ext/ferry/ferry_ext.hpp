// Shared declarations of ferry's Ruby extension: the module and classes, the one place where
// ferry's Status becomes a Ruby exception, and the bridges between ferry and Ruby memory views.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "ferry/core/status.hpp"
#include "ferry/format/array.hpp"
#include "ferry/memview/memory_view.hpp"

// Ruby's headers come last and lose their memcpy macro (ruby_nonempty_memcpy), because ferry's
// headers and this extension call std::memcpy.
// clang-format off
#include <ruby.h>
#include <ruby/memory_view.h>
// clang-format on
#ifdef memcpy
#undef memcpy
#endif

namespace ferry_ruby {

/// The `Ferry` module and its classes (set by Init_ferry).
extern VALUE mFerry;
extern VALUE eError;
extern VALUE cBuffer;
extern VALUE cArray;
extern VALUE cTensor;
extern VALUE cMemoryView;

/// Run `body(&exc)` and raise `exc` if it set one. Every C++ object with a destructor lives
/// inside `body`, so it is destroyed before Ruby unwinds the stack with longjmp.
template <typename F>
VALUE Guarded(F&& body) {
  VALUE exc = Qnil;
  VALUE result = body(&exc);
  if (!NIL_P(exc)) rb_exc_raise(exc);
  return result;
}

/// A Ruby exception object whose message is `what` followed by ": " and the status's message.
/// With `klass` eError, the class follows the status's code as Python's exceptions do
/// (ErrorClassFor); any other class is used as given. Raise it with Guarded, never from inside
/// C++ scopes.
VALUE MakeError(VALUE klass, const std::string& what, const ferry::Status& status);

/// The Ferry::Error subclass the error table gives `code` (Ferry::InvalidArgumentError for
/// kInvalidArgument, ...; ferry/core/status_code.hpp).
VALUE ErrorClassFor(ferry::StatusCode code);

/// Define Ferry::Error's subclasses, one per row of the error table (Init_ferry calls it).
void InitStatusCode();

/// The message of the last failed export on this thread (Ruby's get function can only return
/// false); Ferry::MemoryView.new quotes it.
std::string& LastExportError();

/// Fill Ruby's `out` from ferry's `view` (which owns its memory through `view.owner`) after
/// checking it against Ruby's request `flags`; format, item_size, shape and strides are always
/// filled because Ruby's consumers read them whatever they asked. Returns false (recording the
/// reason) when the flags cannot be met.
bool ExportToRuby(VALUE obj, ferry::memview::MemoryView view, int flags, rb_memory_view_t* out);
/// The release function of every ferry exporter: frees what ExportToRuby allocated, once.
bool ReleaseRubyExport(VALUE obj, rb_memory_view_t* view);
/// Views of `obj` that ferry's exporters handed to Ruby and that are not yet released.
int64_t RubyExportCount(VALUE obj);

/// Wrap an owned ferry array as a Ferry::Array, or a Ferry::Tensor for
/// `arrow.fixed_shape_tensor` arrays.
VALUE WrapArray(std::shared_ptr<const ferry::Array> array);
/// The ferry array inside a Ferry::Array (raises TypeError for anything else).
const std::shared_ptr<const ferry::Array>& UnwrapArray(VALUE obj);

/// Convert a Ruby Integer or Fiddle::Pointer-like object (anything with #to_i) to an address.
void* AddressOf(VALUE obj);

/// Registration of each class, called once from Init_ferry.
void InitBuffer();
void InitArray();
void InitMemoryView();
void InitFormat();
void InitIpc();

}  // namespace ferry_ruby
