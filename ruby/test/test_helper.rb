# frozen_string_literal: true

# Shared setup of the Ruby suite: test-unit, Fiddle (Ruby's own MemoryView consumer) and ferry.
require "test/unit"
require "fiddle"
require "ferry"

module FerryTestHelper
  # A Ferry::Buffer of int32 values 0...n (native order) viewed with +shape+.
  def int32_buffer(shape, **opts)
    n = shape.inject(1, :*)
    Ferry::Buffer.new((0...n).to_a.pack("l*"), format: "l", shape: shape, **opts)
  end
end
