# frozen_string_literal: true

# Run every ruby/test/*_test.rb with test-unit (which exits non-zero when any test fails).
# Usage: ruby -I <build>/ruby -I ruby/lib ruby/test/run_all.rb
require "test/unit"
Dir.glob(File.join(__dir__, "*_test.rb")).sort.each { |f| require f }
