// SharedHugePagesHint: `ferry serve --keep`'s hint (huge_pages_hint.hpp).
#include "huge_pages_hint.hpp"

namespace ferry::cli {

std::string SharedHugePagesHint(const std::string& setting_path) {
  const std::string chosen = transport::ShmemHugePages(setting_path);
  if (chosen.empty() || transport::ShmemHugePagesGiven(chosen)) return "";
  return "kept datasets map in 4 KiB pages here: " + setting_path + " is " + chosen +
         "; with advise their segments map in 2 MiB pages and each client reads them with "
         "512x fewer page faults (docs/dipc.md, \"Huge pages for shared segments\")";
}

}  // namespace ferry::cli
