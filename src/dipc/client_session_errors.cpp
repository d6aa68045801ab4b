// The dissociated-IPC client session's failures (client_session.hpp): what a failed receive
// means (the server's own words where it sent them, a silence, a closed connection), and how
// long a wait may be silent.
#include <string>

#include "dipc/client_session.hpp"
#include "ferry/core/status_code.hpp"

namespace ferry::dipc::internal {

std::chrono::milliseconds ClientSession::SilenceAllowed() const {
  const std::chrono::milliseconds connect = options_.connect_timeout;
  if (reused_ && !started_ && connect.count() > 0 && connect < options_.timeout) return connect;
  return options_.timeout;
}

Status ClientSession::Check(Status st, const std::string& doing) {
  if (st.ok()) return st;
  broken_ = true;
  // A ferry server that refused or failed says why on the metadata channel before it
  // closes, if we asked for its extensions: prefer its words.
  const bool closed = st.code() == StatusCode::kUnavailable;
  const bool silent = st.code() == StatusCode::kDeadlineExceeded;
  if ((closed || silent) && conn_->extensions()) {
    // In the split shape either server may have said it, and the words may still be on their
    // way on the other connection.
    const auto wait = std::chrono::milliseconds(closed && data_ != conn_ ? 1000 : 0);
    for (Connection* c : {data_.get(), conn_.get()}) {
      if (c == data_.get() && data_ == conn_) continue;
      while (true) {
        Result<SharedBytes> m = c->Receive(c == conn_.get() ? wait : std::chrono::milliseconds(0));
        if (!m.ok()) break;
        if (m->size >= 1 && m->data[0] == static_cast<uint8_t>(MetadataType::kFerryError)) {
          return Parse(*m).status();
        }
      }
    }
  }
  if (silent) {
    std::string gap;
    if (metadata_.held() > 0) {
      gap = " (metadata message " + std::to_string(metadata_.next()) + " never came; " +
            std::to_string(metadata_.held()) + " later one(s) did)";
    }
    const std::chrono::milliseconds waited = SilenceAllowed();
    if (waited != options_.timeout) {
      gap += " (the connect timeout) on the connection kept from its last stream";
    }
    return Status::DeadlineExceeded(doing + ": the server sent nothing for " +
                                    std::to_string(waited.count()) + " ms" + gap);
  }
  if (closed && !started_) {
    return Status::Unavailable(doing +
                               ": the server closed the connection after want_data (unknown or "
                               "expired ticket?): " +
                               st.message());
  }
  if (closed) {
    return Status::Unavailable(doing +
                               ": the server closed the connection before the end of the "
                               "stream (" +
                               st.message() + ")");
  }
  return st.WithContext(doing);
}

namespace {

// A ferry server's error text ("NotFound: unknown ticket ..."): its code, by the name that leads
// it, and its words. Text from a server that names no code is an I/O error.
Status ServerError(const std::string& text) {
  const size_t colon = text.find(": ");
  if (colon != std::string::npos) {
    for (const StatusCodeInfo& row : StatusCodeTable()) {
      if (text.compare(0, colon, row.name) == 0) {
        return Status(row.code, "the server reported: " + text.substr(colon + 2));
      }
    }
  }
  return Status::IOError("the server reported: " + text);
}

}  // namespace

Result<MetadataMessage> ClientSession::Parse(const SharedBytes& bytes) const {
  FERRY_ASSIGN_OR_RAISE(MetadataMessage m, ParseMetadataMessage(bytes));
  if (m.type == MetadataType::kFerryError) {
    if (!conn_->extensions()) {
      return Status::Invalid("metadata message type 0xFF is not one the protocol defines");
    }
    return ServerError(std::string(m.flatbuffer.begin(), m.flatbuffer.end()));
  }
  return m;
}

}  // namespace ferry::dipc::internal
