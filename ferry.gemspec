# frozen_string_literal: true

# The ferry gem: `gem build ferry.gemspec` packs ferry's C++ sources with the Ruby extension;
# `gem install` compiles the extension with CMake (ruby/ext/ferry/extconf.rb) and `require "ferry"`
# loads it. Building needs what scripts/setup.sh installs: a C++20 compiler, CMake, flatc, and the
# lz4, zstd, fmt, nlohmann-json (and optionally UCX) development packages.
Gem::Specification.new do |spec|
  spec.name = "ferry"
  spec.version = File.read(File.join(__dir__, "VERSION")).strip
  spec.summary = "Zero-copy Arrow and N-d array transport: the Ruby binding of libferry"
  spec.description = "Ruby MemoryViews over Arrow arrays and tensors, and Arrow IPC, from ferry's C++ library."
  spec.authors = ["The ferry authors"]
  spec.license = "Apache-2.0"
  spec.required_ruby_version = ">= 3.0"
  spec.files = Dir.chdir(__dir__) do
    Dir.glob(["VERSION", "CMakeLists.txt", "cmake/**/*", "include/**/*", "src/**/*", "proto/**/*",
              "scripts/layers.txt", "ruby/CMakeLists.txt", "ruby/ext/**/*", "ruby/lib/**/*.rb",
              "docs/ruby.md"])
       .select { |f| File.file?(f) }
  end
  spec.require_paths = ["ruby/lib"]
  spec.extensions = ["ruby/ext/ferry/extconf.rb"]
end
