// Database administration: db path, check, migrate, backup, vacuum.
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/error.hpp"

#include <cstdio>
#include <memory>

namespace taskq::cli {
void register_db(CLI::App& app, Context& ctx) {
  CLI::App* db =
      add_command(app, "db", "Database administration", "taskq db check");
  db->require_subcommand(1);

  add_command(*db, "path", "Print the database file's path", "taskq db path")
      ->callback([&ctx] {
        // A URL's password is never printed
        // (doc/reference/postgresql.md#behaviour-on-postgresql).
        const Format format =
            ctx.format(Format::table, {Format::table, Format::json});
        const std::string path = storage::redact_url(ctx.db_path());
        if (format == Format::json) {
          print_json(Json{{"path", path}});
        } else {
          std::puts(path.c_str());
        }
      });

  add_command(*db, "check",
              "Check the database's integrity and taskq's invariants (exit 5 "
              "when unhealthy)",
              "taskq db check")
      ->callback([&ctx] {
        const Format format =
            ctx.format(Format::table, {Format::table, Format::json});
        const auto r = ctx.store(storage::OpenMode::read).check();
        if (!r.ok) {
          // One line, as every error: the problems joined by "; ".
          std::string problems;
          for (const auto& p : r.problems) {
            problems += (problems.empty() ? " " : "; ") + p;
          }
          throw Error(ErrorKind::unavailable,
                      "database " + storage::redact_url(ctx.db_path())
                          + " is unhealthy:" + problems);
        }
        if (format == Format::json) {
          print_json(Json{{"ok", true},
                          {"schema_version", r.schema_version},
                          {"tasks", r.tasks}});
        } else {
          std::printf("ok: schema version %d, %lld tasks\n", r.schema_version,
                      static_cast<long long>(r.tasks));
        }
      });

  add_command(*db, "migrate",
              "Apply pending schema migrations (every command does this on "
              "open); prints the schema version",
              "taskq db migrate")
      ->callback([&ctx] {
        const Format format =
            ctx.format(Format::table, {Format::table, Format::json});
        const int version = ctx.store(storage::OpenMode::write).migrate();
        if (format == Format::json) {
          print_json(Json{{"schema_version", version}});
        } else {
          std::printf("%d\n", version);
        }
      });

  auto dest = std::make_shared<std::string>();
  CLI::App* backup = add_command(
      *db, "backup",
      "Copy the database to FILE (online: workers may keep running)",
      "taskq db backup /var/backups/taskq.db");
  backup->add_option("file", *dest, "a new file")->required();
  backup->callback(
      [dest, &ctx] { ctx.store(storage::OpenMode::read).backup(*dest); });

  add_command(*db, "vacuum",
              "Rebuild the database file, giving the space of deleted tasks "
              "back (waits for other writers; run it after a big purge)",
              "taskq db vacuum")
      ->callback([&ctx] { ctx.store(storage::OpenMode::update).vacuum(); });
}

} // namespace taskq::cli
