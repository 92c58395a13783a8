// A scratch folder for the fuzz targets that run taskq in-process, in
// memory (/dev/shm) when it can be: each input writes its own databases.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

namespace taskq::fuzz {

class Scratch {
public:
  Scratch() {
    std::string base = "/dev/shm";
    if (!std::filesystem::is_directory(base)) {
      const char* tmp = std::getenv("TMPDIR");
      base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
    }
    std::string pattern = base + "/taskq-fuzz-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror("taskq fuzz: mkdtemp");
      std::abort();
    }
    m_dir = pattern;
  }
  ~Scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(m_dir, ignored);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  // A path in the folder.
  std::string path(std::string_view name) const {
    return m_dir + "/" + std::string(name);
  }
  // Writes `bytes` to the file `name`; returns its path.
  std::string write(std::string_view name, std::string_view bytes) const {
    const std::string p = path(name);
    std::FILE* f = std::fopen(p.c_str(), "wb");
    if (f == nullptr
        || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
      std::perror("taskq fuzz: write");
      std::abort();
    }
    std::fclose(f);
    return p;
  }
  // Removes the database `name` and its -wal, -shm and -journal files.
  void remove_db(std::string_view name) const {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
      std::filesystem::remove(path(name) + suffix);
    }
  }

private:
  std::string m_dir;
};

} // namespace taskq::fuzz
