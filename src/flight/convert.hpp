// Internal to the flight layer: ferry's plain FlightInfo to the protobuf messages and back.
#pragma once

#include <chrono>
#include <string>

#include "Flight.pb.h"
#include "ferry/core/result.hpp"
#include "ferry/flight/info.hpp"

namespace ferry::flight::internal {

namespace pb = ::arrow::flight::protocol;

/// A time point as a protobuf Timestamp and back (nanosecond precision).
void ToTimestamp(std::chrono::system_clock::time_point t, google::protobuf::Timestamp* out);
std::chrono::system_clock::time_point FromTimestamp(const google::protobuf::Timestamp& t);

void ToProto(const FlightInfo& info, pb::FlightInfo* out);
FlightInfo FromProto(const pb::FlightInfo& info);
/// A PATH descriptor of one element.
pb::FlightDescriptor PathDescriptor(const std::string& name);
/// The dataset name a descriptor names: its path's one element. Errors name a command
/// descriptor or a path of another length.
Result<std::string> NameOf(const pb::FlightDescriptor& descriptor);

}  // namespace ferry::flight::internal
