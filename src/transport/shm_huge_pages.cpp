// ShmemHugePages and ShmemHugePagesGiven: the kernel's huge-page setting for shared memory, and
// what it gives (ferry/transport/shm.hpp).
#include <fstream>
#include <string>

#include "ferry/transport/shm.hpp"

namespace ferry::transport {

std::string ShmemHugePages(const std::string& setting_path) {
  std::ifstream file(setting_path);
  std::string word;
  std::string chosen;
  while (file >> word) {
    if (word.size() > 2 && word.front() == '[' && word.back() == ']') {
      chosen = word.substr(1, word.size() - 2);
    }
  }
  return chosen;
}

bool ShmemHugePagesGiven(const std::string& setting) {
  return setting == "advise" || setting == "always" || setting == "within_size" ||
         setting == "force";
}

}  // namespace ferry::transport
