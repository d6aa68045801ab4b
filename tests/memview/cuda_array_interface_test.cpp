// The CUDA Array Interface bridge (no GPU needed: only descriptors are converted).
#include "ferry/memview/cuda_array_interface.hpp"

#include <gtest/gtest.h>

#include "support/test_util.hpp"

namespace ferry::memview {
namespace {

TEST(CudaArrayInterface, RoundTripsADeviceView) {
  CudaArrayInterface in;
  in.shape = {4, 5};
  in.typestr = "<f4";
  in.data = 0x7f0000001000;
  in.strides = {20, 4};
  ASSERT_OK_AND_ASSIGN(MemoryView v, FromCudaArrayInterface(in, nullptr, 0));
  EXPECT_EQ(v.device_type, ARROW_DEVICE_CUDA);
  EXPECT_EQ(v.device_id, 0);
  EXPECT_EQ(v.item_size, 4);
  EXPECT_EQ(v.format, "e");
  EXPECT_EQ(v.size, 80);
  EXPECT_TRUE(IsRowMajorContiguous(v));
  ASSERT_OK_AND_ASSIGN(CudaArrayInterface out, ToCudaArrayInterface(v));
  EXPECT_EQ(out.typestr, "<f4");
  EXPECT_EQ(out.shape, in.shape);
  EXPECT_EQ(out.strides, in.strides);
  EXPECT_EQ(out.data, in.data);
  EXPECT_EQ(out.version, 3);
  EXPECT_FALSE(out.stream.has_value());  // no event, no stream: the data is ready
}

TEST(CudaArrayInterface, RefusesWhatTheProtocolForbids) {
  CudaArrayInterface cai;
  cai.shape = {2};
  cai.typestr = "<i8";
  cai.stream = 0;
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "stream 0 is disallowed",
                     FromCudaArrayInterface(cai, nullptr, 0));
  cai.stream.reset();
  cai.has_mask = true;
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "masks are not supported",
                     FromCudaArrayInterface(cai, nullptr, 0));
  cai.has_mask = false;
  cai.version = 2;
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "version 2",
                     FromCudaArrayInterface(cai, nullptr, 0));
  cai.version = 3;
  cai.strides = {8, 8};
  ASSERT_RAISES_WITH(StatusCode::kInvalidArgument, "strides and shape differ",
                     FromCudaArrayInterface(cai, nullptr, 0));
  MemoryView host;
  ASSERT_RAISES_WITH(StatusCode::kUnimplemented, "describes CUDA memory",
                     ToCudaArrayInterface(host));
}

}  // namespace
}  // namespace ferry::memview
