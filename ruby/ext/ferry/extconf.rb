# frozen_string_literal: true

# RubyGems' entry to build the extension: configure ferry's CMake project (Release, the Ruby
# extension only) in ./build with this Ruby, and write a Makefile whose `all` builds ferry_ruby
# and whose `install` puts ferry/ferry.so where RubyGems collects it (sitearchdir), then removes
# the build tree.
require "etc"
require "rbconfig"
require "shellwords"

root = File.expand_path("../../..", __dir__)
build = File.expand_path("build", __dir__)
cmake = ENV.fetch("CMAKE", "cmake")
configure = [cmake, "-S", root, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
             "-DFERRY_BUILD_TESTS=OFF", "-DFERRY_BUILD_TOOLS=OFF", "-DFERRY_BUILD_RUBY=ON",
             "-DRuby_EXECUTABLE=#{RbConfig.ruby}"]
puts configure.shelljoin
system(*configure) or abort "ferry: CMake could not configure #{root} (see the output above)"

dest = File.join(RbConfig::CONFIG["sitearchdir"], "ferry")
jobs = ENV.fetch("FERRY_BUILD_JOBS", Etc.nprocessors.to_s)
File.write("Makefile", <<~MAKE)
  all:
  \t#{[cmake, "--build", build, "--target", "ferry_ruby", "-j", jobs].shelljoin}
  install: all
  \tmkdir -p #{dest.shellescape}
  \tcp #{File.join(build, "ruby", "ferry", "ferry.so").shellescape} #{dest.shellescape}/ferry.so
  clean:
  \t@:
MAKE
