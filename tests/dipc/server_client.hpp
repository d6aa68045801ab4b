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

// A batch of `total - offset` rows (from `offset` of generated columns), one column for each
// type case in `types` (named "c" for one case, "c<t>" for several), and the JSON rows ferry must
// give back.
struct Made {
  UniqueSchema schema;
  UniqueDeviceArray batch;
  nlohmann::json expected;
};

inline std::string ColumnName(size_t t, bool several) {
  return several ? "c" + std::to_string(t) : std::string("c");
}

inline Result<Made> MakeBatch(const std::vector<size_t>& types, int64_t total, int64_t offset) {
  const bool several = types.size() > 1;
  std::vector<Field> columns;
  nlohmann::json rows = nlohmann::json::array();
  nlohmann::json expected = nlohmann::json::array();
  for (int64_t i = 0; i < total; ++i) rows.push_back(nlohmann::json::object());
  for (int64_t i = offset; i < total; ++i) expected.push_back(nlohmann::json::object());
  for (size_t t : types) {
    const testing::TypeCase& tc = testing::TypeCases()[t];
    auto [values, rendered] = testing::GenerateValues(tc, t * 7919 + 1, total, true);
    Field column = tc.field;
    column.name = ColumnName(t, several);
    columns.push_back(column);
    for (int64_t i = 0; i < total; ++i) {
      rows[static_cast<size_t>(i)][column.name] = values[static_cast<size_t>(i)];
      if (i >= offset) {
        expected[static_cast<size_t>(i - offset)][column.name] = rendered[static_cast<size_t>(i)];
      }
    }
  }
  FERRY_ASSIGN_OR_RAISE(Array batch,
                        testing::SlicedArrayFromJson(testing::BatchField(std::move(columns)),
                                                     rows.dump(), offset, total - offset));
  Made m;
  m.batch = testing::ToCpuDeviceArray(std::move(batch), &m.schema);
  m.expected = std::move(expected);
  return m;
}

inline Result<Made> MakeBatch(size_t t, int64_t total, int64_t offset) {
  return MakeBatch(std::vector<size_t>{t}, total, offset);
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
  // whose receives wait up to 5 s: for rogue and scripted clients. Its UCX wire-up may take up to
  // 30 s: on a loaded 2-core machine (the sanitizer suites beside it) one took over 5.
  static Result<std::unique_ptr<transport::Connection>> ConnectRaw(const Uri& uri,
                                                                   bool extensions = false) {
    transport::ConnectOptions connect;
    connect.limits.timeout = std::chrono::seconds(5);
    connect.connect_timeout = std::chrono::seconds(30);
    connect.extensions = extensions;
    return transport::Connect(uri.scheme, uri.authority.empty() ? uri.path : uri.authority,
                              connect);
  }

  Shape shape_;
};

}  // namespace ferry::dipc
