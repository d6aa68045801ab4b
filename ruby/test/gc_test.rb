# frozen_string_literal: true

require_relative "test_helper"

# Lifetimes: exported objects survive GC.start and GC.compact while a view is held; releases
# are counted exactly once; releasing twice, or after the exporter's last reference is gone, is
# safe.
class GcTest < Test::Unit::TestCase
  include FerryTestHelper
  MV = Ferry::MemoryView

  def test_export_survives_gc_and_compaction
    view = Fiddle::MemoryView.new(MV.new(int32_buffer([1000])).to_arrow)
    # The array's only reference is the view's: churn the heap, collect and compact.
    100.times { Array.new(1000) { |i| i.to_s } }
    GC.start(full_mark: true, immediate_sweep: true)
    GC.compact
    assert_equal([0, 500, 999], [view[0], view[500], view[999]])
    assert_instance_of(Ferry::Array, view.obj)
  ensure
    view&.release
  end

  def test_consumer_keeps_fiddle_pointer_alive_through_compaction
    pointer = Fiddle::Pointer.malloc(64, Fiddle::RUBY_FREE)
    pointer[0, 64] = (0...16).to_a.pack("l*")
    address = pointer.to_i
    array = MV.new(pointer).to_arrow
    pointer = nil # rubocop:disable Lint/UselessAssignment
    GC.start
    GC.compact
    GC.start
    assert_equal(address, array.buffer_address(1))
    assert_equal((0...16).to_a, array.to_a.each_slice(4).map { |b| b.pack("C*").unpack1("l") })
  end

  def test_release_counts_exactly_once
    tensor = MV.new(int32_buffer([2, 2, 2])).to_arrow
    first = Fiddle::MemoryView.new(tensor)
    second = Fiddle::MemoryView.new(tensor)
    assert_equal(2, Ferry.export_count(tensor))
    first.release
    first.release
    assert_equal(1, Ferry.export_count(tensor))
    second.release
    assert_equal(0, Ferry.export_count(tensor))
    assert_nil(second[0, 0, 0]) # Fiddle answers nil once released; nothing is read
  end

  def test_release_after_exporter_is_gone
    view = MV.new(int32_buffer([8]))
    array = view.to_arrow
    view.release
    GC.start
    GC.compact
    # The array holds the export: the buffer is alive though nothing Ruby-side names it.
    assert_equal((0...8).to_a, array.to_a)
    fiddle = Fiddle::MemoryView.new(array)
    array = nil # rubocop:disable Lint/UselessAssignment
    GC.start
    assert_equal(7, fiddle[7])
    fiddle.release
    GC.start
    GC.compact
    fiddle.release
    view.release
    assert_true(view.released?)
  end

  def test_views_dropped_without_release_are_collected
    buffer = int32_buffer([4])
    10.times { Fiddle::MemoryView.new(buffer) }
    10.times { MV.new(buffer) }
    GC.start(full_mark: true, immediate_sweep: true)
    GC.start(full_mark: true, immediate_sweep: true)
    assert_operator(Ferry.export_count(buffer), :<, 20)
  end
end
