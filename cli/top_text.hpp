#pragma once
// What `taskq top` writes in its cells: short durations, and text fitted
// to the columns the terminal shows it in.
#include "core/time.hpp"

#include <string>
#include <string_view>

namespace taskq::cli::top {

// `d` in at most 5 columns: 45s, 3m05s, 2h07m, 3d04h.
std::string short_duration(core::Millis d);

// How the terminal shows text: one cell per column, `…` or `~` where cut.
class TextFit {
public:
  TextFit();

  // `text` as one line of at most `width` columns: control characters
  // become spaces; bytes that are not UTF-8 (and, outside a UTF-8 locale,
  // every non-ASCII character) become `?`. Padded to `width` with spaces,
  // on the left when `right`.
  std::string fit(std::string_view text, int width, bool right) const;

  // How many columns `text` takes as fit() writes it, counting at most
  // `limit`.
  int columns(std::string_view text, int limit) const;

private:
  // The longest head of `text` that fits `width` columns, as fit() writes
  // it; `used`: its columns, `cut`: whether text was left over.
  std::string take(std::string_view text, int width, int& used,
                   bool& cut) const;

  int width_of(const std::string& piece) const;

  bool m_utf8 = false;
};

} // namespace taskq::cli::top
