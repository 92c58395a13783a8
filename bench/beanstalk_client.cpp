// bench/stream's beanstalkd baseline: the least a client can do against
// beanstalkd (Debian's `beanstalkd`, its write-ahead log on, fsync every
// 50 ms: its default) to queue and work through jobs.
//
//   taskq_bench_beanstalk put PORT N    puts jobs "1" .. "N" (as taskq add
//                                       --lines puts its tasks' payloads)
//   taskq_bench_beanstalk work PORT     reserves and deletes ready jobs
//                                       until none is ready
//                                       (reserve-with-timeout 0)
//
// One connection, one request at a time, each answer read before the next
// is sent: as a worker that acts on a job before it takes the next. Prints
// how many jobs it put or deleted.

#include <arpa/inet.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string>
#include <string_view>
#include <sys/socket.h>
#include <unistd.h>

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "taskq_bench_beanstalk: %s\n", what.c_str());
  std::exit(1);
}

class Conn {
public:
  explicit Conn(int port) {
    m_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (m_fd < 0) {
      die("socket");
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(m_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      die("cannot connect to 127.0.0.1:" + std::to_string(port));
    }
    const int one = 1;
    setsockopt(m_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~Conn() { close(m_fd); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  void send(std::string_view s) {
    while (!s.empty()) {
      const ssize_t n = ::write(m_fd, s.data(), s.size());
      if (n <= 0) {
        die("write");
      }
      s.remove_prefix(static_cast<size_t>(n));
    }
  }

  // The next line, without its "\r\n".
  std::string line() {
    for (;;) {
      const size_t end = m_buf.find("\r\n");
      if (end != std::string::npos) {
        std::string out = m_buf.substr(0, end);
        m_buf.erase(0, end + 2);
        return out;
      }
      fill();
    }
  }

  // `n` bytes of a job's body and its "\r\n".
  void skip(size_t n) {
    while (m_buf.size() < n + 2) {
      fill();
    }
    m_buf.erase(0, n + 2);
  }

private:
  void fill() {
    char chunk[65536];
    const ssize_t n = ::read(m_fd, chunk, sizeof chunk);
    if (n <= 0) {
      die("the server closed the connection");
    }
    m_buf.append(chunk, static_cast<size_t>(n));
  }

  int m_fd = -1;
  std::string m_buf;
};

long put(Conn& c, long n) {
  for (long i = 1; i <= n; ++i) {
    const std::string body = std::to_string(i);
    c.send("put 1024 0 60 " + std::to_string(body.size()) + "\r\n" + body
           + "\r\n");
    const std::string answer = c.line();
    if (answer.rfind("INSERTED ", 0) != 0) {
      die("put: " + answer);
    }
  }
  return n;
}

long work(Conn& c) {
  long deleted = 0;
  for (;;) {
    c.send("reserve-with-timeout 0\r\n");
    const std::string answer = c.line();
    if (answer == "TIMED_OUT") {
      return deleted;
    }
    unsigned long long id = 0;
    size_t bytes = 0;
    if (std::sscanf(answer.c_str(), "RESERVED %llu %zu", &id, &bytes) != 2) {
      die("reserve: " + answer);
    }
    c.skip(bytes);
    c.send("delete " + std::to_string(id) + "\r\n");
    const std::string done = c.line();
    if (done != "DELETED") {
      die("delete: " + done);
    }
    ++deleted;
  }
}

} // namespace

int main(int argc, char** argv) {
  const std::string_view usage =
      "usage: taskq_bench_beanstalk put PORT N | work PORT\n";
  if (argc < 3) {
    std::fputs(usage.data(), stderr);
    return 2;
  }
  const std::string_view what = argv[1];
  Conn c(std::atoi(argv[2]));
  if (what == "put" && argc == 4) {
    std::printf("%ld\n", put(c, std::atol(argv[3])));
  } else if (what == "work" && argc == 3) {
    std::printf("%ld\n", work(c));
  } else {
    std::fputs(usage.data(), stderr);
    return 2;
  }
  return 0;
}
