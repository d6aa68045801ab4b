# frozen_string_literal: true

require_relative "test_helper"

# Ferry::MemoryView over other exporters' views: Fiddle::Pointer's memory becomes a ferry array
# without a copy; #[] and #to_a follow the format and strides, negative ones included.
class ConsumeTest < Test::Unit::TestCase
  include FerryTestHelper
  MV = Ferry::MemoryView

  def test_fiddle_pointer_goes_into_an_array_without_a_copy
    pointer = Fiddle::Pointer.malloc(32, Fiddle::RUBY_FREE)
    pointer[0, 32] = (1..32).to_a.pack("C*")
    view = MV.new(pointer)
    fiddle = Fiddle::MemoryView.new(pointer)
    assert_equal(["C", 1, [32], fiddle.readonly?],
                 [view.format, view.item_size, view.shape, view.readonly?])
    fiddle.release
    assert_equal(pointer.to_i, view.address)
    array = view.to_arrow
    assert_equal(pointer.to_i, array.buffer_address(1))
    assert_equal((1..32).to_a, array.to_a)
    pointer[0] = 200 # shared memory: the array sees the write
    assert_equal(200, array[0])
  end

  def test_negative_strides
    buffer = int32_buffer([2, 3], strides: [-12, -4], offset: 20)
    view = MV.new(buffer)
    assert_equal([-12, -4], view.strides)
    assert_equal([[5, 4, 3], [2, 1, 0]], view.to_a)
    assert_equal(0, view[1, 2])
    assert_equal(5, view[-2, -3])
    fiddle = Fiddle::MemoryView.new(buffer)
    assert_equal([[5, 4, 3], [2, 1, 0]], (0...2).map { |i| (0...3).map { |j| fiddle[i, j] } })
    assert_equal(4, fiddle.byte_size) # data is the last item: only its bytes lie ahead of it
    fiddle.release
    assert_raise_message(/layout cannot be shared|copy/) { view.to_arrow }
    assert_equal([[5, 4, 3], [2, 1, 0]], view.to_arrow(true).to_a)
  end

  def test_multi_member_and_byte_order
    bytes = [-2, 300, 1.5].pack("cs>d") + [7, -1, 2.5].pack("cs>d")
    buffer = Ferry::Buffer.new(bytes, format: "cs>d")
    view = MV.new(buffer)
    assert_equal([11, [2]], [view.item_size, view.shape])
    assert_equal([[-2, 300, 1.5], [7, -1, 2.5]], view.to_a)
    fiddle = Fiddle::MemoryView.new(buffer)
    assert_equal(view[1], fiddle[1])
    fiddle.release
    assert_raise(Ferry::UnimplementedError) { view.to_arrow } # multi-member items have no Arrow type
  end

  # Complex numbers are Ruby Complexes and booleans true or false (their bytes packed by Ruby's
  # own pack: `e`/`E` are little-endian 4- and 8-byte floats).
  def test_complex_and_boolean_items
    c64 = MV.new(Ferry::Buffer.new([1.5, -2.0, 0.25, 3.0].pack("e*"), format: "{complex64}<"))
    assert_equal([8, [2]], [c64.item_size, c64.shape])
    assert_equal([Complex(1.5, -2.0), Complex(0.25, 3.0)], c64.to_a)
    assert_equal(Complex(0.25, 3.0), c64[-1])
    c128 = MV.new(Ferry::Buffer.new([0.1, 1e300, -0.0, 7.0].pack("G*"), format: "{complex128}>",
                                    shape: [1, 2]))
    assert_equal([[Complex(0.1, 1e300), Complex(-0.0, 7.0)]], c128.to_a)
    flags = MV.new(Ferry::Buffer.new([1, 0, 1].pack("C*"), format: "{bool}"))
    assert_equal([true, false, true], flags.to_a)
    assert_equal(false, flags[1])
    mixed = MV.new(Ferry::Buffer.new([1, 0].pack("C*") + [2.5, -1.0].pack("E*") + [9].pack("s<"),
                                     format: "{bool}2{complex128}<s<"))
    assert_equal([[true, false, Complex(2.5, -1.0), 9]], mixed.to_a)
  end

  def test_zero_dimensions_and_empty
    scalar = MV.new(Ferry::Buffer.new([42].pack("q"), format: "q", shape: []))
    assert_equal([0, [], 42], [scalar.ndim, scalar.shape, scalar.to_a])
    assert_equal(42, scalar[])
    assert_equal([], MV.new(Ferry::Buffer.new(0, format: "l")).to_a)
  end

  def test_index_errors_and_release
    view = MV.new(int32_buffer([2, 2]))
    assert_raise_message(/out of range in dimension 1/) { view[0, 2] }
    assert_raise_message(/1 indices for 2 dimensions/) { view[0] }
    assert_raise(TypeError) { view[0, "a"] }
    view.release
    assert_true(view.released?)
    assert_raise_message(/released/) { view[0, 0] }
    view.release # a second release does nothing
  end

  def test_views_of_ferry_views_round_trip
    array = MV.new(int32_buffer([4, 2])).to_arrow
    again = MV.new(array).to_arrow
    assert_equal(MV.new(array).address, MV.new(again).address)
    assert_equal([[0, 1], [2, 3], [4, 5], [6, 7]], again.to_a)
  end
end
