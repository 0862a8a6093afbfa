#include "base/Event.h"

#include <cstdio>

#include "base/Text.h"

namespace reclaimd {

namespace {

bool safeByte(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '_':
    case '=':
    case '.':
    case ',':
    case ':':
    case '/':
    case '@':
    case '%':
    case '+':
    case '-': return true;
    default: return false;
  }
}

void appendHex(std::string& out, unsigned char c) {
  char buf[5];
  std::snprintf(buf, sizeof buf, "\\x%02x", c);
  out += buf;
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string escapeValue(std::string_view raw) {
  bool bare = !raw.empty();
  for (char c : raw)
    bare = bare && safeByte(static_cast<unsigned char>(c));
  if (bare) return std::string(raw);
  std::string out = "\"";
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const auto c = static_cast<unsigned char>(raw[i]);
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\t': out += "\\t"; continue;
      case '\r': out += "\\r"; continue;
      default: break;
    }
    if (c < 0x20 || c == 0x7F) {
      appendHex(out, c);
    } else if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (const std::size_t n = utf8Length(raw, i); n > 0) {
      out.append(raw.substr(i, n));
      i += n - 1;
    } else {
      appendHex(out, c);
    }
  }
  return out + "\"";
}

std::string unescapeQuoted(std::string_view in) {
  std::string out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '\\' || i + 1 == in.size()) {
      out.push_back(in[i]);
      continue;
    }
    const char e = in[++i];
    switch (e) {
      case 'n': out.push_back('\n'); break;
      case 't': out.push_back('\t'); break;
      case 'r': out.push_back('\r'); break;
      case 'x':
        if (i + 2 < in.size() && hexValue(in[i + 1]) >= 0 && hexValue(in[i + 2]) >= 0) {
          out.push_back(static_cast<char>(hexValue(in[i + 1]) * 16 + hexValue(in[i + 2])));
          i += 2;
        } else {
          out.push_back('x');
        }
        break;
      default: out.push_back(e); break;
    }
  }
  return out;
}

Event& Event::add(std::string_view key, std::string_view value) {
  fields_.emplace_back(std::string(key), std::string(value));
  return *this;
}

Event& Event::add(std::string_view key, double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return add(key, std::string_view(buf));
}

Event& Event::mib(std::string_view key, std::uint64_t bytes) {
  return add(key, static_cast<double>(bytes) / (1024.0 * 1024.0), 1);
}

Event& Event::mibSigned(std::string_view key, std::int64_t bytes) {
  return add(key, static_cast<double>(bytes) / (1024.0 * 1024.0), 1);
}

Event& Event::ms(std::string_view key, std::chrono::nanoseconds d) {
  return add(key, std::chrono::duration<double, std::milli>(d).count(), 1);
}

std::optional<std::string> Event::field(std::string_view key) const {
  for (const auto& [k, v] : fields_) {
    if (k == key) return v;
  }
  return std::nullopt;
}

std::string Event::text() const {
  std::string out = "event=" + escapeValue(name_);
  for (const auto& [k, v] : fields_) {
    out += ' ';
    out += k;
    out += '=';
    out += escapeValue(v);
  }
  return out;
}

}  // namespace reclaimd
