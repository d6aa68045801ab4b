// Internal to the IPC decoder: the name of a message in error messages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ferry::ipc::internal {

/// Names a message where an error starts ("message 3", "message 3 (dictionary 7)", or a file's
/// "record batch 2"). Rendered only when an error needs the words: a batch that decodes builds
/// no string. `noun` must outlive the label (a literal).
struct MessageLabel {
  explicit MessageLabel(int64_t i, std::optional<int64_t> dictionary_id = std::nullopt,
                        const char* what = "message")
      : index(i), dictionary(dictionary_id), noun(what) {}

  int64_t index = 0;
  std::optional<int64_t> dictionary;  // the id a DictionaryBatch gives
  const char* noun = "message";

  std::string str() const {
    std::string out = std::string(noun) + " " + std::to_string(index);
    if (dictionary) out.append(" (dictionary ").append(std::to_string(*dictionary)).append(")");
    return out;
  }
};

}  // namespace ferry::ipc::internal
