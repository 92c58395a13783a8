#pragma once

// What a write transaction has read from a stream, kept so that retrying()
// can run the transaction again: a bulk add or an import reads its input
// as it writes, and a stream (a pipe, stdin) cannot be read twice. The
// items go to a temporary file as they are read, so memory does not grow
// with the input; a try after the first reads them back from there, then
// goes on with the stream where the first try left it.

#include "core/error.hpp"
#include "storage/log_types.hpp"
#include "storage/seam/db.hpp"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <unistd.h>
#include <utility>

namespace taskq::storage::detail {

// The bytes of an item, written and read back in one order.
inline void put(std::FILE* f, const std::string& s) {
  const uint64_t n = s.size();
  std::fwrite(&n, sizeof n, 1, f);
  std::fwrite(s.data(), 1, s.size(), f);
}
inline bool get(std::FILE* f, std::string& s) {
  uint64_t n = 0;
  if (std::fread(&n, sizeof n, 1, f) != 1) {
    return false;
  }
  s.resize(n);
  return std::fread(s.data(), 1, n, f) == n;
}
inline void put(std::FILE* f, int64_t v) {
  std::fwrite(&v, sizeof v, 1, f);
}
inline bool get(std::FILE* f, int64_t& v) {
  return std::fread(&v, sizeof v, 1, f) == 1;
}
inline void put(std::FILE* f, const ImageRow& row) {
  put(f, static_cast<int64_t>(row.size()));
  for (const auto& [column, value] : row) {
    put(f, column);
    put(f, value);
  }
}
inline bool get(std::FILE* f, ImageRow& row) {
  int64_t n = 0;
  if (!get(f, n)) {
    return false;
  }
  row.assign(static_cast<size_t>(n), {});
  for (auto& [column, value] : row) {
    if (!get(f, column) || !get(f, value)) {
      return false;
    }
  }
  return true;
}
inline void put(std::FILE* f, const std::vector<ImageRow>& rows) {
  put(f, static_cast<int64_t>(rows.size()));
  for (const ImageRow& row : rows) {
    put(f, row);
  }
}
inline bool get(std::FILE* f, std::vector<ImageRow>& rows) {
  int64_t n = 0;
  if (!get(f, n)) {
    return false;
  }
  rows.assign(static_cast<size_t>(n), {});
  for (ImageRow& row : rows) {
    if (!get(f, row)) {
      return false;
    }
  }
  return true;
}
inline void put(std::FILE* f, const TaskImage& image) {
  put(f, image.line);
  put(f, image.task);
  put(f, image.errors);
  put(f, image.events);
  put(f, image.deps);
  put(f, image.deliveries);
  put(f, image.output);
  put(f, static_cast<int64_t>(image.flow ? 1 : 0));
  if (image.flow) {
    put(f, image.flow->flow);
    put(f, image.flow->atoms);
    put(f, image.flow->events);
  }
}
inline bool get(std::FILE* f, TaskImage& image) {
  int64_t flow = 0;
  if (!(get(f, image.line) && get(f, image.task) && get(f, image.errors)
        && get(f, image.events) && get(f, image.deps)
        && get(f, image.deliveries) && get(f, image.output) && get(f, flow))) {
    return false;
  }
  image.flow.reset();
  if (flow != 0) {
    image.flow.emplace();
    return get(f, image.flow->flow) && get(f, image.flow->atoms)
           && get(f, image.flow->events);
  }
  return true;
}

// The items of `source` (it fills its argument and returns true, or
// returns false at the end), given once to each try of a transaction.
template <typename Item> class Replay {
public:
  // `keep`: whether a try may come again (on SQLite it never does, and
  // nothing is kept).
  Replay(std::function<bool(Item&)> source, bool keep)
      : m_source(std::move(source)), m_file(keep ? open_spool() : nullptr) {}

  // A try begins: the items read so far come again, first to last.
  void rewind() {
    m_given = 0;
    m_reading = true;
    if (m_file) {
      std::fflush(m_file.get());
      std::rewind(m_file.get());
    }
  }

  // Whether a try may come again: every item read so far is kept (a
  // temporary file that could not be made, or failed, keeps nothing).
  bool replayable() const { return m_file != nullptr && !m_failed; }

  bool next(Item& item) {
    if (m_given < m_kept) {
      if (!get(m_file.get(), item)) {
        throw Error(ErrorKind::unavailable,
                    "cannot read back the input kept in a temporary file");
      }
      ++m_given;
      return true;
    }
    if (m_ended) {
      return false;
    }
    if (!m_source(item)) {
      m_ended = true;
      return false;
    }
    if (m_file && !m_failed) {
      if (m_reading) {
        // From reading the kept items to keeping new ones.
        std::fseek(m_file.get(), 0, SEEK_END);
        m_reading = false;
      }
      put(m_file.get(), item);
      m_failed = std::ferror(m_file.get()) != 0;
    }
    ++m_kept;
    ++m_given;
    return true;
  }

private:
  struct Close {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };

  // An unnamed temporary file ($TMPDIR, or /tmp), gone when closed;
  // null where none can be made (a conflict is then not run again).
  static std::unique_ptr<std::FILE, Close> open_spool() {
    std::error_code ec;
    std::string name =
        (std::filesystem::temp_directory_path(ec) / "taskq-input-XXXXXX")
            .string();
    if (ec) {
      return nullptr;
    }
    const int fd = ::mkstemp(name.data());
    if (fd < 0) {
      return nullptr;
    }
    ::unlink(name.c_str());
    std::FILE* f = ::fdopen(fd, "w+b");
    if (f == nullptr) {
      ::close(fd);
    }
    return std::unique_ptr<std::FILE, Close>(f);
  }

  std::function<bool(Item&)> m_source;
  std::unique_ptr<std::FILE, Close> m_file;
  int64_t m_kept = 0;  // items read from the source (and kept)
  int64_t m_given = 0; // items given to this try
  bool m_ended = false;
  bool m_reading = true; // the file is positioned for reading
  bool m_failed = false; // a write to the file failed
};

// Runs `work` (a whole write transaction that reads `input`) as retrying()
// does, each try reading `input` again from its first item. Should the
// input not be kept, a conflict ends it as any other error.
template <typename Item, typename Work>
decltype(auto) retrying_with(Replay<Item>& input, Work&& work) {
  return retrying([&]() -> decltype(auto) {
    input.rewind();
    try {
      return work();
    } catch (const TxConflict& e) {
      if (!input.replayable()) {
        throw Error(e.kind(), e.what());
      }
      throw;
    }
  });
}

} // namespace taskq::storage::detail
