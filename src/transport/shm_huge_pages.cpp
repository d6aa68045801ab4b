// ShmemHugePages: the kernel's huge-page setting for shared memory (ferry/transport/shm.hpp).
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

}  // namespace ferry::transport
