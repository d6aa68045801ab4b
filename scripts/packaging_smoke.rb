# frozen_string_literal: true

# The gem's smoke test (scripts/test_packaging.sh runs it with GEM_HOME set to a fresh one):
# `require "ferry"` loads the extension the gem built, and values and IPC bytes round-trip.
require "ferry"

loaded = $LOADED_FEATURES.grep(%r{ferry/ferry\.so\z}).first
home = File.realpath(ENV.fetch("GEM_HOME"))
raise "ferry.so came from #{loaded.inspect}, not #{home}" unless loaded && File.realpath(loaded).start_with?(home)

a = Ferry::Array.from_json("l", "[1, null, 3]")
raise "values: #{a.to_a.inspect}" unless a.to_a == [1, nil, 3]

bytes = Ferry::IPC.write({ "x" => a })
batches = Ferry::IPC.read(string: bytes)
raise "IPC: #{batches.map(&:to_a).inspect}" unless batches.map(&:to_a) == [[{ "x" => 1 }, { "x" => nil }, { "x" => 3 }]]
puts "packaging smoke: ferry gem from #{loaded}: OK"
