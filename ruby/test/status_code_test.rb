# frozen_string_literal: true

# The error table on the Ruby face, against expectations written from docs/architecture.md
# ("Errors"): one Ferry::Error subclass per code, raised for that code, and real failures raising
# the same classes. (The C, Python and gRPC faces: python/tests/test_status_code.py and
# tests/flight/test_grpc_status.py.)
require_relative "test_helper"

class StatusCodeTest < Test::Unit::TestCase
  EXPECTED = {
    "InvalidArgument" => Errno::EINVAL::Errno, "NotFound" => Errno::ENOENT::Errno,
    "AlreadyExists" => Errno::EEXIST::Errno, "FailedPrecondition" => Errno::EBUSY::Errno,
    "OutOfRange" => Errno::ERANGE::Errno, "Unavailable" => Errno::ECONNREFUSED::Errno,
    "DeadlineExceeded" => Errno::ETIMEDOUT::Errno, "Cancelled" => Errno::ECANCELED::Errno,
    "PermissionDenied" => Errno::EACCES::Errno, "Unauthenticated" => Errno::EPERM::Errno,
    "ResourceExhausted" => Errno::ENOMEM::Errno, "DataLoss" => Errno::EBADMSG::Errno,
    "Unimplemented" => Errno::ENOTSUP::Errno, "Internal" => Errno::ENOTRECOVERABLE::Errno,
    "IOError" => Errno::EIO::Errno
  }.freeze

  def class_of(name)
    Ferry.const_get(name == "IOError" ? "IOError" : "#{name}Error")
  end

  def test_the_table_is_as_documented
    rows = Ferry.status_codes
    assert_equal(EXPECTED.keys, rows.map { |r| r[:name] })
    rows.each do |row|
      assert_equal(EXPECTED[row[:name]], row[:c_code], row[:name])
      assert_same(class_of(row[:name]), Ferry.const_get(row[:error_class]))
    end
  end

  def test_each_code_raises_its_class
    EXPECTED.each_key do |name|
      cls = class_of(name)
      assert_operator(cls, :<, Ferry::Error)
      assert_equal(name, cls::CODE)
      raised = assert_raise(cls) { Ferry.raise_status(name, "what went wrong") }
      assert_same(cls, raised.class)
      assert_equal("what went wrong", raised.message)
    end
    assert_raise(ArgumentError) { Ferry.raise_status("NoSuchCode", "x") }
  end

  def test_real_failures_raise_the_table_classes
    assert_raise(Ferry::InvalidArgumentError) { Ferry::IPC.read(string: "not arrow at all") }
    assert_raise(Ferry::NotFoundError) { Ferry::IPC.read("/nonexistent/ferry.arrow") }
  end
end
