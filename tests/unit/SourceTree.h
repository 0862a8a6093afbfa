// The project's own files, for the tests that hold the documentation to the code.
#pragma once

#include <filesystem>
#include <string>

namespace reclaimd::testing {

// The source tree the tests were built from.
inline const std::string kSourceRoot = RECLAIMD_SOURCE_DIR;

// The whole file; throws (the test fails, naming it) when it cannot be read: an empty text
// would let a test that looks for what the file must say pass on nothing.
std::string readSource(const std::filesystem::path& path);
// Overwrites the file (RECLAIMD_REGENERATE=1); throws when it cannot be written.
void writeSource(const std::filesystem::path& path, const std::string& text);

// RECLAIMD_REGENERATE=1: the generated parts of the documentation are rewritten in the source
// tree instead of compared.
bool regenerate();

}  // namespace reclaimd::testing
