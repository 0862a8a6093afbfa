#include "cgroup/Controllers.h"

#include "base/Text.h"

namespace reclaimd::cgroup {

namespace {

// The file is one line; a newline between words is taken as a separator too.
constexpr std::string_view kSeparators = " \n";

}  // namespace

// cpuset cpu io memory hugetlb pids rdma misc
std::vector<std::string> parseControllers(std::string_view content) {
  std::vector<std::string> out;
  for (std::string_view word : fields(content, kSeparators))
    out.emplace_back(word);
  return out;
}

bool hasController(std::string_view content, std::string_view name) {
  for (std::string_view word : fields(content, kSeparators)) {
    if (word == name) return true;
  }
  return false;
}

}  // namespace reclaimd::cgroup
