// Issued tickets: expiry, refresh and revocation by the book's clock; a server with a token honours
// only the tickets it issued, until they expire; a book shared by a shared-memory and a UCX server
// at once; and Remove refusing a dataset a client is reading.
#include "ferry/dipc/tickets.hpp"

#include <nlohmann/json.hpp>

#include "ferry/dipc/client.hpp"
#include "ferry/dipc/server.hpp"
#include "ferry/transport/ucx.hpp"
#include "support/device_util.hpp"
#include "support/dipc_data.hpp"
#include "support/ipc_util.hpp"
#include "support/test_util.hpp"

namespace ferry::dipc {
namespace {

using Json = nlohmann::json;
using testing::IntBatches;
using testing::IntData;
using namespace std::chrono_literals;

// A ticket keeps the trace of the call that issued it while it lives, and only its own.
TEST(TicketBook, ATicketKeepsItsTraceWhileItLives) {
  auto clock = std::make_shared<ManualClock>();
  TicketBook book(clock);
  ASSERT_OK_AND_ASSIGN(
      TraceContext trace,
      ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "a=b"));
  ASSERT_OK_AND_ASSIGN(std::string traced, book.Issue("alpha", clock->Now() + 60s, trace));
  ASSERT_OK_AND_ASSIGN(std::string plain, book.Issue("alpha", clock->Now() + 60s));
  EXPECT_EQ(book.Trace(traced).traceparent(), trace.traceparent());
  EXPECT_EQ(book.Trace(traced).tracestate, "a=b");
  EXPECT_FALSE(book.Trace(plain).valid());
  EXPECT_FALSE(book.Trace("unknown").valid());
  clock->Advance(60s);
  EXPECT_FALSE(book.Trace(traced).valid());  // expired
}

TEST(TicketBook, IssueResolveRefreshRevoke) {
  auto clock = std::make_shared<ManualClock>();
  TicketBook book(clock);
  EXPECT_EQ(book.clock(), clock);
  ASSERT_OK_AND_ASSIGN(std::string a, book.Issue("alpha", clock->Now() + 60s));
  ASSERT_OK_AND_ASSIGN(std::string b, book.Issue("beta", clock->Now() + 60s));
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

  // Live up to the last tick before its expiry, expired from that tick on: by the book's clock.
  const Clock::time_point issued = clock->Now();
  ASSERT_OK_AND_ASSIGN(std::string brief, book.Issue("alpha", issued + 50ms));
  ASSERT_OK_AND_ASSIGN(Clock::time_point until, book.Expiry(brief));
  EXPECT_EQ(until, issued + 50ms);
  clock->Advance(50ms - Clock::duration(1));
  ASSERT_OK_AND_ASSIGN(name, book.Resolve(brief));
  EXPECT_EQ(name, "alpha");
  clock->Advance(Clock::duration(1));
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "expired ticket", book.Resolve(brief));
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "unknown or expired", book.Expiry(brief));
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "unknown or expired",
                     book.Refresh(brief, clock->Now() + 60s));
  ASSERT_OK(book.Refresh(a, clock->Now() + 120s));
  ASSERT_OK_AND_ASSIGN(until, book.Expiry(a));
  EXPECT_EQ(until, issued + 50ms + 120s);
  // An expired ticket is kept until the next Issue sweeps it.
  EXPECT_EQ(book.size(), 3u);
  ASSERT_OK_AND_ASSIGN(std::string c, book.Issue("gamma", clock->Now() + 1s));
  EXPECT_NE(c, brief);
  EXPECT_EQ(book.size(), 3u);
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "unknown ticket", book.Resolve(brief));

  book.Revoke("alpha");
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "unknown ticket", book.Resolve(a));
  ASSERT_OK_AND_ASSIGN(name, book.Resolve(b));
  EXPECT_EQ(name, "beta");
  EXPECT_EQ(book.size(), 2u);
}

TEST(TicketBook, WithoutAClockItUsesTheRealOne) {
  TicketBook book;
  EXPECT_EQ(book.clock(), Clock::Real());
  ASSERT_OK_AND_ASSIGN(std::string t, book.Issue("x", Clock::Real()->Now() + 60s));
  ASSERT_OK_AND_ASSIGN(Clock::time_point until, book.Expiry(t));
  EXPECT_GT(until, Clock::Real()->Now());
  // A time already passed: expired at once.
  ASSERT_OK_AND_ASSIGN(std::string gone, book.Issue("x", Clock::Real()->Now() - 1s));
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "expired ticket", book.Resolve(gone));
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

// With a token, the data plane honours only tickets the server issued: a dataset's name is
// refused, an issued ticket reads it, an expired one is refused, and one server's ticket means
// nothing to another.
TEST(IssuedTickets, OnlyIssuedUnexpiredTicketsAreHonoured) {
  auto clock = std::make_shared<ManualClock>();
  ServerOptions options;
  options.token = "s3cret";
  options.ticket_ttl = std::chrono::seconds(60);
  options.clock = clock;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> server, Server::Start(options));
  ASSERT_OK_AND_ASSIGN(IntData data, IntBatches(2, 50));
  server->Add("t", data.dataset);
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "no dataset named \"nope\"",
                     server->IssueTicket("nope"));
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "unknown ticket", ConnectStream(server->uri("t"), "t"));
  ASSERT_OK_AND_ASSIGN(std::string ticket, server->IssueTicket("t"));
  EXPECT_EQ(ticket.size(), 32u);
  EXPECT_EQ(ticket.find_first_not_of("0123456789abcdef"), std::string::npos);
  ASSERT_OK_AND_ASSIGN(std::string other, server->IssueTicket("t"));
  EXPECT_NE(ticket, other);
  {
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, ConnectStream(server->uri("t"), ticket));
    ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(s.get()));
    EXPECT_EQ(got, data.expected);
  }
  // Refused messages do not echo the secret whole.
  Result<UniqueDeviceArrayStream> wrong = ConnectStream(server->uri("t"), ticket + "x");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message().find(ticket), std::string::npos) << wrong.status().message();

  // The server's book runs on its clock: a ticket of one second reads until the last tick of
  // that second and is refused from the next.
  EXPECT_EQ(server->tickets()->clock(), clock);
  ASSERT_OK_AND_ASSIGN(std::string brief, server->IssueTicket("t", std::chrono::seconds(1)));
  clock->Advance(1s - Clock::duration(1));
  {
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, ConnectStream(server->uri("t"), brief));
    ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(s.get()));
    EXPECT_EQ(got, data.expected);
  }
  clock->Advance(Clock::duration(1));
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "expired ticket",
                     ConnectStream(server->uri("t"), brief));
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "unknown or expired", server->RefreshTicket(brief));
  // Refreshed from now: 120 s more by the clock (and the default lifetime, 60 s, for the other).
  ASSERT_OK(server->RefreshTicket(other, std::chrono::seconds(120)));
  ASSERT_OK_AND_ASSIGN(Clock::time_point until, server->tickets()->Expiry(other));
  EXPECT_EQ(until, clock->Now() + 120s);
  ASSERT_OK(server->RefreshTicket(ticket));
  ASSERT_OK_AND_ASSIGN(until, server->tickets()->Expiry(ticket));
  EXPECT_EQ(until, clock->Now() + 60s);

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> another, Server::Start(options));
  another->Add("t", data.dataset);
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "unknown ticket",
                     ConnectStream(another->uri("t"), ticket));
}

// Remove: kNotFound for an unknown name; while a client reads the dataset it goes at once (no
// new client gets it, its tickets are revoked), and the client that holds it reads to the end.
TEST(SharedTickets, RemoveWhileReadLetsTheReaderFinish) {
  ServerOptions options;
  options.token = "s3cret";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> server, Server::Start(options));
  ASSERT_OK_AND_ASSIGN(auto data, Counting());
  server->Add("t", data.first);
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "no dataset named \"nope\"", server->Remove("nope"));
  ASSERT_OK_AND_ASSIGN(std::string ticket, server->IssueTicket("t"));
  ASSERT_OK_AND_ASSIGN(std::string unused, server->IssueTicket("t"));
  EXPECT_EQ(server->readers("t"), 0);
  {
    ASSERT_OK_AND_ASSIGN(UniqueDeviceArrayStream s, ConnectStream(server->uri("t"), ticket));
    EXPECT_EQ(server->readers("t"), 1);
    ASSERT_OK(server->Remove("t"));
    EXPECT_EQ(server->readers("t"), 0);
    EXPECT_EQ(server->tickets()->size(), 0u);
    ASSERT_RAISES_WITH(StatusCode::kNotFound, "unknown ticket",
                       ConnectStream(server->uri("t"), unused));
    ASSERT_OK_AND_ASSIGN(std::vector<Json> got, testing::DrainToJson(s.get()));
    EXPECT_EQ(got, data.second);
  }
  ASSERT_TRUE(server->AwaitIdle(5s));
  ASSERT_RAISES_WITH(StatusCode::kNotFound, "no dataset named \"t\"", server->Remove("t"));
}

}  // namespace
}  // namespace ferry::dipc
