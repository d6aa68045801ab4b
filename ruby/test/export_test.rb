# frozen_string_literal: true

require_relative "test_helper"

# Ferry's exporters read through Ruby's own consumer, Fiddle::MemoryView: values, shape,
# strides, format, item_size and the read-only flag against hand-computed values; request flags.
class ExportTest < Test::Unit::TestCase
  include FerryTestHelper
  MV = Ferry::MemoryView

  def test_buffer_2d_through_fiddle
    view = Fiddle::MemoryView.new(int32_buffer([2, 3]))
    assert_equal(["l", 4, 2, [2, 3], [12, 4], false, 24],
                 [view.format, view.item_size, view.ndim, view.shape, view.strides,
                  view.readonly?, view.byte_size])
    assert_equal(5, view[1, 2])
    assert_equal(3, view[1, 0])
    assert_equal((0...6).to_a.pack("l*"), view.to_s)
  ensure
    view&.release
  end

  def test_readonly_buffer_refuses_writable
    buffer = int32_buffer([4], readonly: true)
    view = Fiddle::MemoryView.new(buffer)
    assert_true(view.readonly?)
    view.release
    error = assert_raise(ArgumentError) { MV.new(buffer, MV::WRITABLE) }
    assert_match(/WRITABLE was requested but the memory is read-only/, error.message)
    assert_false(MV.new(int32_buffer([4]), MV::WRITABLE).readonly?)
  end

  def test_array_is_readonly_1d_view
    array = Ferry::Array.from_json("g", "[1.5, -2.25, 3.0]")
    view = Fiddle::MemoryView.new(array)
    assert_equal(["d", 8, 1, [3], [8], true], [view.format, view.item_size, view.ndim,
                                              view.shape, view.strides, view.readonly?])
    assert_equal([1.5, -2.25, 3.0], (0...3).map { |i| view[i] })
    assert_equal(array.buffer_address(1), MV.new(array).address)
  ensure
    view&.release
  end

  def test_fixed_size_list_is_2d
    list = MV.new(int32_buffer([3, 2])).to_arrow
    assert_equal("+w:2", list.format)
    view = Fiddle::MemoryView.new(list)
    assert_equal([[3, 2], [8, 4], "l"], [view.shape, view.strides, view.format])
    assert_equal(5, view[2, 1])
  ensure
    view&.release
  end

  def test_tensor_honours_permutation
    # Logical [2, 3, 4] int64 items stored with the inner dimensions column-major: element
    # (i, j, k) holds 100 i + 10 j + k at byte 96 i + 8 j + 24 k.
    data = Array.new(24, 0)
    2.times { |i| 3.times { |j| 4.times { |k| data[12 * i + j + 3 * k] = 100 * i + 10 * j + k } } }
    source = Ferry::Buffer.new(data.pack("q*"), format: "q", shape: [2, 3, 4], strides: [96, 8, 24])
    tensor = MV.new(source).to_arrow
    assert_instance_of(Ferry::Tensor, tensor)
    assert_equal([2, 3, 4], tensor.shape)
    view = Fiddle::MemoryView.new(tensor)
    assert_equal([[2, 3, 4], [96, 8, 24], "q", 8], [view.shape, view.strides, view.format,
                                                    view.item_size])
    assert_equal(123, view[1, 2, 3])
    assert_equal(12, view[0, 1, 2])
  ensure
    view&.release
  end

  def test_contiguity_flags
    row = int32_buffer([2, 3])
    col = Ferry::Buffer.new((0...6).to_a.pack("l*"), format: "l", shape: [2, 3], strides: [4, 8])
    assert_equal([2, 3], MV.new(row, MV::ROW_MAJOR).shape)
    assert_equal([4, 8], MV.new(col, MV::COLUMN_MAJOR).strides)
    assert_equal([4, 8], MV.new(col, MV::ANY_CONTIGUOUS).strides)
    assert_raise_message(/COLUMN_MAJOR was requested/) { MV.new(row, MV::COLUMN_MAJOR) }
    assert_raise_message(/ROW_MAJOR was requested/) { MV.new(col, MV::ROW_MAJOR) }
    strided = Ferry::Buffer.new((0...6).to_a.pack("l*"), format: "l", shape: [3], strides: [8])
    assert_raise_message(/ANY_CONTIGUOUS/) { MV.new(strided, MV::ANY_CONTIGUOUS) }
    assert_equal([0, 2, 4], MV.new(strided).to_a)
  end

  def test_arrays_that_cannot_export
    with_nulls = Ferry::Array.from_json("i", "[1, null]")
    assert_raise_message(/null/) { MV.new(with_nulls) }
    assert_raise(ArgumentError) { Fiddle::MemoryView.new(Ferry::Array.from_json("u", '["a"]')) }
  end

  def test_bad_buffer_layouts_raise
    assert_raise_message(/outside the 16-byte buffer/) do
      Ferry::Buffer.new(16, format: "l", shape: [5])
    end
    assert_raise_message(/outside/) { Ferry::Buffer.new(16, format: "l", shape: [4], strides: [-4]) }
    assert_raise_message(/format "z"/) { Ferry::Buffer.new(4, format: "z") }
    assert_raise(TypeError) { Ferry::Buffer.new(4, shape: "x") }
  end
end
