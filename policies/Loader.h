// Loading and validating the YAML policy.
//
// Every key is documented in the README's config reference. Unknown keys, wrong types,
// duplicate keys and out-of-range values are errors that name the file, line and column;
// all of a file's errors are reported at once so one `check-config` run finds them all.
#pragma once

#include <string>
#include <string_view>

#include "base/Result.h"
#include "policies/Policy.h"

namespace reclaimd::policies {

// Parses policy text; `source` names it in messages (a path, or "<built-in>").
// Errors: Errc::Invalid with one "source:line:column: key: problem" line per problem.
Result<Policy> parsePolicy(std::string_view text, const std::string& source);

// Reads and parses a policy file. Errors: the read errno with the path, or parsePolicy's.
Result<Policy> loadPolicyFile(const std::string& path);

}  // namespace reclaimd::policies
