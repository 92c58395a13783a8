#pragma once

// HTML built so that text is escaped unless markup is asked for by name:
// put()'s first argument must be a string literal (the page's own markup),
// and every value put into it is escaped, unless wrapped in Raw.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace taskq::web {

// `s` with & < > " ' as entities: safe in text and in quoted attributes.
std::string escape(std::string_view s);

// Markup that is already HTML (built by an Html, or a constant of ours).
struct Raw {
  std::string_view html;
};

class Html {
public:
  // Appends `markup` with each `{}` replaced by the next argument, escaped
  // (strings) or printed (integers); a Raw or an Html goes in as it is.
  template <size_t N, class... Args>
  Html& put(const char (&markup)[N], const Args&... args) {
    std::string_view rest(markup, N - 1);
    (put_one(rest, args), ...);
    m_out += rest;
    return *this;
  }
  Html& text(std::string_view s) {
    m_out += escape(s);
    return *this;
  }
  Html& add(const Html& other) {
    m_out += other.m_out;
    return *this;
  }
  const std::string& str() const { return m_out; }
  std::string take() { return std::move(m_out); }
  bool empty() const { return m_out.empty(); }

private:
  void literal_until_hole(std::string_view& rest) {
    const size_t at = rest.find("{}");
    m_out += rest.substr(0, at);
    rest =
        at == std::string_view::npos ? std::string_view{} : rest.substr(at + 2);
  }
  template <class T> void put_one(std::string_view& rest, const T& value) {
    literal_until_hole(rest);
    if constexpr (std::is_same_v<T, Raw>) {
      m_out += value.html;
    } else if constexpr (std::is_same_v<T, Html>) {
      m_out += value.m_out;
    } else if constexpr (std::is_integral_v<T>) {
      m_out += std::to_string(value);
    } else {
      m_out += escape(std::string_view(value));
    }
  }

  std::string m_out;
};

// `s` percent-encoded for a URL's query or path segment (RFC 3986's
// unreserved characters kept).
std::string url_encode(std::string_view s);

// `s` percent-decoded, `+` as a space (a form's encoding); nullopt-free:
// a malformed escape is kept as it is.
std::string url_decode(std::string_view s);

// A form body (application/x-www-form-urlencoded) as name/value pairs.
template <class Pairs> Pairs parse_form(std::string_view body) {
  Pairs out;
  while (!body.empty()) {
    const size_t amp = body.find('&');
    const std::string_view item = body.substr(0, amp);
    body = amp == std::string_view::npos ? std::string_view{}
                                         : body.substr(amp + 1);
    if (item.empty()) {
      continue;
    }
    const size_t eq = item.find('=');
    out.emplace_back(url_decode(item.substr(0, eq)),
                     eq == std::string_view::npos
                         ? std::string()
                         : url_decode(item.substr(eq + 1)));
  }
  return out;
}

// Whether `s` is well-formed UTF-8 (no overlongs, no surrogates).
bool valid_utf8(std::string_view s);

} // namespace taskq::web
