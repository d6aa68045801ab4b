// The limit of a Flight server to a given client (bench/dipc/small_batches.py's "Flight replay"):
// a gRPC server that does no Flight work at all. It answers GetFlightInfo with bytes made
// beforehand, and DoGet with the same FlightData messages, made beforehand, written one after
// another: whatever a client reads from it faster than from a real server, no server could give
// it. It shares no code with ferry: gRPC's generic service, and protobuf bytes its caller wrote.
//
//   ferry_flight_replay INFO SCHEMA BATCH COUNT
//
// INFO is a serialized FlightInfo, SCHEMA and BATCH are serialized FlightData messages (the
// schema, and one record batch sent COUNT times). Prints its URI (grpc://127.0.0.1:PORT) and
// serves until its standard input closes.
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

namespace {

std::string Slurp(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "ferry_flight_replay: cannot read " << path << "\n";
    std::exit(2);
  }
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

grpc::ByteBuffer Buffer(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

struct Replies {
  grpc::ByteBuffer info, schema, batch;
  long count = 0;
};

// One call: read the request, then write the replies. A ByteBuffer copy shares its slices, so
// each write costs gRPC's framing alone.
class Call final : public grpc::ServerGenericBidiReactor {
 public:
  Call(const Replies* replies, const std::string& method) : replies_(replies) {
    if (method == "/arrow.flight.protocol.FlightService/GetFlightInfo") {
      kind_ = Kind::kInfo;
    } else if (method == "/arrow.flight.protocol.FlightService/DoGet") {
      kind_ = Kind::kGet;
    } else {
      Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, method + " is not replayed"));
      return;
    }
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no request"));
      return;
    }
    if (kind_ == Kind::kInfo) {
      out_ = replies_->info;
      StartWriteAndFinish(&out_, grpc::WriteOptions(), grpc::Status::OK);
      return;
    }
    out_ = replies_->schema;
    StartWrite(&out_);
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
      return;
    }
    if (sent_ == replies_->count) {
      Finish(grpc::Status::OK);
      return;
    }
    ++sent_;
    out_ = replies_->batch;
    StartWrite(&out_);
  }

  void OnDone() override { delete this; }

 private:
  enum class Kind { kInfo, kGet };
  const Replies* replies_;
  Kind kind_ = Kind::kInfo;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer out_;
  long sent_ = 0;  // batches written
};

class Service final : public grpc::CallbackGenericService {
 public:
  explicit Service(const Replies* replies) : replies_(replies) {}
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    return new Call(replies_, ctx->method());
  }

 private:
  const Replies* replies_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: ferry_flight_replay INFO SCHEMA BATCH COUNT\n";
    return 2;
  }
  Replies replies;
  replies.info = Buffer(Slurp(argv[1]));
  replies.schema = Buffer(Slurp(argv[2]));
  replies.batch = Buffer(Slurp(argv[3]));
  replies.count = std::strtol(argv[4], nullptr, 10);
  Service service(&replies);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterCallbackGenericService(&service);
  builder.SetMaxSendMessageSize(-1);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::cerr << "ferry_flight_replay: the server did not start\n";
    return 1;
  }
  std::cout << "grpc://127.0.0.1:" << port << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  // A call the client left open is cancelled after a second: the run is over. Then out at once:
  // gRPC 1.51's library teardown (the last ServerBuilder or Server going) joins its executor
  // thread, which can sit in a poll of up to 10 s, and this process holds nothing to clean up.
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  std::cout.flush();
  std::_Exit(0);
}
