// `taskq serve`: the web view (web/), wired to the command line.

#include "cli/commands.hpp"
#include "core/error.hpp"

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <pthread.h>

#include "web/http.hpp"
#include "web/serve.hpp"

namespace taskq::cli {

namespace {

struct ServeArgs {
  std::string listen = "127.0.0.1:8080";
  std::string prefix;
  bool allow_actions = false;
  std::vector<std::string> allow;
  std::string token_file;
  std::string tls_cert;
  std::string tls_key;
};

std::string read_file(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ErrorKind::usage,
                "cannot read " + std::string(what) + " " + path);
  }
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// HOST:PORT, [V6]:PORT, or PORT alone (on 127.0.0.1).
std::pair<std::string, uint16_t> host_port(const std::string& text) {
  std::string host = "127.0.0.1";
  std::string port = text;
  const size_t colon = text.rfind(':');
  if (colon != std::string::npos) {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
  }
  const bool digits =
      !port.empty() && port.size() <= 5
      && port.find_first_not_of("0123456789") == std::string::npos;
  if (host.empty() || !digits || std::stoul(port) > 65535) {
    throw Error(ErrorKind::usage,
                "--listen: give HOST:PORT (127.0.0.1:8080; port 0 picks a "
                "free one), not "
                    + text);
  }
  return {host, static_cast<uint16_t>(std::stoul(port))};
}

void run_serve(const ServeArgs& a, Context& ctx) {
  ctx.format(Format::table, {Format::table});
  web::ServeOptions o;
  std::tie(o.server.host, o.server.port) = host_port(a.listen);
  if (!a.prefix.empty()) {
    const bool ok =
        a.prefix.front() == '/' && a.prefix.back() != '/'
        && a.prefix.find("//") == std::string::npos
        && a.prefix.find_first_not_of(
               "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
               "0123456789-._~/")
               == std::string::npos
        && a.prefix.find("/.") == std::string::npos;
    if (!ok) {
      throw Error(ErrorKind::usage,
                  "--prefix: a path like /taskq (letters, digits, - . _ ~ "
                  "and /, no trailing /), not "
                      + a.prefix);
    }
    o.app.prefix = a.prefix;
  }
  if (a.allow_actions) {
    o.app.rights = {true, true, true};
  }
  for (const auto& r : a.allow) {
    if (r == "operate") {
      o.app.rights.operate = true;
    } else if (r == "bulk") {
      o.app.rights.bulk = true;
    } else if (r == "queues") {
      o.app.rights.queues = true;
    } else {
      throw Error(ErrorKind::usage,
                  "--allow: operate, bulk or queues, not " + r);
    }
  }
  if (!a.token_file.empty()) {
    std::string token = read_file(a.token_file, "--token-file");
    token = token.substr(0, token.find_first_of("\r\n"));
    if (token.size() < 16) {
      throw Error(ErrorKind::usage,
                  "--token-file: its first line must be a token of 16 "
                  "characters or more (openssl rand -hex 32 > FILE)");
    }
    o.app.token = token;
  }
  if (a.tls_cert.empty() != a.tls_key.empty()) {
    throw Error(ErrorKind::usage, "give --tls-cert and --tls-key together");
  }
  if (!a.tls_cert.empty()) {
    o.server.tls_cert = read_file(a.tls_cert, "--tls-cert");
    o.server.tls_key = read_file(a.tls_key, "--tls-key");
    o.app.tls = true;
  }
  if (!web::loopback_host(o.server.host) && !o.app.token) {
    throw Error(ErrorKind::usage,
                "refusing to serve on " + o.server.host
                    + " without a login: give --token-file FILE, or listen "
                      "on 127.0.0.1");
  }
  // The database must be there: serve makes none.
  const auto mode =
      o.app.rights.operate || o.app.rights.bulk || o.app.rights.queues
          ? storage::OpenMode::update
          : storage::OpenMode::read;
  // SIGINT and SIGTERM end serve; the server's threads must not take them
  // (blocked before the store opens: a store may start a thread).
  sigset_t stops;
  sigemptyset(&stops);
  sigaddset(&stops, SIGINT);
  sigaddset(&stops, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stops, nullptr);
  ctx.store(mode);
  const std::string path = ctx.db_path();
  auto clock_mutex = std::make_shared<std::mutex>();
  web::serve(
      o,
      [path, mode] { return std::make_unique<storage::TaskStore>(path, mode); },
      [&ctx, clock_mutex] {
        std::lock_guard lock(*clock_mutex);
        return ctx.live_now();
      },
      [&o](const std::string& url) {
        std::printf("%s\n", url.c_str());
        std::fflush(stdout);
        std::fprintf(
            stderr, "taskq: serving the view at %s (%s); Ctrl-C stops\n",
            url.c_str(),
            o.app.rights.operate || o.app.rights.bulk || o.app.rights.queues
                ? "actions allowed"
                : "read-only");
      });
}

} // namespace

void register_serve(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* serve = add_command(
      app, "serve",
      "Serve a web view of the database: queues, tasks, history and errors, "
      "live; read-only unless --allow-actions. Prints its URL on stdout",
      "taskq serve --listen 127.0.0.1:0");
  serve
      ->add_option("--listen", a->listen,
                   "HOST:PORT to listen at (default 127.0.0.1:8080; port 0: "
                   "a free one). Other than loopback needs --token-file")
      ->type_name("HOST:PORT");
  serve
      ->add_option("--prefix", a->prefix,
                   "the path the view lives under behind a proxy (/taskq)")
      ->type_name("PATH");
  serve->add_flag("--allow-actions", a->allow_actions,
                  "let the view change tasks and queues (else read-only)");
  serve
      ->add_option("--allow", a->allow,
                   "only these classes of action: operate, bulk, queues")
      ->type_name("CLASS")
      ->delimiter(',');
  serve
      ->add_option("--token-file", a->token_file,
                   "require the token on this file's first line (a header "
                   "Authorization: Bearer TOKEN, or the sign-in page)")
      ->type_name("FILE");
  serve->add_option("--tls-cert", a->tls_cert, "serve HTTPS: certificate (PEM)")
      ->type_name("FILE");
  serve->add_option("--tls-key", a->tls_key, "serve HTTPS: private key (PEM)")
      ->type_name("FILE");
  serve->callback([a, &ctx] { run_serve(*a, ctx); });
}

} // namespace taskq::cli
