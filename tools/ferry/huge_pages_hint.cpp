// SharedHugePagesHint: `ferry serve --keep`'s hint (huge_pages_hint.hpp).
#include "huge_pages_hint.hpp"

#include <fstream>
#include <sstream>

namespace ferry::cli {

std::string SharedHugePagesHint(const std::string& setting_path) {
  std::ifstream file(setting_path);
  if (!file) return "";
  // The choices, the one in force bracketed: "always within_size advise [never] deny force".
  std::string word;
  std::string chosen;
  while (file >> word) {
    if (word.size() > 2 && word.front() == '[' && word.back() == ']') {
      chosen = word.substr(1, word.size() - 2);
    }
  }
  if (chosen != "never" && chosen != "deny") return "";
  return "kept datasets map in 4 KiB pages here: " + setting_path + " is " + chosen +
         "; with advise their segments map in 2 MiB pages and each client reads them with "
         "512x fewer page faults (docs/dipc.md, \"Huge pages for shared segments\")";
}

}  // namespace ferry::cli
