#include "tests/unit/SourceTree.h"

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace reclaimd::testing {

std::string readSource(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) throw std::runtime_error("cannot read " + path.string());
  return std::string{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void writeSource(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  if (!(out << text) || !out.flush()) throw std::runtime_error("cannot write " + path.string());
}

bool regenerate() {
  const char* v = std::getenv("RECLAIMD_REGENERATE");
  return v && std::string(v) == "1";
}

}  // namespace reclaimd::testing
