// `ferry serve --flight`'s wait and drain, and `ferry status` (flight_operate.hpp).
#include "flight_operate.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "notify.hpp"
#include "wait_for_signal.hpp"

namespace ferry::cli {

namespace {

// A JSON value as a number (0 when it is absent or not one).
double Number(const nlohmann::json& doc, const char* key) {
  if (!doc.is_object() || !doc.contains(key) || !doc[key].is_number()) return 0;
  return doc[key].get<double>();
}

// A JSON value as text ("?" when it is absent or not a string).
std::string Text(const nlohmann::json& doc, const char* key) {
  if (!doc.is_object() || !doc.contains(key) || !doc[key].is_string()) return "?";
  return doc[key].get<std::string>();
}

int64_t Count(const nlohmann::json& doc, const char* key) {
  return static_cast<int64_t>(Number(doc, key));
}

std::string Uptime(double seconds) {
  const auto s = static_cast<int64_t>(seconds);
  char text[64];
  std::snprintf(text, sizeof(text), "%lldd %02lldh %02lldm %02llds",
                static_cast<long long>(s / 86400), static_cast<long long>(s / 3600 % 24),
                static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  return text;
}

// The stats key of a plane: gRPC's DoGet is the "flight" plane, counted under "grpc".
const nlohmann::json& PlaneStats(const nlohmann::json& doc, const std::string& plane) {
  static const nlohmann::json kNone = nlohmann::json::object();
  const std::string key = plane == "flight" ? "grpc" : plane;
  return doc.contains(key) ? doc[key] : kNone;
}

// One peer of the "peers" section, whichever way it is written: {"uri", "up", "latency..."}.
void PrintPeer(const std::string& uri, const nlohmann::json& peer) {
  std::string state = "?";
  if (peer.contains("up") && peer["up"].is_boolean())
    state = peer["up"].get<bool>() ? "up" : "down";
  std::string latency = "-";
  for (const auto& [key, value] : peer.items()) {
    if (key.rfind("latency", 0) != 0 || !value.is_number()) continue;
    const double v = value.get<double>();
    char text[64];
    if (key.find("_ms") != std::string::npos) {
      std::snprintf(text, sizeof(text), "%.1f ms", v);
    } else if (key.find("_us") != std::string::npos) {
      std::snprintf(text, sizeof(text), "%.1f ms", v / 1e3);
    } else {
      std::snprintf(text, sizeof(text), "%.1f ms", v * 1e3);  // seconds, the base unit
    }
    latency = text;
  }
  std::printf("  %-44s %-6s %s\n", uri.c_str(), state.c_str(), latency.c_str());
}

void PrintReport(const std::string& uri, const nlohmann::json& doc) {
  static const nlohmann::json kNone = nlohmann::json::object();
  const nlohmann::json& server = doc.contains("server") ? doc["server"] : kNone;
  auto text = [&](const char* key) { return Text(server, key); };
  std::vector<std::string> planes;
  if (server.contains("planes") && server["planes"].is_array()) {
    for (const auto& p : server["planes"]) {
      if (p.is_string()) planes.push_back(p.get<std::string>());
    }
  }
  std::string plane_list;
  for (const std::string& p : planes) plane_list += (plane_list.empty() ? "" : ", ") + p;
  std::printf("server   %s\n", uri.c_str());
  std::printf("health   %s\n", text("health").c_str());
  std::printf("version  %s\n", text("version").c_str());
  std::printf("uptime   %s\n", Uptime(Number(server, "uptime_s")).c_str());
  std::printf("planes   %s\n", plane_list.c_str());
  std::printf("\n  %-8s %10s %10s %16s\n", "PLANE", "ACTIVE", "SESSIONS", "BYTES SENT");
  for (const std::string& p : planes) {
    const nlohmann::json& st = PlaneStats(doc, p);
    const int64_t bytes = p == "flight" ? Count(st, "bytes_sent") : Count(st, "body_bytes_sent");
    std::printf("  %-8s %10lld %10lld %16lld\n", p.c_str(),
                static_cast<long long>(Count(st, "sessions_active")),
                static_cast<long long>(Count(st, "sessions_total")), static_cast<long long>(bytes));
  }
  std::printf("\n  %-24s %12s %14s %9s %7s\n", "DATASET", "RECORDS", "BYTES", "ENDPOINTS",
              "READERS");
  if (doc.contains("datasets") && doc["datasets"].is_array()) {
    for (const auto& d : doc["datasets"]) {
      if (!d.is_object()) continue;
      std::printf("  %-24s %12lld %14lld %9lld %7lld\n", Text(d, "name").c_str(),
                  static_cast<long long>(Count(d, "records")),
                  static_cast<long long>(Count(d, "bytes")),
                  static_cast<long long>(Count(d, "endpoints")),
                  static_cast<long long>(Count(d, "readers")));
    }
  }
  if (!doc.contains("peers")) return;
  const nlohmann::json& peers = doc["peers"];
  std::printf("\n  %-44s %-6s %s\n", "PEER", "STATE", "LATENCY");
  if (peers.is_array()) {
    for (const auto& p : peers) {
      if (p.is_object()) PrintPeer(Text(p, "uri"), p);
    }
  } else if (peers.is_object()) {
    for (const auto& [peer_uri, p] : peers.items()) {
      if (p.is_object()) PrintPeer(peer_uri, p);
    }
  }
}

}  // namespace

void ServeUntilStopped(flight::Server& server, const ServeOptions& o, DatasetReloader& reloader,
                       const ServeLog& log) {
  Notify("READY=1");
  StartWatchdog();
  const int sig = reloader.WaitForStop();
  Notify("STOPPING=1");
  if (sig != SIGINT) {
    const char* why = sig == 0 ? "asked by a client" : "SIGTERM";
    char line[256];
    std::snprintf(line, sizeof(line),
                  "draining (%s): new calls and sessions are refused; waiting up to %.1f s for "
                  "those in progress (a second SIGTERM ends the process now)",
                  why, o.drain_timeout_s);
    log.Tell("drain_started", line);
    const auto start = std::chrono::steady_clock::now();
    const bool idle = server.Drain(Millis(o.drain_timeout_s));
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (idle) {
      std::snprintf(line, sizeof(line), "drained in %.3f s", took);
      log.Tell("drained", line);
    } else {
      std::snprintf(line, sizeof(line),
                    "the drain timed out after %.3f s: ending the calls and sessions still in "
                    "progress",
                    took);
      log.Tell("drain_timed_out", line);
    }
  }
  StopWatchdog();
}

int ShowStatus(const FlightOptions& o, flight::Client& client) {
  if (o.drain) {
    Result<std::vector<std::string>> drained = client.Action("drain");
    if (!drained.ok()) return Fail("--drain", drained.status());
    if (!o.json) {
      std::printf(
          "%s: draining: new calls and sessions are refused; it exits once those in "
          "progress end\n",
          o.uri.c_str());
    }
  }
  Result<std::vector<std::string>> stats = client.Action("stats");
  if (!stats.ok()) {
    // An idle server ends its drain at once: gone (or going) before it could be asked.
    if (o.drain) {
      if (o.json) {
        std::printf("%s\n", nlohmann::json{{"drain_started", true}}.dump(2).c_str());
      } else {
        std::printf("%s: drained, and gone before its state could be read\n", o.uri.c_str());
      }
      return 0;
    }
    return Fail("status", stats.status());
  }
  if (stats->size() != 1) {
    return Fail("status", Status::IOError("the stats action answered " +
                                          std::to_string(stats->size()) + " results, not one"));
  }
  nlohmann::json doc = nlohmann::json::parse(stats->front(), nullptr, false);
  if (!doc.is_object()) {
    return Fail("status", Status::IOError("the stats action's answer is not a JSON object: " +
                                          stats->front().substr(0, 200)));
  }
  if (o.json) {
    if (o.drain) doc["drain_started"] = true;
    std::printf("%s\n", doc.dump(2).c_str());
  } else {
    if (o.drain) std::printf("\n");
    PrintReport(o.uri, doc);
  }
  return 0;
}

}  // namespace ferry::cli
