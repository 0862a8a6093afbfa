#include "controller/record/RecordFormat.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <limits>

namespace reclaimd::controller {

namespace {

constexpr char kHex[] = "0123456789ABCDEF";

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}


}  // namespace

LineWriter& LineWriter::u(std::uint64_t v) {
  return word(std::to_string(v));
}

LineWriter& LineWriter::i(std::int64_t v) {
  return word(std::to_string(v));
}

LineWriter& LineWriter::word(std::string_view v) {
  line_ += ' ';
  line_ += v;
  return *this;
}

LineWriter& LineWriter::s(std::string_view v) {
  line_ += ' ';
  if (v.empty()) line_ += "%";  // an empty string is one lone '%', which no escape produces
  for (const char c : v) {
    const auto b = static_cast<unsigned char>(c);
    if (b <= 0x20 || b >= 0x7f || c == '%') {
      line_ += '%';
      line_ += kHex[b >> 4];
      line_ += kHex[b & 15];
    } else {
      line_ += c;
    }
  }
  return *this;
}

LineWriter& LineWriter::error(const Error& e) {
  const bool own = e.code.category() == reclaimdCategory();
  return word("err").i(e.code.value()).word(own ? "r" : "e").s(e.context);
}

LineReader::LineReader(std::string_view text) : text_(text) {
  const std::string_view line = text_;
  std::size_t at = 0;
  while (at <= line.size()) {
    const std::size_t space = std::min(line.find(' ', at), line.size());
    tokens_.push_back(line.substr(at, space - at));
    at = space + 1;
  }
  kind_ = word();
}

void LineReader::fail(std::string why) {
  if (problem_.empty()) problem_ = std::move(why);
}

std::string LineReader::word() {
  if (next_ >= tokens_.size()) {
    fail("a value is missing");
    return {};
  }
  return std::string(tokens_[next_++]);
}

std::uint64_t LineReader::u(std::uint64_t max) {
  const std::string t = word();
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size() || t.empty() || v > max) {
    fail("'" + t.substr(0, 40) + "' is not a number from 0 to " + std::to_string(max));
    return 0;
  }
  return v;
}

std::int64_t LineReader::i() {
  const std::string t = word();
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size() || t.empty()) {
    fail("'" + t.substr(0, 40) + "' is not a whole number");
    return 0;
  }
  return v;
}

std::string LineReader::s() {
  const std::string t = word();
  if (t == "%") return {};
  std::string out;
  for (std::size_t k = 0; k < t.size(); ++k) {
    if (t[k] != '%') {
      out += t[k];
      continue;
    }
    const int hi = k + 2 < t.size() ? hexValue(t[k + 1]) : -1;
    const int lo = hi >= 0 ? hexValue(t[k + 2]) : -1;
    if (lo < 0) {
      fail("a '%' not followed by two hex digits");
      return {};
    }
    out += static_cast<char>(hi * 16 + lo);
    k += 2;
  }
  return out;
}

bool LineReader::okOrError(Error& error) {
  const std::string t = word();
  if (t == "ok") return true;
  if (t != "err") {
    fail("expected ok or err, not '" + t.substr(0, 40) + "'");
    return false;
  }
  const std::int64_t value = i();
  const std::string category = word();
  std::string context = s();
  const bool own = category == "r";
  if (value < 0 || value > std::numeric_limits<int>::max() || (!own && category != "e") ||
      (own && (value < static_cast<int>(Errc::Parse) || value > static_cast<int>(Errc::Refused)))) {
    fail("an error's value or category is malformed");
    error = errnoError(EINVAL, std::move(context));
    return false;
  }
  const int v = static_cast<int>(value);
  error = category == "r" ? Error{make_error_code(static_cast<Errc>(v)), std::move(context)}
                          : errnoError(v, std::move(context));
  return false;
}

bool LineReader::done() {
  if (next_ < tokens_.size()) fail("more values than a " + kind_ + " line holds");
  return ok();
}

namespace {

// Linux's largest page size (hexagon's 256 KiB; arm64 and powerpc go to 64 KiB), with room.
constexpr std::uint64_t kMaxPageBytes = 1 << 20;

}  // namespace

void writeCaps(LineWriter& w, const Capabilities& c) {
  w.s(c.cgroupRoot).s(c.cgroupProblem).b(c.memoryController).b(c.reclaimWritable).s(c.reclaimProblem);
  w.u(static_cast<std::uint64_t>(c.swappinessKey)).b(c.swapActive).b(c.psiAvailable).s(c.psiProblem);
  w.b(c.psiTriggers).s(c.psiTrigger).s(c.psiTriggerProblem).b(c.compactMemory).b(c.dropCaches);
  w.s(c.dropCachesProblem).s(c.libcgroupMemory).u(c.pageBytes);
}

Capabilities readCaps(LineReader& r) {
  Capabilities c;
  c.cgroupRoot = r.s();
  c.cgroupProblem = r.s();
  c.memoryController = r.b();
  c.reclaimWritable = r.b();
  c.reclaimProblem = r.s();
  c.swappinessKey = static_cast<KeySupport>(r.u(2));
  c.swapActive = r.b();
  c.psiAvailable = r.b();
  c.psiProblem = r.s();
  c.psiTriggers = r.b();
  c.psiTrigger = r.s();
  c.psiTriggerProblem = r.s();
  c.compactMemory = r.b();
  c.dropCaches = r.b();
  c.dropCachesProblem = r.s();
  c.libcgroupMemory = r.s();
  // Refault figures are divided by it: a page of 0 bytes is no page.
  c.pageBytes = r.u(kMaxPageBytes);
  if (c.pageBytes == 0) r.fail("a page size of 0 bytes");
  return c;
}

}  // namespace reclaimd::controller
