# frozen_string_literal: true

require_relative "test_helper"
require "tmpdir"

# Arrow IPC from Ruby (paths and Strings, stream and file formats) and the C data interface
# (export_to_c / import_from_c through memory Fiddle allocates).
class IpcTest < Test::Unit::TestCase
  include FerryTestHelper

  def columns
    {
      "ints" => Ferry::MemoryView.new(int32_buffer([3])).to_arrow,
      "names" => Ferry::Array.from_json("u", '["a", null, "ccc"]'),
      "pairs" => Ferry::MemoryView.new(int32_buffer([3, 2])).to_arrow
    }
  end

  def expected
    { "ints" => [0, 1, 2], "names" => ["a", nil, "ccc"], "pairs" => [[0, 1], [2, 3], [4, 5]] }
  end

  def test_string_round_trip_both_formats
    %i[stream file].each do |format|
      bytes = Ferry::IPC.write(columns, format: format)
      assert_equal(Encoding::ASCII_8BIT, bytes.encoding)
      assert_equal(format == :file, bytes.start_with?("ARROW1"), format.to_s)
      batches = Ferry::IPC.read(string: bytes)
      assert_equal(1, batches.size)
      assert_equal(expected, batches[0].to_h.transform_values(&:to_a))
    end
  end

  def test_path_round_trip_and_views_of_read_columns
    Dir.mktmpdir do |dir|
      path = File.join(dir, "t.arrow")
      batch = Ferry::IPC.record_batch(%w[ints pairs], columns.values_at("ints", "pairs"))
      Ferry::IPC.write([batch, batch], path, format: :file)
      batches = Ferry::IPC.read(path)
      assert_equal(2, batches.size)
      pairs = batches[1].to_h["pairs"]
      view = Fiddle::MemoryView.new(pairs)
      assert_equal([[3, 2], "l", 5], [view.shape, view.format, view[2, 1]])
      view.release
    end
  end

  def test_bad_input_raises
    # One class per error code, as Python maps them, all under Ferry::Error.
    bad = assert_raise(Ferry::InvalidArgumentError) { Ferry::IPC.read(string: "not arrow at all") }
    assert_kind_of(Ferry::Error, bad)
    missing = assert_raise(Ferry::NotFoundError) { Ferry::IPC.read("/nonexistent/ferry.arrow") }
    assert_match(%r{/nonexistent/ferry\.arrow}, missing.message)
    assert_raise(ArgumentError) { Ferry::IPC.write([Ferry::Array.from_json("i", "[1]")]) }
    assert_raise(ArgumentError) { Ferry::IPC.write(columns, format: :feather) }
  end

  def test_children_mirror_cpp_and_python
    batch = Ferry::IPC.read(string: Ferry::IPC.write(columns))[0]
    assert_equal(3, batch.n_children)
    assert_equal(%w[ints names pairs], (0...batch.n_children).map { |i| batch.child_name(i) })
    assert_equal(batch.children.map(&:to_a), expected.values)
    assert_equal([0, 1, 2, 3, 4, 5], batch.child(2).child(0).to_a) # a list's values, whole
    assert_raise(IndexError) { batch.child(3) }
  end

  def test_c_data_interface_round_trip
    schema = Fiddle::Pointer.malloc(72, Fiddle::RUBY_FREE)
    array = Fiddle::Pointer.malloc(80, Fiddle::RUBY_FREE)
    source = Ferry::MemoryView.new(int32_buffer([5])).to_arrow
    source.export_to_c(schema, array)
    imported = Ferry::Array.import_from_c(schema, array)
    assert_equal([0, 1, 2, 3, 4], imported.to_a)
    assert_equal(source.buffer_address(1), imported.buffer_address(1))
    # Both structs were moved: their release pointers (the 7th and 8th words) are NULL now.
    assert_equal(0, schema[56, 8].unpack1("Q"))
    assert_equal(0, array[64, 8].unpack1("Q"))
  end
end
