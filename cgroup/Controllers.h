// cgroup.controllers: which controllers a cgroup2 directory offers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace reclaimd::cgroup {

// Parses cgroup.controllers, space-separated names on one line:
//   cpuset cpu io memory hugetlb pids rdma misc
// Every whole word, in order; an empty file (no controllers) gives none. Never fails: any
// word is a name a kernel might add.
std::vector<std::string> parseControllers(std::string_view content);

// Whether `name` is one of the controllers listed in `content` as a whole word.
bool hasController(std::string_view content, std::string_view name);

}  // namespace reclaimd::cgroup
