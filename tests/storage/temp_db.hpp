#pragma once

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace taskq::test {

// A unique database path in a fresh temporary folder. The file itself does
// not exist until a store creates it; the destructor removes it with its
// -wal and -shm files, and the folder with anything else a test put there
// (backups, sub-folders).
class TempDb {
public:
  TempDb() {
    const std::string pattern =
        (std::filesystem::temp_directory_path() / "taskq-test-XXXXXX").string();
    std::string buffer = pattern;
    if (::mkdtemp(buffer.data()) == nullptr) {
      throw std::runtime_error("mkdtemp failed for " + pattern);
    }
    m_dir = buffer;
    m_path = (m_dir / "taskq.db").string();
  }
  ~TempDb() {
    std::error_code ec; // a destructor must not throw
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
      std::filesystem::remove(m_path + suffix, ec);
    }
    std::filesystem::remove_all(m_dir, ec);
  }
  TempDb(const TempDb&) = delete;
  TempDb& operator=(const TempDb&) = delete;

  const std::string& path() const { return m_path; }
  // The folder holding path(); other files of a test go here.
  const std::filesystem::path& dir() const { return m_dir; }
  // A path beside the database, for backups and other files.
  std::string sibling(const std::string& name) const {
    return (m_dir / name).string();
  }

private:
  std::filesystem::path m_dir;
  std::string m_path;
};

} // namespace taskq::test
