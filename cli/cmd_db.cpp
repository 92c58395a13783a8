// Database administration: db path, check, migrate, backup, vacuum.
#include "cli/commands.hpp"
#include "core/error.hpp"

#include <cstdio>
#include <filesystem>
#include <memory>

namespace taskq::cli {
namespace {

// Administration of a database that does not exist is a mistake (a typo in
// --db), not an empty database.
storage::TaskStore& existing_store(Context& ctx) {
  const std::string path = ctx.db_path();
  std::error_code ec;
  if (!storage::is_postgres_url(path) && !std::filesystem::exists(path, ec)) {
    throw Error(ErrorKind::unavailable, "no database at " + path);
  }
  return ctx.store(storage::OpenMode::read);
}

} // namespace

void register_db(CLI::App& app, Context& ctx) {
  CLI::App* db =
      add_command(app, "db", "Database administration", "taskq db check");
  db->require_subcommand(1);

  add_command(*db, "path", "Print the database file's path", "taskq db path")
      ->callback([&ctx] {
        // A URL's password is never printed (SPEC §5).
        std::puts(storage::redact_url(ctx.db_path()).c_str());
      });

  add_command(*db, "check",
              "Check the database's integrity and taskq's invariants (exit 5 "
              "when unhealthy)",
              "taskq db check")
      ->callback([&ctx] {
        const auto r = existing_store(ctx).check();
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
        std::printf("ok: schema version %d, %lld tasks\n", r.schema_version,
                    static_cast<long long>(r.tasks));
      });

  add_command(*db, "migrate",
              "Apply pending schema migrations (every command does this on "
              "open); prints the schema version",
              "taskq db migrate")
      ->callback([&ctx] {
        std::printf("%d\n", ctx.store(storage::OpenMode::write).migrate());
      });

  auto dest = std::make_shared<std::string>();
  CLI::App* backup = add_command(
      *db, "backup",
      "Copy the database to FILE (online: workers may keep running)",
      "taskq db backup /var/backups/taskq.db");
  backup->add_option("file", *dest, "a new file")->required();
  backup->callback([dest, &ctx] { existing_store(ctx).backup(*dest); });

  add_command(*db, "vacuum",
              "Rebuild the database file, giving the space of deleted tasks "
              "back (waits for other writers; run it after a big purge)",
              "taskq db vacuum")
      ->callback([&ctx] {
        existing_store(ctx);
        ctx.store(storage::OpenMode::write).vacuum();
      });
}

} // namespace taskq::cli
