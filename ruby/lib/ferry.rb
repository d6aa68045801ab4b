# frozen_string_literal: true

# ferry's Ruby face: Ferry::Buffer, Ferry::Array and Ferry::Tensor export Ruby MemoryViews;
# Ferry::MemoryView consumes any exporter's view; Ferry::IPC reads and writes Arrow IPC.
require "json"
require "ferry/ferry"

module Ferry
  class Array
    # Every value as Ruby objects, through ferry's JSON rendering (docs/json.md): integers,
    # floats, strings, nil for nulls, nested Arrays for lists.
    def to_a
      JSON.parse(to_json)
    end

    # The value at +index+ (negative counts from the end), as #to_a renders it.
    def [](index)
      to_a[index]
    end

    # The children of a nested array (a record batch's columns, a list's values) as an Array of
    # Ferry::Arrays sharing this array's buffers, as Python's Array.children.
    def children
      (0...n_children).map { |i| child(i) }
    end

    # A record batch (any nested array) as a Hash of child name => Ferry::Array.
    def to_h
      (0...n_children).to_h { |i| [child_name(i), child(i)] }
    end
  end

  class MemoryView
    # Open a view of +obj+, yield it, and release it whatever the block does.
    def self.open(obj, flags = 0)
      view = new(obj, flags)
      begin
        yield view
      ensure
        view.release
      end
    end
  end

  # Arrow IPC in the stream and file formats.
  module IPC
    module_function

    # The record batches (struct Ferry::Arrays) of an IPC file or stream at +path+, or in the
    # String given as +string:+. A path is memory-mapped (zero-copy); a String is copied once.
    def read(path = nil, string: nil)
      raise ArgumentError, "Ferry::IPC.read: give a path or string:, not both" if path && string
      return read_bytes(string) if string
      raise ArgumentError, "Ferry::IPC.read: give a path or string:" unless path

      read_path(path.to_s)
    end

    # Write +batches+ (a struct Ferry::Array, an Array of them, or a Hash of name => column) to
    # +path+, or return the bytes as a binary String when +path+ is nil. +format+ is :stream or
    # :file.
    def write(batches, path = nil, format: :stream)
      batches = [record_batch(batches.keys.map(&:to_s), batches.values)] if batches.is_a?(Hash)
      batches = [batches] unless batches.is_a?(::Array)
      return write_bytes(batches, format) if path.nil?

      write_path(batches, path.to_s, format)
      path
    end
  end
end
