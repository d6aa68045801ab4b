// The server-and-client fixture of the dipc suites (server_test.cpp, freer_test.cpp): every
// transport and body type, and the split shape; each case is instantiated once, in server_test.cpp.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ferry/dipc/client.hpp"
#include "ferry/dipc/server.hpp"
#include "ferry/transport/ucx.hpp"
#include "support/device_util.hpp"
#include "support/dipc_data.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"
#include "support/type_cases.hpp"

namespace ferry::dipc {

struct Shape {
  std::string transport;
  BodyType body;
  std::string name;
  bool split = false;  // metadata and bodies from separate URIs (the split shape)
};

inline std::vector<Shape> Shapes() {
  return {{"shm", BodyType::kBufferList, "ShmBufferList"},
          {"shm", BodyType::kPacked, "ShmPacked"},
          {"ucx", BodyType::kBufferList, "UcxBufferList"},
          {"ucx", BodyType::kPacked, "UcxPacked"},
          {"shm", BodyType::kBufferList, "ShmBufferListSplit", true},
          {"ucx", BodyType::kPacked, "UcxPackedSplit", true},
          {"ucx", BodyType::kBufferList, "UcxBufferListSplit", true}};
}

// A batch of `rows` rows (from `offset` of a generated column) of type case `t`, and the JSON
// rows ferry must give back.
struct Made {
  UniqueSchema schema;
  UniqueDeviceArray batch;
  nlohmann::json expected;
};

inline Result<Made> MakeBatch(size_t t, int64_t total, int64_t offset) {
  const testing::TypeCase& tc = testing::TypeCases()[t];
  auto [values, rendered] = testing::GenerateValues(tc, t * 7919 + 1, total, true);
  Field column = tc.field;
  column.name = "c";
  nlohmann::json rows = nlohmann::json::array();
  for (const nlohmann::json& v : values) rows.push_back(nlohmann::json{{"c", v}});
  FERRY_ASSIGN_OR_RAISE(
      Array batch, testing::SlicedArrayFromJson(testing::BatchField({column}), rows.dump(), offset,
                                                total - offset));
  Made m;
  m.batch = testing::ToCpuDeviceArray(std::move(batch), &m.schema);
  m.expected = nlohmann::json::array();
  for (int64_t i = offset; i < total; ++i) {
    m.expected.push_back(nlohmann::json{{"c", rendered[static_cast<size_t>(i)]}});
  }
  return m;
}

class ServerClient : public ::testing::TestWithParam<size_t> {
 protected:
  void SetUp() override {
    shape_ = Shapes()[GetParam()];
    if (shape_.transport == "ucx" && !transport::UcxAvailable()) {
      GTEST_SKIP() << "this build has no UCX transport (libucx-dev was not found)";
    }
  }

  std::unique_ptr<Server> StartServer(ServerOptions options = {}) {
    options.transport = shape_.transport;
    options.body_type = shape_.body;
    auto server = Server::Start(options);
    EXPECT_TRUE(server.ok()) << server.status().message();
    return server.ok() ? std::move(*server) : nullptr;
  }

  // A client of `server` in this case's shape, with the URIs the server gives for `ticket`.
  Result<UniqueDeviceArrayStream> Open(const Server& server, const std::string& ticket,
                                       ClientOptions options = {}) {
    // Lent to, even where UCX would emulate the client's reads (TCP, or one host before 1.16).
    options.buffer_lists = shape_.body == BodyType::kBufferList;
    if (shape_.split) {
      return ConnectStream(server.metadata_uri(ticket), server.data_uri(ticket), ticket, options);
    }
    return ConnectStream(server.uri(ticket), ticket, options);
  }

  // A connection to `uri` written from the protocol's side, with ferry's extensions or without,
  // whose receives wait up to 5 s: for rogue and scripted clients.
  static Result<std::unique_ptr<transport::Connection>> ConnectRaw(const Uri& uri,
                                                                   bool extensions = false) {
    transport::ConnectOptions connect;
    connect.limits.timeout = std::chrono::seconds(5);
    connect.extensions = extensions;
    return transport::Connect(uri.scheme, uri.authority.empty() ? uri.path : uri.authority,
                              connect);
  }

  Shape shape_;
};

}  // namespace ferry::dipc
