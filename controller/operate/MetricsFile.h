// The node_exporter textfile: rewritten atomically in a directory that other users may be able
// to write (a shared textfile directory), so no path name that a user could plant is ever
// followed or truncated by root.
#pragma once

#include <string>

#include "base/Result.h"

namespace reclaimd::controller {

// Replaces `path` with `text` (mode 0644 whatever the umask: node_exporter runs as its own
// user). The data is written to an unnamed O_TMPFILE in the target's directory, given a fresh
// random name with linkat (which never follows nor replaces an existing name), then renamed over
// the target (rename replaces a planted symlink itself, never what it points to). Where the
// filesystem has no O_TMPFILE, a random name opened O_CREAT|O_EXCL|O_NOFOLLOW does the same.
Result<void> writeFileAtomically(const std::string& path, const std::string& text);

// `text` (as formatMetrics renders it) with the `reclaimd_up` sample set to 0: what the file
// says once the daemon has stopped, so a stale file is not read as a running daemon.
std::string markStopped(std::string text);

}  // namespace reclaimd::controller
