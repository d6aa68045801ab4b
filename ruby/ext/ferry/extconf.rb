# frozen_string_literal: true

# RubyGems' entry to build the extension: configure ferry's CMake project (Release, the Ruby
# extension only) in <gem>/build/ruby-gem with this Ruby, and write a Makefile whose `all` builds
# ferry_ruby and whose `install` puts ferry/ferry.so where RubyGems collects it (sitearchdir).
# Ninja is used where it is installed. FERRY_CMAKE_ARGS adds CMake arguments (shell words), e.g.
# `FERRY_CMAKE_ARGS="-DFERRY_WERROR=ON" gem install ferry`; CI passes the test tree's flags
# (scripts/trees.sh), so ccache serves this build the objects that tree compiled.
require "etc"
require "rbconfig"
require "shellwords"

root = File.expand_path("../../..", __dir__)
# Two levels below the source root, like every build tree, so ccache hashes the same relative paths.
build = File.join(root, "build", "ruby-gem")
cmake = ENV.fetch("CMAKE", "cmake")
configure = [cmake, "-S", root, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
             "-DFERRY_BUILD_TESTS=OFF", "-DFERRY_BUILD_TOOLS=OFF", "-DFERRY_BUILD_RUBY=ON",
             "-DRuby_EXECUTABLE=#{RbConfig.ruby}"]
ninja = ENV.fetch("PATH", "").split(File::PATH_SEPARATOR).any? { |d| File.executable?(File.join(d, "ninja")) }
configure += ["-G", "Ninja"] if ninja
configure += Shellwords.split(ENV.fetch("FERRY_CMAKE_ARGS", ""))
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
