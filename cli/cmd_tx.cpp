// `taskq tx [FILE|-]`: one JSON document of predicates, deletes, updates,
// creates and completes, applied atomically (MassTasker's Update).
#include "cli/commands.hpp"
#include "cli/json_fields.hpp"
#include "cli/output.hpp"
#include "core/error.hpp"
#include "core/json_text.hpp"
#include "core/new_task.hpp"

#include <memory>

namespace taskq::cli {
namespace {

// Calls `read(fields)` for each object of the array `list` of the
// document (absent: none), each named `list[i]` in errors.
template <typename Read>
void each_op(JsonFields& doc, const char* list, Read read) {
  const auto items = doc.take(list);
  if (!items) {
    return;
  }
  if (core::json_kind(*items) != core::JsonKind::array) {
    doc.fail(list, "must be an array of operations");
  }
  size_t i = 0;
  for (const auto item : core::json_items(*items)) {
    JsonFields op(item, std::string(list) + "[" + std::to_string(i++) + "]");
    read(op);
    op.finish();
  }
}

int64_t task_id(JsonFields& op) {
  const int64_t id = op.required_integer("id");
  if (id < 1) {
    op.fail("id", "must be a task id (1 or more)");
  }
  return id;
}

std::string queue_name(JsonFields& op) {
  std::string q = op.required_string("queue");
  check_name(q, op.where() + ": queue");
  return q;
}

// Refuses, in tx's words, the first rule of a new task that `fields` (the
// create's keys read so far) breaks.
void check_create(JsonFields& op, const core::NewTaskFields& fields) {
  const auto broken = core::check_new_task(fields);
  if (!broken) {
    return;
  }
  if (broken->rule == core::NewTaskRule::queue_name) {
    check_name(*fields.queue, op.where() + ": queue");
  }
  if (broken->rule == core::NewTaskRule::trigger) {
    op.fail(broken->field,
            std::string("must be ") + broken->must + ": '"
                + core::trigger_keys(*fields.trigger).at(broken->index)
                + "' is not");
  }
  op.fail(broken->field, std::string("must be ") + broken->must);
}

// The document `text`, read from `file` (`-`: stdin).
storage::TxRequest parse_tx(const std::string& text, const std::string& file) {
  if (const auto why = core::json_error(text)) {
    throw Error(ErrorKind::usage, "tx: the document "
                                      + (file == "-" ? "on stdin" : file)
                                      + " is not valid JSON: " + *why);
  }
  JsonFields doc(text, "tx");
  storage::TxRequest req;
  each_op(doc, "require", [&](JsonFields& op) {
    const int64_t id = task_id(op);
    req.require.push_back({id, op.required_integer("rev")});
  });
  each_op(doc, "delete", [&](JsonFields& op) {
    const int64_t id = task_id(op);
    req.remove.push_back({id, op.string("lease")});
  });
  each_op(doc, "update", [&](JsonFields& op) {
    storage::TxUpdate u;
    u.id = task_id(op);
    u.rev = op.required_integer("rev");
    u.payload = op.json("payload");
    u.labels = op.labels("labels");
    if (op.take("queue")) {
      u.queue = queue_name(op);
    }
    u.run_at = op.time("run_at");
    u.priority = op.integer("priority");
    req.update.push_back(std::move(u));
  });
  each_op(doc, "create", [&](JsonFields& op) {
    storage::NewTask t;
    core::NewTaskFields fields;
    fields.queue = op.required_string("queue");
    check_create(op, fields);
    t.queue = *fields.queue;
    t.payload = op.json("payload").value_or("null");
    t.labels = op.labels("labels").value_or(core::Labels{});
    t.priority = op.integer("priority").value_or(0);
    t.run_at = op.time("run_at");
    t.max_attempts = op.integer("max_attempts");
    fields.max_attempts = t.max_attempts;
    check_create(op, fields);
    t.after = op.ids("after").value_or(std::vector<int64_t>{});
    fields.after = t.after;
    check_create(op, fields);
    // "trigger": "a,b", as a task's JSON shows it; stored sorted, once.
    fields.trigger = op.string("trigger");
    check_create(op, fields);
    if (fields.trigger) {
      t.trigger = core::normal_trigger(*fields.trigger);
    }
    req.create.push_back(std::move(t));
  });
  each_op(doc, "complete", [&](JsonFields& op) {
    storage::TxComplete c;
    c.id = task_id(op);
    c.lease = op.required_string("lease");
    c.result = op.json("result");
    req.complete.push_back(std::move(c));
  });
  doc.finish();
  return req;
}

} // namespace

void register_tx(CLI::App& app, Context& ctx) {
  auto file = std::make_shared<std::string>("-");
  CLI::App* tx = add_command(
      app, "tx",
      "Apply a JSON document of require/delete/update/create/complete "
      "operations atomically",
      R"(echo '{"update":[{"id":7,"rev":3,"payload":{"n":1}}]}' | taskq tx)");
  tx->add_option("file", *file, "the document; - (the default) reads stdin")
      ->type_name("FILE|-");
  tx->callback([file, &ctx] {
    ctx.format(Format::json, {Format::json});
    const storage::TxRequest req = parse_tx(read_input(*file), *file);
    const auto res = ctx.store(storage::OpenMode::write)
                         .apply_tx(req, ctx.now(), ctx.actor());
    Json updated = Json::array();
    for (const auto& [id, rev] : res.updated) {
      updated.push_back(Json{{"id", id}, {"rev", rev}});
    }
    print_json(Json{{"created", res.created}, {"updated", updated}});
  });
}

} // namespace taskq::cli
