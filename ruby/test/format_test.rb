# frozen_string_literal: true

require_relative "test_helper"

# ferry's pack-template parser against Ruby's own (rb_memory_view_parse_item_format and
# rb_memory_view_item_size_from_format): item sizes, member offsets, sizes, repeats, byte order
# and native-size flags; and the values both sides decode from the same bytes.
class FormatTest < Test::Unit::TestCase
  MV = Ferry::MemoryView

  FORMATS = %w[
    c C s S n v i I l L N V f e g q Q d E G j J
    c3 C16 q2 dd CCC iqc s! S_ i! I_ l! L! q! Q_ j! J! i!! s!_
    s< s> S< S> i< i> l< l> q< q> j< J> s!< l!> q_>
    |iqc |ci |cq |c3d |x2s |csq! |sC |q<c |cl! |Cd2 |scx |lq |i3c x3i cx3 |xq
  ].freeze

  def test_ferry_and_ruby_parsers_agree
    FORMATS.each do |format|
      ruby = MV.ruby_parse_format(format)
      refute_nil(ruby, "Ruby rejects #{format}")
      assert_equal(ruby, MV.parse_format(format), "members of #{format.inspect}")
      assert_equal(MV.ruby_item_size(format), MV.item_size_of(format), "size of #{format}")
    end
  end

  def test_hand_computed_alignment
    assert_equal(24, MV.item_size_of("|iqc"))
    assert_equal(13, MV.item_size_of("iqc"))
    assert_equal(16, MV.item_size_of("|c s2 x q<"))
    assert_equal([8, 8, 1], MV.parse_format("|c s2 x q<")[1].last.values_at(1, 2, 3))
    assert_equal(8, MV.item_size_of("l!"))
    assert_equal(4, MV.item_size_of("l"))
    assert_equal([false, true], MV.parse_format("s>s<")[1].map { |m| m[5] })
  end

  def test_whitespace_is_ignored_by_ferry
    # Ruby 3.1 agrees on the size but lists the blank as a member; ferry skips it.
    assert_equal(MV.ruby_item_size("c s"), MV.item_size_of("c s"))
    assert_equal(MV.parse_format("cs"), MV.parse_format("c s"))
    assert_equal(MV.parse_format("|cq"), MV.parse_format("| c q"))
  end

  def test_both_reject_bad_formats
    %w[z c< <i i<> q3< x!].each do |format|
      assert_nil(MV.ruby_parse_format(format), "Ruby accepts #{format}")
      assert_raise(ArgumentError, format) { MV.item_size_of(format) }
    end
    assert_raise_message(/offset 1/) { MV.item_size_of("iz") }
  end

  def test_decoded_values_agree_with_fiddle
    random = Random.new(8)
    FORMATS.each do |format|
      size = MV.item_size_of(format)
      bytes = Array.new(size * 3) { random.rand(256) }.pack("C*")
      buffer = Ferry::Buffer.new(bytes, format: format)
      fiddle = Fiddle::MemoryView.new(buffer)
      ferry = MV.new(buffer)
      assert_equal([3], ferry.shape)
      3.times do |i|
        expected = fiddle[i]
        actual = ferry[i]
        if expected.is_a?(Float) && expected.nan?
          assert_true(actual.nan?, "#{format}[#{i}]")
        else
          assert_equal(expected, actual, "#{format}[#{i}]")
        end
      end
      fiddle.release
    end
  end
end
