// Item formats from Ruby: ferry's pack-template parser (ferry::memview::ParseItemFormat) and, for
// comparison, Ruby's own (rb_memory_view_parse_item_format), with the same result shape.
#include "ferry/memview/format.hpp"

#include "ferry_ext.hpp"

namespace ferry_ruby {
namespace {

namespace mv = ferry::memview;

// One member as [format letter, offset, size, repeat, native_size, little_endian].
VALUE Member(char format, int64_t offset, int64_t size, int64_t repeat, bool native, bool little) {
  return rb_ary_new_from_args(6, rb_str_new(&format, 1), LL2NUM(offset), LL2NUM(size),
                              LL2NUM(repeat), native ? Qtrue : Qfalse, little ? Qtrue : Qfalse);
}

// Ferry::MemoryView.parse_format(format): [item_size, [member, ...]] from ferry's parser; raises
// ArgumentError naming the offset of the bad token.
VALUE ParseFormat(VALUE, VALUE format) {
  StringValueCStr(format);
  return Guarded([&](VALUE* exc) {
    auto desc = mv::ParseItemFormat(RSTRING_PTR(format));
    if (!desc.ok()) {
      *exc = MakeError(rb_eArgError, "Ferry::MemoryView.parse_format", desc.status());
      return Qnil;
    }
    VALUE members = rb_ary_new();
    for (const mv::ItemComponent& c : desc->components) {
      rb_ary_push(members,
                  Member(c.format, c.offset, c.size, c.repeat, c.native_size, c.little_endian));
    }
    return rb_ary_new_from_args(2, LL2NUM(desc->item_size), members);
  });
}

// Ferry::MemoryView.item_size_of(format): the item size ferry's parser gives.
VALUE ItemSizeOf(VALUE klass, VALUE format) { return rb_ary_entry(ParseFormat(klass, format), 0); }

// Ferry::MemoryView.ruby_parse_format(format): the same from Ruby's parser, or nil where Ruby
// rejects the format.
VALUE RubyParseFormat(VALUE, VALUE format) {
  const char* text = StringValueCStr(format);
  rb_memory_view_item_component_t* members = nullptr;
  size_t n = 0;
  const char* err = nullptr;
  ssize_t size = rb_memory_view_parse_item_format(text, &members, &n, &err);
  if (size < 0) return Qnil;
  VALUE out = rb_ary_new();
  for (size_t i = 0; i < n; ++i) {
    const rb_memory_view_item_component_t& c = members[i];
    rb_ary_push(
        out, Member(c.format, static_cast<int64_t>(c.offset), static_cast<int64_t>(c.size),
                    static_cast<int64_t>(c.repeat), c.native_size_p != 0, c.little_endian_p != 0));
  }
  xfree(members);
  return rb_ary_new_from_args(2, SSIZET2NUM(size), out);
}

// Ferry::MemoryView.ruby_item_size(format): rb_memory_view_item_size_from_format, nil on error.
VALUE RubyItemSize(VALUE, VALUE format) {
  const char* err = nullptr;
  ssize_t size = rb_memory_view_item_size_from_format(StringValueCStr(format), &err);
  return size < 0 ? Qnil : SSIZET2NUM(size);
}

}  // namespace

void InitFormat() {
  rb_define_singleton_method(cMemoryView, "parse_format", RUBY_METHOD_FUNC(ParseFormat), 1);
  rb_define_singleton_method(cMemoryView, "item_size_of", RUBY_METHOD_FUNC(ItemSizeOf), 1);
  rb_define_singleton_method(cMemoryView, "ruby_parse_format", RUBY_METHOD_FUNC(RubyParseFormat),
                             1);
  rb_define_singleton_method(cMemoryView, "ruby_item_size", RUBY_METHOD_FUNC(RubyItemSize), 1);
}

}  // namespace ferry_ruby
