#pragma once

// What `run`'s worker engine needs of the command: its context
// (cli/cmd_run.cpp).

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "worker/reconnect.hpp"
#include "worker/run.hpp"

#include <csignal>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

namespace taskq::cli {

// What the engine needs of this command: its context.
// The note on queues that have never had a task (note_unknown_queues)
// comes once the store is open, at the engine's first call: after the
// engine has taken over SIGTERM, so that a signal while the store opens (a
// PostgreSQL connect may wait) ends the run as it would later.
//
// A worker started while its server is away (a supervisor restarting it
// during a restart or failover) waits for the server as a running one
// does, for --reconnect-for, unless a signal came meanwhile (the engine
// has it blocked: it is pending).
class ContextHost : public worker::Host {
public:
  ContextHost(Context& ctx, std::optional<std::vector<std::string>> note,
              std::optional<core::Millis> reconnect_for,
              Notes notes = Notes::all)
      : m_ctx(ctx), m_note(std::move(note)), m_reconnect_for(reconnect_for),
        m_notes(notes) {}
  storage::TaskStore& store() override {
    auto& store = open();
    if (m_note) {
      const auto queues = std::move(*m_note);
      m_note.reset();
      note_unknown_queues(store, queues, m_notes);
    }
    return store;
  }
  std::string worker() const override { return m_ctx.worker(); }
  std::string db_path() const override { return m_ctx.db_path(); }
  core::Time live_now() override { return m_ctx.live_now(); }
  std::string task_json(const core::Task& task, core::Time now) override {
    return cli::task_json(task, now);
  }

private:
  storage::TaskStore& open() {
    worker::Reconnect rc("run", m_reconnect_for);
    while (true) {
      try {
        auto& store = m_ctx.store(storage::OpenMode::update);
        rc.ok(worker::Clock::now());
        return store;
      } catch (const ConnectionLost& e) {
        rc.lost(e, worker::Clock::now());
        while (!signalled() && !rc.gave_up(worker::Clock::now())
               && !rc.try_due(worker::Clock::now())) {
          ::usleep(20 * 1000);
        }
        if (signalled() || rc.gave_up(worker::Clock::now())) {
          throw;
        }
      }
    }
  }

  static bool signalled() {
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    return sigismember(&pending, SIGTERM) == 1
           || sigismember(&pending, SIGINT) == 1
           || sigismember(&pending, SIGHUP) == 1;
  }

  Context& m_ctx;
  std::optional<std::vector<std::string>> m_note; // queues to note, once
  std::optional<core::Millis> m_reconnect_for;
  Notes m_notes; // Notes::typos under -q
};

} // namespace taskq::cli
