#include "cgroup/Libcgroup.h"

#include <libcgroup.h>

#include <cstdarg>
#include <mutex>

namespace reclaimd::cgroup {

namespace {

// libcgroup logs errors to stdout by default; `reclaimd probe` prints its own report there.
void quiet(void*, int, const char*, va_list) {}

}  // namespace

Result<std::vector<ControllerMount>> libcgroupMounts() {
  static std::once_flag once;
  static int initResult = 0;
  std::call_once(once, [] {
    cgroup_set_logger(quiet, CGROUP_LOG_ERROR, nullptr);
    initResult = cgroup_init();
  });
  if (initResult != 0) return invalidError(std::string("libcgroup: ") + cgroup_strerror(initResult));
  std::vector<ControllerMount> out;
  void* handle = nullptr;
  cgroup_mount_point info{};
  int ret = cgroup_get_controller_begin(&handle, &info);
  while (ret == 0) {
    out.push_back(ControllerMount{info.name, info.path});
    ret = cgroup_get_controller_next(&handle, &info);
  }
  if (handle != nullptr) cgroup_get_controller_end(&handle);
  if (ret != ECGEOF) return invalidError(std::string("libcgroup: ") + cgroup_strerror(ret));
  return out;
}

}  // namespace reclaimd::cgroup
