// The child's side of the bounded parse (Guard.h): its limits, its input, its stages.
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <new>

#include "policies/Guard.h"

namespace reclaimd::policies {

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// The most the child reads: kMaxPolicyBytes of text (the parser refuses more) and the headers
// and paths of kMaxDropIns + 1 files (PATH_MAX each).
constexpr std::size_t kMaxInputBytes = kMaxPolicyBytes + (kMaxDropIns + 1) * (4096 + 64);

std::optional<std::size_t> number(std::string_view text) {
  std::size_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

// All of fd 0, up to kMaxInputBytes; nullopt on a read error or more.
// The input, or nullopt when it cannot be read whole: the child's only channel is its exit status
// (kParseChildBadInput), which the parent turns into the message.
std::optional<std::string> readInput() {
  std::string data;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(0, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return data;
    data.append(buffer, static_cast<std::size_t>(n));
    if (data.size() > kMaxInputBytes) return std::nullopt;
  }
}

// Tells the parent how far the parse got (Guard.h's kStageMark, kDoneMark).
void mark(char what) {
  while (::write(1, &what, 1) < 0 && errno == EINTR) {
  }
}

}  // namespace

// setrlimit fails only when a hard limit already lower stops it (EPERM without
// CAP_SYS_RESOURCE), which bounds the child more, and the parent's wall-clock limit ends a child
// whatever its limits: a failure is ignored.
void limitParseResources() {
  const auto cpu = static_cast<rlim_t>(kParseCpuLimit.count());
  const rlimit cpuLimit{cpu, cpu + 1};
  (void)setrlimit(RLIMIT_CPU, &cpuLimit);
  const rlimit noCore{0, 0};
  (void)setrlimit(RLIMIT_CORE, &noCore);
  if (!kSanitized) {
    const rlimit as{kParseMemoryBytes, kParseMemoryBytes};
    (void)setrlimit(RLIMIT_AS, &as);
  }
  std::set_new_handler([] { ::_exit(kParseChildOutOfMemory); });
}

std::string encodePolicyTexts(const std::vector<PolicyText>& files) {
  std::string out;
  for (const PolicyText& f : files)
    out += std::to_string(f.source.size()) + " " + std::to_string(f.text.size()) + "\n" + f.source + f.text;
  return out;
}

Result<std::vector<PolicyText>> decodePolicyTexts(std::string_view data) {
  std::vector<PolicyText> files;
  while (!data.empty()) {
    const std::size_t newline = data.find('\n');
    const std::size_t space = data.substr(0, newline).find(' ');
    if (newline == std::string_view::npos || space == std::string_view::npos) {
      return parseError("policy texts: malformed header");
    }
    const auto sourceBytes = number(data.substr(0, space));
    const auto textBytes = number(data.substr(space + 1, newline - space - 1));
    data.remove_prefix(newline + 1);
    if (!sourceBytes || !textBytes || *sourceBytes > data.size() || *textBytes > data.size() - *sourceBytes) {
      return parseError("policy texts: a length past the end");
    }
    files.push_back(
        PolicyText{std::string(data.substr(0, *sourceBytes)), std::string(data.substr(*sourceBytes, *textBytes))});
    data.remove_prefix(*sourceBytes + *textBytes);
  }
  return files;
}

int parsePolicyChild() {
  limitParseResources();
  auto input = readInput();
  if (!input) return kParseChildBadInput;
  auto files = decodePolicyTexts(*input);
  if (!files) return kParseChildBadInput;
  // The very call the parent makes next, on the same bytes: when it returns here, it returns there.
  (void)parsePolicyFiles(*files, [](std::size_t) { mark(kStageMark); });
  mark(kDoneMark);
  return 0;
}

}  // namespace reclaimd::policies
