#include "psi/Trigger.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>

#include "base/Files.h"

namespace reclaimd::psi {

std::string triggerText(const TriggerSpec& spec) {
  return "some " + std::to_string(spec.stall.count()) + " " + std::to_string(spec.window.count());
}

namespace {

std::string hint(int err) {
  switch (err) {
    case EOPNOTSUPP: return " (PSI is off: Debian kernels need psi=1 on the command line)";
    // 6.4+ answers EINVAL, not EPERM, to an unprivileged trigger whose window is not a
    // multiple of 2 s (seen on this project's build host, which lacks CAP_SYS_RESOURCE).
    case EINVAL:
      return " (the window must be 500ms..10s, the stall at most the window, and without CAP_SYS_RESOURCE the "
             "window a multiple of 2s)";
    case EPERM:
    case EACCES: return " (no permission to register a trigger: CAP_SYS_RESOURCE or a 2s-multiple window needed)";
    default: return "";
  }
}

}  // namespace

Result<Trigger> Trigger::open(int dirFd, const std::string& name, const TriggerSpec& spec) {
  auto fd = openRegular(dirFd, name, O_RDWR | O_NONBLOCK);
  if (!fd) return Error{fd.error().code, fd.error().context + hint(fd.error().errnoValue())};
  // Only a kernel pressure file takes a trigger; written anywhere else (a test fixture, a
  // mistaken --proc-root) the text would just overwrite the file.
  struct statfs fs {};
  if (::fstatfs(fd->get(), &fs) != 0) return errnoError(errno, "statfs " + name);
  if (fs.f_type != PROC_SUPER_MAGIC && fs.f_type != CGROUP2_SUPER_MAGIC) {
    return errnoError(EOPNOTSUPP, name + " is not on procfs or cgroup2: no trigger registered");
  }
  // The trigger text is written with its terminating NUL, as the kernel's documentation does.
  const std::string text = triggerText(spec);
  if (::write(fd->get(), text.c_str(), text.size() + 1) < 0) {
    const int err = errno;
    return errnoError(err, "register trigger \"" + text + "\" on " + name + hint(err));
  }
  return Trigger(std::move(*fd), name);
}

}  // namespace reclaimd::psi
