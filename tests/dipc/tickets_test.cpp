// Issued tickets shared between servers: a book honoured by a shared-memory and a UCX server at
// once, expiry, refresh and revocation, and Remove refusing a dataset a client is reading.
#include "ferry/dipc/tickets.hpp"

#include <nlohmann/json.hpp>
#include <thread>

#include "ferry/dipc/client.hpp"
#include "ferry/dipc/server.hpp"
#include "ferry/transport/ucx.hpp"
#include "support/device_util.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry::dipc {
namespace {

using Json = nlohmann::json;
using Clock = TicketBook::Clock;
using namespace std::chrono_literals;

TEST(TicketBook, IssueResolveRefreshRevoke) {
  TicketBook book;
  ASSERT_OK_AND_ASSIGN(std::string a, book.Issue("alpha", Clock::now() + 60s));
  ASSERT_OK_AND_ASSIGN(std::string b, book.Issue("beta", Clock::now() + 60s));
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a, b);
  ASSERT_OK_AND_ASSIGN(std::string name, book.Resolve(a));
  EXPECT_EQ(name, "alpha");
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "unknown ticket", book.Resolve("alpha"));
  // The secret is not echoed whole.
  Result<std::string> wrong = book.Resolve(a + "0");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message().find(a), std::string::npos);

  ASSERT_OK_AND_ASSIGN(std::string brief, book.Issue("alpha", Clock::now() + 50ms));
  ASSERT_OK_AND_ASSIGN(Clock::time_point until, book.Expiry(brief));
  EXPECT_LE(until, Clock::now() + 50ms);
  std::this_thread::sleep_for(80ms);
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "expired ticket", book.Resolve(brief));
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "unknown or expired",
                     book.Refresh(brief, Clock::now() + 60s));
  ASSERT_OK(book.Refresh(a, Clock::now() + 120s));
  ASSERT_OK_AND_ASSIGN(until, book.Expiry(a));
  EXPECT_GT(until, Clock::now() + 100s);

  book.Revoke("alpha");
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "unknown ticket", book.Resolve(a));
  ASSERT_OK_AND_ASSIGN(name, book.Resolve(b));
  EXPECT_EQ(name, "beta");
  EXPECT_EQ(book.size(), 1u);
}

// Three int64 batches of 100 rows counting up, as a dataset, and the rows expected back.
Result<std::pair<std::shared_ptr<Dataset>, std::vector<Json>>> Counting() {
  UniqueSchema schema;
  std::vector<UniqueDeviceArray> batches;
  std::vector<Json> expected;
  for (int b = 0; b < 3; ++b) {
    Json rows = Json::array();
    for (int i = 0; i < 100; ++i) rows.push_back(Json{{"x", b * 100 + i}});
    FERRY_ASSIGN_OR_RAISE(
        Array a, testing::ArrayFromJson(testing::BatchField({Field::Make("l", "x")}), rows.dump()));
    UniqueSchema s;
    batches.push_back(testing::ToCpuDeviceArray(std::move(a), &s));
    schema = std::move(s);
    expected.push_back(std::move(rows));
  }
  FERRY_ASSIGN_OR_RAISE(std::shared_ptr<Dataset> d,
                        Dataset::FromBatches(std::move(schema), std::move(batches)));
  return std::make_pair(std::move(d), std::move(expected));
}

// The Flight service's shape: one book, a shared-memory and a UCX server, the same dataset on
// both (one kept, one read afresh); a ticket issued by either reads from both, and a server with
// a book of its own refuses it.
TEST(SharedTickets, OneTicketOnEveryPlane) {
  if (!transport::UcxAvailable()) GTEST_SKIP() << "this build has no UCX transport";
  auto book = std::make_shared<TicketBook>();
  ServerOptions options;
  options.token = "s3cret";
  options.tickets = book;
  options.transport = "shm";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> shm, Server::Start(options));
  options.transport = "ucx";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> ucx, Server::Start(options));
  EXPECT_EQ(shm->tickets(), book);
  EXPECT_EQ(ucx->tickets(), book);
  ASSERT_OK_AND_ASSIGN(auto data, Counting());
  ASSERT_OK(shm->Keep("t", data.first));
  ucx->Add("t", data.first);
  ASSERT_OK_AND_ASSIGN(std::string ticket, ucx->IssueTicket("t"));
  for (Server* server : {shm.get(), ucx.get()}) {
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, ConnectStream(server->uri("t"), ticket));
    ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(s.get()));
    EXPECT_EQ(got, data.second);
  }
  options.tickets = nullptr;
  options.transport = "shm";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> other, Server::Start(options));
  other->Add("t", data.first);
  EXPECT_NE(other->tickets(), book);
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "unknown ticket",
                     ConnectStream(other->uri("t"), ticket));
}

// Remove: kNotFound for an unknown name, kFailedPrecondition while a client holds the dataset's
// stream open, and once it is done the dataset and its tickets are gone.
TEST(SharedTickets, RemoveWaitsForReaders) {
  ServerOptions options;
  options.token = "s3cret";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> server, Server::Start(options));
  ASSERT_OK_AND_ASSIGN(auto data, Counting());
  server->Add("t", data.first);
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "no dataset named \"nope\"", server->Remove("nope"));
  ASSERT_OK_AND_ASSIGN(std::string ticket, server->IssueTicket("t"));
  EXPECT_EQ(server->readers("t"), 0);
  {
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, ConnectStream(server->uri("t"), ticket));
    EXPECT_EQ(server->readers("t"), 1);
    ASSERT_RAISES_WITH(StatusCode::kFailedPrecondition, "being read by 1 client",
                       server->Remove("t"));
    ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(s.get()));
    EXPECT_EQ(got, data.second);
  }
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (server->readers("t") > 0 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_OK(server->Remove("t"));
  EXPECT_EQ(server->tickets()->size(), 0u);
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "unknown ticket",
                     ConnectStream(server->uri("t"), ticket));
}

}  // namespace
}  // namespace ferry::dipc
