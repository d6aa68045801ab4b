// FlightInfo between ferry's plain values and Flight.proto's messages.
#include "flight/convert.hpp"

#include <chrono>

namespace ferry::flight::internal {

void ToTimestamp(std::chrono::system_clock::time_point t, google::protobuf::Timestamp* out) {
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  out->set_seconds(ns / 1000000000);
  out->set_nanos(static_cast<int32_t>(ns % 1000000000));
}

std::chrono::system_clock::time_point FromTimestamp(const google::protobuf::Timestamp& t) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(t.seconds()) + std::chrono::nanoseconds(t.nanos())));
}

pb::FlightDescriptor PathDescriptor(const std::string& name) {
  pb::FlightDescriptor d;
  d.set_type(pb::FlightDescriptor::PATH);
  d.add_path(name);
  return d;
}

Result<std::string> NameOf(const pb::FlightDescriptor& descriptor) {
  if (descriptor.type() == pb::FlightDescriptor::CMD) {
    return Status::NotSupported(
        "ferry's flights are named by path descriptors ([NAME]); a command descriptor names "
        "none");
  }
  if (descriptor.path_size() != 1 || descriptor.path(0).empty()) {
    return Status::Invalid(
        "a ferry flight's descriptor is a path of one element, the dataset's "
        "name; this one has " +
        std::to_string(descriptor.path_size()) + " element(s)");
  }
  return descriptor.path(0);
}

void ToProto(const FlightInfo& info, pb::FlightInfo* out) {
  out->set_schema(info.schema);
  pb::FlightDescriptor* d = out->mutable_flight_descriptor();
  if (!info.path.empty()) {
    d->set_type(pb::FlightDescriptor::PATH);
    for (const std::string& p : info.path) d->add_path(p);
  } else {
    d->set_type(pb::FlightDescriptor::CMD);
    d->set_cmd(info.command);
  }
  for (const Endpoint& e : info.endpoints) {
    pb::FlightEndpoint* pe = out->add_endpoint();
    pe->mutable_ticket()->set_ticket(e.ticket);
    for (const std::string& l : e.locations) pe->add_location()->set_uri(l);
    if (e.expiration) ToTimestamp(*e.expiration, pe->mutable_expiration_time());
  }
  out->set_total_records(info.total_records);
  out->set_total_bytes(info.total_bytes);
  out->set_ordered(info.ordered);
  out->set_app_metadata(info.app_metadata);
}

FlightInfo FromProto(const pb::FlightInfo& info) {
  FlightInfo out;
  out.schema = info.schema();
  const pb::FlightDescriptor& d = info.flight_descriptor();
  out.path.assign(d.path().begin(), d.path().end());
  out.command = d.cmd();
  for (const pb::FlightEndpoint& pe : info.endpoint()) {
    Endpoint e;
    e.ticket = pe.ticket().ticket();
    for (const pb::Location& l : pe.location()) e.locations.push_back(l.uri());
    if (pe.has_expiration_time()) e.expiration = FromTimestamp(pe.expiration_time());
    out.endpoints.push_back(std::move(e));
  }
  out.total_records = info.total_records();
  out.total_bytes = info.total_bytes();
  const int64_t share = out.EndpointShare();
  for (Endpoint& e : out.endpoints) e.expected_bytes = share;
  out.ordered = info.ordered();
  out.app_metadata = info.app_metadata();
  return out;
}

}  // namespace ferry::flight::internal
