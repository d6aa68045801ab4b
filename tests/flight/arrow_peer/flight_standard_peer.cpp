// flight_standard_peer: Arrow C++'s Flight client (the pyarrow wheel's libarrow_flight), an
// independent peer of ferry's Flight server. It shares no code with ferry. Against the server at
// URI, serving flight NAME, it calls the standard actions through Arrow's typed client calls:
// RenewFlightEndpoint, SetSessionOptions, GetSessionOptions, a DoGet in the session (its
// compression option), CancelFlightInfo and CloseSession, with Arrow's cookie middleware keeping
// the session. Each check prints "ok: ..." or "FAILED: ..."; the exit status is 0 when all pass.
//
//   flight_standard_peer grpc://127.0.0.1:PORT NAME
#include <arrow/api.h>
#include <arrow/flight/api.h>
#include <arrow/flight/client_cookie_middleware.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <string>

namespace fl = arrow::flight;

namespace {

int failures = 0;

void Check(bool ok, const std::string& what) {
  std::cout << (ok ? "ok: " : "FAILED: ") << what << std::endl;
  if (!ok) ++failures;
}

arrow::Status Run(const std::string& uri, const std::string& name) {
  ARROW_ASSIGN_OR_RAISE(fl::Location location, fl::Location::Parse(uri));
  fl::FlightClientOptions options = fl::FlightClientOptions::Defaults();
  options.middleware.push_back(fl::GetCookieFactory());
  ARROW_ASSIGN_OR_RAISE(std::unique_ptr<fl::FlightClient> client,
                        fl::FlightClient::Connect(location, options));
  const fl::FlightCallOptions call;

  ARROW_ASSIGN_OR_RAISE(std::unique_ptr<fl::FlightInfo> info,
                        client->GetFlightInfo(call, fl::FlightDescriptor::Path({name})));
  Check(!info->endpoints().empty(), "GetFlightInfo has endpoints");
  const fl::FlightEndpoint& endpoint = info->endpoints()[0];

  // RenewFlightEndpoint: the same ticket, an expiry no earlier than the one issued.
  ARROW_ASSIGN_OR_RAISE(
      fl::FlightEndpoint renewed,
      client->RenewFlightEndpoint(call, fl::RenewFlightEndpointRequest{endpoint}));
  Check(renewed.ticket == endpoint.ticket, "RenewFlightEndpoint keeps the ticket");
  Check(renewed.locations == endpoint.locations, "RenewFlightEndpoint keeps the locations");
  Check(renewed.expiration_time.has_value() && endpoint.expiration_time.has_value() &&
            *renewed.expiration_time >= *endpoint.expiration_time,
        "RenewFlightEndpoint moves the expiry on");

  // SetSessionOptions: the known options are set, an unknown one is refused by name.
  fl::SetSessionOptionsRequest set_request{{{"compression", std::string("zstd")},
                                            {"parallelism", int64_t{3}},
                                            {"no_such_option", std::string("x")}}};
  ARROW_ASSIGN_OR_RAISE(fl::SetSessionOptionsResult set,
                        client->SetSessionOptions(call, set_request));
  Check(set.errors.size() == 1 && set.errors.count("no_such_option") == 1 &&
            set.errors["no_such_option"].value == fl::SetSessionOptionErrorValue::kInvalidName,
        "SetSessionOptions refuses no_such_option by name: " + set.ToString());

  ARROW_ASSIGN_OR_RAISE(fl::GetSessionOptionsResult got,
                        client->GetSessionOptions(call, fl::GetSessionOptionsRequest{}));
  const std::map<std::string, fl::SessionOptionValue> expected{{"compression", std::string("zstd")},
                                                               {"parallelism", int64_t{3}}};
  Check(got.session_options == expected,
        "GetSessionOptions returns the session's options: " + got.ToString());

  // DoGet in the session: zstd bodies, which Arrow C++ decompresses.
  ARROW_ASSIGN_OR_RAISE(std::unique_ptr<fl::FlightStreamReader> reader,
                        client->DoGet(call, endpoint.ticket));
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Table> table, reader->ToTable());
  Check(table->num_rows() == info->total_records(),
        "DoGet in the session reads " + std::to_string(table->num_rows()) + " rows");
  ARROW_RETURN_NOT_OK(table->ValidateFull());

  // CancelFlightInfo: cancelled; the ticket redeems nothing after.
  ARROW_ASSIGN_OR_RAISE(
      fl::CancelFlightInfoResult cancelled,
      client->CancelFlightInfo(
          call, fl::CancelFlightInfoRequest{std::make_unique<fl::FlightInfo>(*info)}));
  Check(cancelled.status == fl::CancelStatus::kCancelled,
        "CancelFlightInfo: " + cancelled.ToString());
  auto after = client->DoGet(call, endpoint.ticket);
  arrow::Status read_after = after.status();
  if (read_after.ok()) read_after = (*after)->ToTable().status();
  Check(!read_after.ok(), "a cancelled ticket is refused: " + read_after.ToString());

  // CloseSession: closed, and the cookie is dropped, so a new call has no session.
  ARROW_ASSIGN_OR_RAISE(fl::CloseSessionResult closed,
                        client->CloseSession(call, fl::CloseSessionRequest{}));
  Check(closed.status == fl::CloseSessionStatus::kClosed, "CloseSession: " + closed.ToString());
  ARROW_ASSIGN_OR_RAISE(fl::GetSessionOptionsResult after_close,
                        client->GetSessionOptions(call, fl::GetSessionOptionsRequest{}));
  Check(after_close.session_options.empty(),
        "no options once the session is closed: " + after_close.ToString());
  return client->Close();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: flight_standard_peer URI FLIGHT\n";
    return 2;
  }
  const arrow::Status st = Run(argv[1], argv[2]);
  if (!st.ok()) {
    std::cout << "FAILED: " << st.ToString() << std::endl;
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
