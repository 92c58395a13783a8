// Every route of `taskq serve` (web/app.cpp) over a real socket and a real
// database: pages, JSON answers equal to the CLI's -o json, actions and
// what they change, stale revisions, bulk actions, live updates, and the
// checks every request passes (read-only, token, cross-site, prefix,
// security headers, escaping, no password shown).

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "web/html.hpp"
#include "web_harness.hpp"

using namespace taskq;
using namespace taskq::test;
using namespace taskq::test::web_tests;

namespace {

core::Json parse(const std::string& text) {
  return core::Json::parse(text);
}

ServerSetup actions_allowed() {
  ServerSetup s;
  s.app.rights = all_rights();
  return s;
}

// The value of every `href="..."` in `html`, entities of & undone.
std::vector<std::string> links(const std::string& html) {
  std::vector<std::string> out;
  size_t at = 0;
  while ((at = html.find("href=\"", at)) != std::string::npos) {
    at += 6;
    const size_t end = html.find('"', at);
    std::string v = html.substr(at, end - at);
    for (size_t amp; (amp = v.find("&amp;")) != std::string::npos;) {
      v.replace(amp, 5, "&");
    }
    out.push_back(v);
    at = end;
  }
  return out;
}

std::optional<std::string> next_link(const std::string& html) {
  const size_t at = html.find("<a rel=\"next\" href=\"");
  if (at == std::string::npos) {
    return std::nullopt;
  }
  const size_t from = at + 20;
  std::string v = html.substr(from, html.find('"', from) - from);
  for (size_t amp; (amp = v.find("&amp;")) != std::string::npos;) {
    v.replace(amp, 5, "&");
  }
  return v;
}

// The ids of the rows of a tasks page (data-id="N").
std::vector<int64_t> row_ids(const std::string& html) {
  std::vector<int64_t> out;
  size_t at = 0;
  while ((at = html.find("<tr data-id=\"", at)) != std::string::npos) {
    at += 13;
    out.push_back(std::atoll(html.c_str() + at));
  }
  return out;
}

std::string form_rev(const core::Task& t) {
  return "rev=" + std::to_string(t.rev);
}

void check_hardened(const Answer& a, const std::string& what) {
  INFO(what);
  const std::string csp = a.header("Content-Security-Policy");
  CHECK(has(csp, "default-src 'none'"));
  CHECK(has(csp, "script-src 'self'"));
  CHECK(has(csp, "frame-ancestors 'none'"));
  CHECK_FALSE(has(csp, "unsafe-inline"));
  CHECK_FALSE(has(csp, "unsafe-eval"));
  CHECK(a.header("X-Frame-Options") == "DENY");
  CHECK(a.header("X-Content-Type-Options") == "nosniff");
}

} // namespace

TEST_CASE("GET /: the overview, and its JSON is stats -o json") {
  TempDb db;
  seed(db.path());
  Served s(db.path());
  const Answer html = s.send(get("/"));
  CHECK(html.status == 200);
  CHECK(has(html.header("Content-Type"), "text/html"));
  CHECK(has(html.body, "<h1>Overview</h1>"));
  CHECK(has(html.body, ">alpha</a>"));
  CHECK(has(html.body, ">beta</a>"));

  const Answer json = s.send(get_json("/"));
  REQUIRE(json.status == 200);
  CHECK(json.header("Content-Type") == "application/json");
  const core::Json web = parse(json.body);
  // stats -o json: one object a line.
  core::Json lines = core::Json::array();
  const std::string text = cli(db.path(), "stats -o json");
  size_t at = 0;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    lines.push_back(parse(text.substr(at, nl - at)));
    at = nl == std::string::npos ? text.size() : nl + 1;
  }
  REQUIRE(lines.size() == 2);
  CHECK(web == lines);
  // ?format=json is the same answer.
  CHECK(parse(s.send(get("/?format=json")).body) == web);
}

TEST_CASE("GET /tasks: filters, keyset pages that cover every task, text") {
  TempDb db;
  const Seeded seeded = seed(db.path());
  Served s(db.path());

  // JSON pages of 10, newest first, followed by their cursor.
  std::vector<int64_t> seen;
  std::string target = "/tasks?queue=beta&limit=10";
  int pages = 0;
  for (;;) {
    const Answer a = s.send(get_json(target));
    REQUIRE(a.status == 200);
    const core::Json j = parse(a.body);
    for (const auto& t : j["tasks"]) {
      seen.push_back(t["id"].get<int64_t>());
      CHECK(t["queue"] == "beta");
    }
    ++pages;
    REQUIRE(pages < 10);
    if (j["next"].is_null()) {
      break;
    }
    target = "/tasks?queue=beta&limit=10&cursor="
             + std::to_string(j["next"].get<int64_t>());
  }
  CHECK(pages == 3);
  std::vector<int64_t> expect(seeded.beta.rbegin(), seeded.beta.rend());
  CHECK(seen == expect);

  // The HTML pages, by their "Next page" links, oldest first.
  seen.clear();
  target = "/tasks?queue=beta&limit=7&oldest=1";
  pages = 0;
  for (;;) {
    const Answer a = s.send(get(target));
    REQUIRE(a.status == 200);
    for (const int64_t id : row_ids(a.body)) {
      seen.push_back(id);
    }
    ++pages;
    REQUIRE(pages < 10);
    const auto next = next_link(a.body);
    if (!next) {
      break;
    }
    CHECK(has(*next, "queue=beta"));
    target = *next;
  }
  CHECK(pages == 4);
  CHECK(seen == seeded.beta);

  // States, labels, text, times.
  const auto ids_of_json = [&](const std::string& t) {
    const Answer a = s.send(get_json(t));
    REQUIRE(a.status == 200);
    std::set<int64_t> ids;
    const core::Json j = parse(a.body);
    for (const auto& task : j["tasks"]) {
      ids.insert(task["id"].get<int64_t>());
    }
    return ids;
  };
  CHECK(ids_of_json("/tasks?state=paused") == std::set<int64_t>{seeded.paused});
  CHECK(ids_of_json("/tasks?state=running")
        == std::set<int64_t>{seeded.leased});
  CHECK(ids_of_json("/tasks?queue=alpha&state=killed,paused")
        == std::set<int64_t>{seeded.killed, seeded.paused});
  std::set<int64_t> red;
  for (size_t i = 0; i < seeded.beta.size(); i += 3) {
    red.insert(seeded.beta[i]);
  }
  CHECK(ids_of_json("/tasks?match=color%3Dred&limit=100") == red);
  CHECK(ids_of_json("/tasks?q=beta-7%22") == std::set<int64_t>{seeded.beta[7]});
  CHECK(ids_of_json("/tasks?queue=alpha&from=2026-11-21T08:00:01Z"
                    "&to=2026-11-21T08:00:04Z")
        == std::set<int64_t>{seeded.paused, seeded.leased});
  CHECK(ids_of_json("/tasks?queue=nosuch").empty());

  const Answer text = s.send(get("/tasks?q=beta-1"));
  CHECK(text.status == 200);
  CHECK(has(text.body, "beta-1"));
  CHECK(has(text.body, "value=\"beta-1\""));

  // A bad filter: 400 with the reason, as a page and as JSON.
  const Answer bad = s.send(get("/tasks?state=bogus"));
  CHECK(bad.status == 400);
  CHECK(has(bad.body, "not a state: bogus"));
  const Answer bad_json = s.send(get_json("/tasks?match=%3D"));
  CHECK(bad_json.status == 400);
  CHECK(has(parse(bad_json.body)["error"].get<std::string>(),
            "not a label pattern"));
}

TEST_CASE("GET /tasks/ID: the page, 404, and its JSON is show -o json") {
  TempDb db;
  const Seeded seeded = seed(db.path(), true);
  Served s(db.path());
  for (const int64_t id : {seeded.runnable, seeded.paused, seeded.leased,
                           seeded.killed, seeded.hostile, seeded.beta[3]}) {
    INFO("task " << id);
    const Answer page = s.send(get("/tasks/" + std::to_string(id)));
    CHECK(page.status == 200);
    CHECK(has(page.body, "<h1>Task " + std::to_string(id)));
    const Answer json = s.send(get_json("/tasks/" + std::to_string(id)));
    REQUIRE(json.status == 200);
    const std::string shown =
        cli(db.path(), "show " + std::to_string(id) + " -o json");
    REQUIRE_FALSE(shown.empty());
    CHECK(parse(json.body) == parse(shown));
  }
  const Answer leased = s.send(get("/tasks/" + std::to_string(seeded.leased)));
  CHECK(has(leased.body, "held by w1"));
  CHECK(has(leased.body, "taskq release " + std::to_string(seeded.leased)));

  const Answer missing = s.send(get("/tasks/999999"));
  CHECK(missing.status == 404);
  const Answer missing_json = s.send(get_json("/tasks/999999"));
  CHECK(missing_json.status == 404);
  CHECK(parse(missing_json.body).contains("error"));
}

TEST_CASE("GET /tasks/ID: a checkpoint that says how far the task is "
          "draws a progress bar; one that does not, none") {
  TempDb db;
  const Seeded seeded = seed(db.path());
  Served s(db.path());
  const std::string token = [&] {
    storage::TaskStore store(db.path(), storage::OpenMode::write);
    return store.find(seeded.leased)->lease->token;
  }();
  const auto with = [&](const std::string& checkpoint) {
    storage::TaskStore store(db.path(), storage::OpenMode::write);
    store.heartbeat(seeded.leased, token, std::nullopt, checkpoint, t0 + 5min);
    return s.send(get("/tasks/" + std::to_string(seeded.leased))).body;
  };
  const std::string of = with(R"({"done": 3, "total": 12, "file": "a.csv"})");
  CHECK(has(of, "<progress max=\"100\" value=\"25\">25%</progress> 25%: "
                "3 of 12"));
  CHECK(has(of, "<h2>Checkpoint</h2>"));
  CHECK(has(of, "a.csv"));
  CHECK(has(with(R"({"progress": 0.5})"), "value=\"50\">50%</progress> 50%<"));
  for (const char* none : {R"({"progress": 2})", R"({"done": 5, "total": 0})",
                           R"({"done": 13, "total": 12})", R"([0.5])",
                           R"({"progress": "half"})"}) {
    INFO(none);
    const std::string body = with(none);
    CHECK_FALSE(has(body, "<progress"));
    CHECK(has(body, "<h2>Checkpoint</h2>"));
  }
}

TEST_CASE("GET /tasks/ID/output: a running attempt's output after a chunk, "
          "each answer kept a second for every page that follows it") {
  TempDb db;
  const Seeded seeded = seed(db.path());
  Served s(db.path());
  const int64_t id = seeded.leased; // running, attempt 1
  int64_t offset = 0;
  const auto print = [&](const std::string& text) {
    storage::TaskStore store(db.path(), storage::OpenMode::write);
    storage::OutputChunk c;
    c.task = id;
    c.attempt = 1;
    c.stream = "stdout";
    c.offset = offset;
    c.data = text;
    offset += static_cast<int64_t>(text.size());
    store.append_output({c}, 1 << 20);
  };
  {
    // A running command that has printed nothing yet: its streams are
    // followed from the start.
    storage::TaskStore store(db.path(), storage::OpenMode::write);
    storage::NewTask quiet = new_task("gamma");
    quiet.command = {"/bin/sleep", "60"};
    const int64_t quiet_id = store.add(quiet, t0, k_operator);
    REQUIRE(store.lease(lease_request("gamma", 2h), t0 + 1s).size() == 1);
    const std::string body =
        s.send(get("/tasks/" + std::to_string(quiet_id))).body;
    CHECK(has(body, "attempt 1, stdout (nothing kept yet)"));
    CHECK(has(body, "/tasks/" + std::to_string(quiet_id)
                        + "/output?attempt=1&amp;stream=stderr\" "
                          "data-after=\"0\""));
  }
  print("one\n");
  const Answer page = s.send(get("/tasks/" + std::to_string(id)));
  CHECK(has(page.body, "data-follow=\"/tasks/" + std::to_string(id)
                           + "/output?attempt=1&amp;stream=stdout\""));
  const std::string url =
      "/tasks/" + std::to_string(id) + "/output?attempt=1&stream=stdout&after=";
  const core::Json all = parse(s.send(get(url + "0")).body);
  CHECK(all["data"] == "one\n");
  CHECK(all["running"] == true);
  const int64_t first = all["after"].get<int64_t>();
  CHECK(first > 0);
  CHECK(parse(s.send(get(url + std::to_string(first))).body)["data"] == "");
  print("two\n");
  // Asked again within the second: the kept answer, not a second read.
  CHECK(parse(s.send(get(url + std::to_string(first))).body)["data"] == "");
  // A second later, the new chunk (awaited: at most 5 s).
  core::Json next;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    next = parse(s.send(get(url + std::to_string(first))).body);
    if (next["data"] != "" || std::chrono::steady_clock::now() > until) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(next["data"] == "two\n");
  CHECK(next["after"].get<int64_t>() > first);
  // Not a running attempt: running false, and no follow on its page.
  CHECK(parse(s.send(get("/tasks/" + std::to_string(seeded.killed)
                         + "/output?attempt=1&stream=stderr&after=0"))
                  .body)["running"]
        == false);
  CHECK_FALSE(has(s.send(get("/tasks/" + std::to_string(seeded.killed))).body,
                  "data-follow"));
  for (const std::string bad :
       {"attempt=0&stream=stdout&after=0", "attempt=1&stream=stdin&after=0",
        "attempt=1&after=0", "attempt=1&stream=stdout&after=-1",
        "attempt=x&stream=stdout&after=0", "stream=stdout&after=0"}) {
    INFO(bad);
    CHECK(s.send(get("/tasks/" + std::to_string(id) + "/output?" + bad)).status
          == 400);
  }
  CHECK(
      s.send(get("/tasks/999999/output?attempt=1&stream=stdout&after=0")).status
      == 404);
}

TEST_CASE("GET /tasks/bulk counts every task that matches, in the states "
          "the action acts on") {
  TempDb db;
  const Seeded seeded = seed(db.path());
  Served s(db.path(), actions_allowed());
  {
    // A red task killed: a match still, but not one pause or kill changes.
    storage::TaskStore store(db.path(), storage::OpenMode::write);
    store.send(by_ids({seeded.beta[24]}), core::Message::kill, std::nullopt,
               k_operator, t0 + 1min);
    store.send(by_ids({seeded.beta[21]}), core::Message::pause, std::nullopt,
               k_operator, t0 + 1min);
  }
  CHECK(
      parse(
          s.send(get_json("/tasks?queue=beta&match=color%3Dred")).body)["tasks"]
          .size()
      == 9);
  CHECK(parse(s.send(get_json("/tasks/bulk?queue=beta&match=color%3Dred&"
                              "bulk=resume"))
                  .body)["match"]
        == 1);
  CHECK(parse(s.send(get_json("/tasks/bulk?queue=beta&match=color%3Dred&"
                              "state=killed&bulk=retry"))
                  .body)["match"]
        == 1);
  CHECK(parse(s.send(get_json("/tasks/bulk?queue=beta&state=completed&"
                              "bulk=pause"))
                  .body)["match"]
        == 0);
  const Answer narrowed =
      s.send(get("/tasks/bulk?queue=beta&match=color%3Dred&bulk=pause"));
  CHECK(has(narrowed.body, "7 tasks match")); // not the paused, the killed
  CHECK(has(narrowed.body, "state=runnable%2Csleeping"));
  // The form carries the filters; the count is checked against them again.
  const Answer stale = s.send(post(
      "/tasks/bulk", "action=pause&queue=beta&match=color%3Dred&expect=9"));
  CHECK(stale.status == 409);
  const Answer paused = s.send(post(
      "/tasks/bulk", "action=pause&queue=beta&match=color%3Dred&expect=7"));
  CHECK(paused.status == 200);
  CHECK(has(paused.body, "pause: 7 tasks changed"));
  CHECK(s.send(post("/tasks/bulk",
                    "action=pause&queue=beta&state=completed&expect=1"))
            .status
        == 409);
}

TEST_CASE("GET /tasks/bulk counts every task that matches") {
  TempDb db;
  seed(db.path());
  Served s(db.path(), actions_allowed());
  const Answer json =
      s.send(get_json("/tasks/bulk?queue=beta&match=color%3Dred&bulk=pause"));
  REQUIRE(json.status == 200);
  CHECK(parse(json.body)["match"] == 9);
  const Answer page =
      s.send(get("/tasks/bulk?queue=beta&match=color%3Dred&bulk=kill"));
  CHECK(page.status == 200);
  CHECK(has(page.body, "9 tasks match"));
  CHECK(has(page.body, "name=\"expect\" value=\"9\""));
  CHECK(has(page.body, "name=\"confirm\"")); // kill: type the count
  CHECK(s.send(get("/tasks/bulk?queue=beta&bulk=pause")).status == 200);
  CHECK(s.send(get("/tasks/bulk?queue=beta")).status == 400);
  CHECK(s.send(get("/tasks/bulk?bulk=pause")).status == 400);
}

TEST_CASE("POST /tasks/ID/ACTION: each action changes the task; a stale "
          "revision is refused and changes nothing") {
  TempDb db;
  const Seeded seeded = seed(db.path());
  Served s(db.path(), actions_allowed());
  const auto task = [&](int64_t id) { return *find_task(db.path(), id); };
  const auto act = [&](int64_t id, const std::string& action,
                       const std::string& extra = "") {
    const Answer a = s.send(post("/tasks/" + std::to_string(id) + "/" + action,
                                 form_rev(task(id)) + extra));
    INFO(action << " " << id << ": " << a.body);
    CHECK(a.status == 303);
    return a;
  };

  // A stale revision first: nothing changes.
  {
    const std::string before = snapshot(db.path());
    const core::Task t = task(seeded.runnable);
    for (const char* action : {"pause", "kill", "sleep", "release", "retry",
                               "freeze", "continue", "resume"}) {
      for (const int64_t id :
           {seeded.runnable, seeded.leased, seeded.killed, seeded.paused}) {
        const Answer a =
            s.send(post("/tasks/" + std::to_string(id) + "/" + action,
                        "rev=" + std::to_string(task(id).rev + 7)));
        INFO(action << " " << id << ": " << a.body);
        CHECK(a.status >= 400);
        CHECK(a.status < 500);
        if (a.status == 409) {
          CHECK(has(a.body, "changed since you looked"));
        }
      }
    }
    const Answer stale =
        s.send(post("/tasks/" + std::to_string(seeded.runnable) + "/pause",
                    "rev=" + std::to_string(t.rev + 1)));
    CHECK(stale.status == 409);
    CHECK(snapshot(db.path()) == before);
  }

  const Answer paused = act(seeded.runnable, "pause");
  CHECK(paused.header("Location")
        == "/tasks/" + std::to_string(seeded.runnable));
  CHECK(task(seeded.runnable).state == core::TaskState::paused);
  act(seeded.runnable, "resume");
  CHECK(task(seeded.runnable).state == core::TaskState::runnable);
  act(seeded.runnable, "sleep", "&for=5m");
  CHECK(task(seeded.runnable).state == core::TaskState::sleeping);
  CHECK(task(seeded.runnable).run_at == k_now + 5min);
  act(seeded.paused, "resume");
  CHECK(task(seeded.paused).state == core::TaskState::runnable);
  act(seeded.paused, "kill");
  CHECK(task(seeded.paused).state == core::TaskState::killed);

  act(seeded.leased, "freeze");
  CHECK(task(seeded.leased).frozen);
  act(seeded.leased, "continue");
  CHECK_FALSE(task(seeded.leased).frozen);
  act(seeded.leased, "release");
  CHECK_FALSE(task(seeded.leased).leased(k_now));
  CHECK(task(seeded.leased).state == core::TaskState::runnable);

  const Answer retried = act(seeded.killed, "retry");
  const std::string location = retried.header("Location");
  REQUIRE(location.rfind("/tasks/", 0) == 0);
  const int64_t new_id = std::atoll(location.c_str() + 7);
  CHECK(new_id != seeded.killed);
  CHECK(task(new_id).retry_of == seeded.killed);
  CHECK(task(new_id).state == core::TaskState::runnable);

  // JSON: the task as it is after the action.
  Req r = post("/tasks/" + std::to_string(seeded.beta[0]) + "/pause",
               form_rev(task(seeded.beta[0])));
  r.json = true;
  const Answer json = s.send(r);
  CHECK(json.status == 200);
  CHECK(parse(json.body)["state"] == "paused");
  // The event log names the web's actor.
  const Answer shown =
      s.send(get_json("/tasks/" + std::to_string(seeded.beta[0])));
  CHECK(has(shown.body, "web:anonymous@127.0.0.1"));
  // An action the task's state does not allow: 4xx, nothing changed.
  const std::string before = snapshot(db.path());
  const Answer refused =
      s.send(post("/tasks/" + std::to_string(seeded.beta[1]) + "/retry",
                  form_rev(task(seeded.beta[1]))));
  CHECK(refused.status >= 400);
  CHECK(refused.status < 500);
  CHECK(snapshot(db.path()) == before);
}

TEST_CASE("POST /tasks/bulk: ticked ids, every match with expect and confirm, "
          "a wrong count refused") {
  TempDb db;
  const Seeded seeded = seed(db.path());
  Served s(db.path(), actions_allowed());
  const auto state = [&](int64_t id) {
    return find_task(db.path(), id)->state;
  };
  // Ticked.
  Req ticked =
      post("/tasks/bulk", "action=pause&id=" + std::to_string(seeded.beta[1])
                              + "&id=" + std::to_string(seeded.beta[2]));
  ticked.json = true;
  const Answer a = s.send(ticked);
  REQUIRE(a.status == 200);
  CHECK(parse(a.body)["changed"] == 2);
  CHECK(state(seeded.beta[1]) == core::TaskState::paused);
  CHECK(state(seeded.beta[2]) == core::TaskState::paused);
  CHECK(state(seeded.beta[4]) == core::TaskState::runnable);

  // Every match: a wrong count, a missing or wrong confirmation: refused.
  const std::string before = snapshot(db.path());
  const std::string filter = "queue=beta&match=color%3Dred";
  for (const std::string& body : std::vector<std::string>{
           "action=kill&" + filter + "&expect=8&confirm=8",
           "action=kill&" + filter + "&expect=9",
           "action=kill&" + filter + "&expect=9&confirm=8",
           "action=pause&" + filter + "&expect=10", "action=pause&" + filter,
           "action=pause&expect=9", "action=explode&" + filter + "&expect=9"}) {
    const Answer r = s.send(post("/tasks/bulk", body));
    INFO(body << ": " << r.body);
    CHECK(r.status >= 400);
    CHECK(r.status < 500);
  }
  CHECK(snapshot(db.path()) == before);

  const Answer killed = s.send(
      post("/tasks/bulk", "action=kill&" + filter + "&expect=9&confirm=9"));
  CHECK(killed.status == 200);
  CHECK(has(killed.body, "kill: 9 tasks changed"));
  for (size_t i = 0; i < seeded.beta.size(); ++i) {
    INFO(i);
    CHECK((state(seeded.beta[i]) == core::TaskState::killed) == (i % 3 == 0));
  }
  // retry every killed task of beta.
  Req retry =
      post("/tasks/bulk", "action=retry&queue=beta&state=killed&expect=9");
  retry.json = true;
  const Answer retried = s.send(retry);
  CHECK(retried.status == 200);
  CHECK(parse(retried.body)["changed"] == 9);
}

TEST_CASE("GET /queues and POST /queues/NAME/pause|resume") {
  TempDb db;
  seed(db.path());
  Served s(db.path(), actions_allowed());
  const Answer page = s.send(get("/queues"));
  CHECK(page.status == 200);
  CHECK(has(page.body, "taskq queue pause alpha"));
  CHECK(has(page.body, "action=\"/queues/alpha/pause\""));
  const Answer paused = s.send(post("/queues/alpha/pause"));
  CHECK(paused.status == 303);
  CHECK(paused.header("Location") == "/queues");
  {
    storage::TaskStore store(db.path(), storage::OpenMode::read);
    CHECK(store.queue("alpha", k_now).paused);
  }
  const core::Json list = parse(s.send(get_json("/queues")).body);
  REQUIRE(list.size() == 2);
  CHECK(list[0]["queue"] == "alpha");
  CHECK(list[0]["paused"] == true);
  CHECK(list[1]["paused"] == false);
  Req resume = post("/queues/alpha/resume");
  resume.json = true;
  const Answer resumed = s.send(resume);
  CHECK(resumed.status == 200);
  CHECK(parse(resumed.body)["paused"] == false);
  storage::TaskStore store(db.path(), storage::OpenMode::read);
  CHECK_FALSE(store.queue("alpha", k_now).paused);
  CHECK(s.send(post("/queues/nosuch/pause")).status == 404);
}

TEST_CASE("POST /queues/NAME/set: a queue's limits as queue set sets them; "
          "a bad one changes nothing") {
  TempDb db;
  seed(db.path());
  Served s(db.path(), actions_allowed());
  CHECK(has(s.send(get("/queues")).body, "action=\"/queues/beta/set\""));
  const Answer set =
      s.send(post("/queues/beta/set", "max_running=3&max_attempts=5"));
  CHECK(set.status == 303);
  CHECK(set.header("Location") == "/queues");
  const auto limits = [&] {
    storage::TaskStore store(db.path(), storage::OpenMode::read);
    const auto q = store.queue("beta", k_now);
    return std::pair(q.max_running, q.max_attempts);
  };
  CHECK(limits()
        == std::pair(std::optional<int64_t>(3), std::optional<int64_t>(5)));
  // An empty field leaves its limit as it is.
  Req only = post("/queues/beta/set", "max_running=0&max_attempts=");
  only.json = true;
  const Answer zero = s.send(only);
  CHECK(zero.status == 200);
  CHECK(parse(zero.body)["max_running"] == 0);
  CHECK(parse(zero.body)["max_attempts"] == 5);
  CHECK(limits()
        == std::pair(std::optional<int64_t>(0), std::optional<int64_t>(5)));
  CHECK(has(s.send(get("/queues")).body, "value=\"5\""));
  const std::string before = snapshot(db.path());
  for (const char* bad :
       {"max_running=-1", "max_running=x", "max_attempts=0", "max_attempts=1.5",
        "max_running=1&max_attempts=-3", "max_running=99999999999999999999"}) {
    INFO(bad);
    const Answer a = s.send(post("/queues/beta/set", bad));
    CHECK(a.status == 400);
    CHECK(has(a.body, "must be a whole number"));
  }
  CHECK(s.send(post("/queues/nosuch/set", "max_running=1")).status == 404);
  CHECK(snapshot(db.path()) == before);
  Served ro(db.path());
  CHECK(ro.send(get("/queues")).status == 200);
  CHECK_FALSE(has(ro.send(get("/queues")).body, "/set\""));
  CHECK(ro.send(post("/queues/beta/set", "max_running=1")).status == 403);
  CHECK(snapshot(db.path()) == before);
}

// The CLI's -o json of a list: one object a line, as an array.
core::Json cli_lines(const std::string& db, const std::string& args) {
  core::Json lines = core::Json::array();
  std::istringstream in(cli(db, args + " -o json"));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) {
      lines.push_back(core::Json::parse(line));
    }
  }
  return lines;
}

TEST_CASE("GET /schedules, /gates, /flows and /flows/ID: the pages, and "
          "their JSON is the CLI's") {
  TempDb db;
  seed(db.path());
  cli(db.path(), "schedule add nightly reports --every day");
  cli(db.path(), "gate add deploy gq --keys b,a --payload '{\"go\": true}'");
  const std::string doc = (db.dir() / "flow.json").string();
  {
    std::ofstream f(doc);
    f << R"({"name": "lin", "pattern": "linear", "store": {"v": "1.0"},
      "atoms": [{"name": "a", "execute": {"queue": "fq"},
                 "revert": {"queue": "fq"}, "requires": ["v"],
                 "provides": "pa"},
                {"name": "b", "execute": {"queue": "fq"},
                 "requires": ["pa"]}]})";
  }
  const std::string flow = cli(db.path(), "flow submit " + doc);
  REQUIRE_FALSE(flow.empty());
  const int64_t flow_id = std::stoll(flow);
  Served s(db.path(), actions_allowed());
  const Answer schedules = s.send(get("/schedules"));
  CHECK(schedules.status == 200);
  CHECK(has(schedules.body, "nightly"));
  CHECK(has(schedules.body, "taskq schedule pause nightly"));
  CHECK(parse(s.send(get_json("/schedules")).body)
        == cli_lines(db.path(), "schedule list"));
  const Answer gates = s.send(get("/gates"));
  CHECK(gates.status == 200);
  CHECK(has(gates.body, "deploy"));
  CHECK(parse(s.send(get_json("/gates")).body)
        == cli_lines(db.path(), "gate list"));
  const Answer flows = s.send(get("/flows"));
  CHECK(flows.status == 200);
  CHECK(has(flows.body, "lin"));
  CHECK(parse(s.send(get_json("/flows")).body)
        == cli_lines(db.path(), "flow list"));
  const Answer one = s.send(get("/flows/" + std::to_string(flow_id)));
  CHECK(one.status == 200);
  CHECK(has(one.body, "<svg"));
  CHECK(parse(s.send(get_json("/flows/" + std::to_string(flow_id))).body)
        == parse(cli(db.path(),
                     "flow show " + std::to_string(flow_id) + " -o json")));
  CHECK(s.send(get("/flows/999999")).status == 404);
}

TEST_CASE("StorePool::try_take never waits: none when every store is out") {
  TempDb db;
  seed(db.path());
  int opened = 0;
  web::StorePool pool(
      [&] {
        ++opened;
        return std::make_unique<storage::TaskStore>(db.path(),
                                                    storage::OpenMode::read);
      },
      2);
  {
    web::StorePool::Lease a = pool.take();
    auto b = pool.try_take();
    REQUIRE(b);
    CHECK_FALSE(pool.try_take()); // two out of two: none, at once
    b.reset();
    auto c = pool.try_take(); // b's, given back
    CHECK(c);
  }
  CHECK(opened == 2);
  CHECK(pool.try_take());
  CHECK(opened == 2);
}

TEST_CASE("the assets: CSS and JavaScript") {
  TempDb db;
  seed(db.path());
  Served s(db.path());
  const Answer css = s.send(get("/assets/taskq.css"));
  CHECK(css.status == 200);
  CHECK(has(css.header("Content-Type"), "text/css"));
  CHECK(css.body.size() > 100);
  const Answer js = s.send(get("/assets/taskq.js"));
  CHECK(js.status == 200);
  CHECK(has(js.header("Content-Type"), "javascript"));
  CHECK(js.body.size() > 100);
  CHECK(s.send(get("/assets/nosuch.js")).status == 404);
}

TEST_CASE("GET /live: the first bytes, a change announced with an id, "
          "Last-Event-ID") {
  TempDb db;
  seed(db.path());
  Served s(db.path());
  const auto last_id = [](const std::string& text) -> int64_t {
    const size_t at = text.rfind("id: ");
    return at == std::string::npos ? -1 : std::atoll(text.c_str() + at + 4);
  };
  Socket live(s.port());
  REQUIRE(live.send_all(get("/live").bytes(s.port())));
  std::string got;
  live.read_until(got, 5s,
                  [](const std::string& t) { return has(t, "retry: 3000"); });
  REQUIRE(has(got, "HTTP/1.1 200"));
  CHECK(has(got, "text/event-stream"));
  CHECK(has(got, "retry: 3000"));
  // The first look (within a second) is announced.
  live.read_until(got, 5s,
                  [](const std::string& t) { return has(t, "event: change"); });
  const int64_t first = last_id(got);
  REQUIRE(first >= 0);
  // A change: announced with a new id.
  {
    storage::TaskStore store(db.path(), storage::OpenMode::update);
    add_task(store, "alpha", k_now);
  }
  got.clear();
  live.read_until(got, 5s,
                  [](const std::string& t) { return has(t, "event: change"); });
  const int64_t second = last_id(got);
  CHECK(second > first);

  // Resumed at the latest id: nothing to announce.
  Socket resumed(s.port());
  resumed.send_all(get("/live")
                       .header("Last-Event-ID", std::to_string(second))
                       .bytes(s.port()));
  std::string r;
  // Its first bytes awaited (a loaded machine may take a while), then
  // 1.5 s more in which no change may come.
  resumed.read_until(
      r, 5s, [](const std::string& t) { return has(t, "retry: 3000"); });
  CHECK(has(r, "retry: 3000"));
  resumed.read_until(r, 1500ms, [](const std::string&) { return false; });
  CHECK_FALSE(has(r, "event: change"));
  // Resumed at an older id: told at once.
  Socket behind(s.port());
  behind.send_all(get("/live")
                      .header("Last-Event-ID", std::to_string(first))
                      .bytes(s.port()));
  std::string b;
  behind.read_until(
      b, 3s, [](const std::string& t) { return has(t, "event: change"); });
  CHECK(last_id(b) == second);
}

TEST_CASE("read-only: every POST is 403, nothing changes, no action button") {
  TempDb db;
  const Seeded seeded = seed(db.path());
  Served s(db.path());
  const std::string before = snapshot(db.path());
  const std::string rev = form_rev(*find_task(db.path(), seeded.runnable));
  for (const char* action : {"pause", "resume", "kill", "sleep", "release",
                             "retry", "freeze", "continue"}) {
    const Answer a = s.send(
        post("/tasks/" + std::to_string(seeded.runnable) + "/" + action, rev));
    CHECK(a.status == 403);
    CHECK(has(a.body, "read-only"));
  }
  CHECK(s.send(post("/tasks/bulk",
                    "action=pause&id=" + std::to_string(seeded.runnable)))
            .status
        == 403);
  CHECK(
      s.send(post("/tasks/bulk", "action=kill&queue=beta&expect=25&confirm=25"))
          .status
      == 403);
  CHECK(s.send(post("/queues/alpha/pause")).status == 403);
  CHECK(snapshot(db.path()) == before);
  for (const std::string& page : std::vector<std::string>{
           "/", "/tasks", "/tasks/" + std::to_string(seeded.runnable),
           "/tasks/" + std::to_string(seeded.leased), "/queues"}) {
    const Answer a = s.send(get(page));
    INFO(page);
    CHECK(a.status == 200);
    CHECK_FALSE(has(a.body, "<button type=\"submit\" class=\"act-"));
    CHECK_FALSE(has(a.body, "type=\"checkbox\" name=\"id\""));
  }
  // The CLI twins are still shown.
  CHECK(has(s.send(get("/tasks/" + std::to_string(seeded.runnable))).body,
            "taskq pause " + std::to_string(seeded.runnable)));
}

TEST_CASE("a token: 401 without, Bearer, the sign-in cookie, a wrong one") {
  TempDb db;
  const Seeded seeded = seed(db.path());
  ServerSetup setup = actions_allowed();
  const std::string token = "0123456789abcdef-token";
  setup.app.token = token;
  Served s(db.path(), setup);
  const std::string before = snapshot(db.path());

  const Answer none = s.send(get("/tasks"));
  CHECK(none.status == 401);
  CHECK(has(none.body, "name=\"token\"")); // the sign-in page
  CHECK_FALSE(has(none.body, "beta"));
  CHECK(s.send(get_json("/tasks")).status == 401);
  CHECK(s.send(post("/tasks/" + std::to_string(seeded.runnable) + "/pause",
                    "rev=1"))
            .status
        == 401);
  CHECK(s.send(get("/live")).status == 401);
  // The assets need none (the sign-in page uses them).
  CHECK(s.send(get("/assets/taskq.css")).status == 200);

  CHECK(s.send(get("/tasks").header("Authorization", "Bearer " + token)).status
        == 200);
  for (const std::string& wrong : std::vector<std::string>{
           "Bearer " + token + "x", "Bearer x" + token.substr(1), "Bearer ",
           "Basic " + token, token}) {
    INFO(wrong);
    CHECK(s.send(get_json("/tasks").header("Authorization", wrong)).status
          == 401);
  }
  CHECK(s.send(get_json("/tasks").header("Cookie", "taskq_token=nope")).status
        == 401);
  CHECK(s.send(post("/login", "token=wrong-token-wrong-token")).status == 401);
  CHECK(snapshot(db.path()) == before);

  const Answer login = s.send(post("/login", "token=" + token));
  CHECK(login.status == 303);
  const std::string cookie = login.header("Set-Cookie");
  CHECK(has(cookie, "HttpOnly"));
  CHECK(has(cookie, "SameSite=Strict"));
  const std::string pair = cookie.substr(0, cookie.find(';'));
  CHECK(pair == "taskq_token=" + token);
  const Answer in = s.send(get("/tasks").header("Cookie", "a=b; " + pair));
  CHECK(in.status == 200);
  CHECK(has(in.body, "beta"));
  // A POST with the cookie, from our own page.
  const Answer act =
      s.send(post("/tasks/" + std::to_string(seeded.runnable) + "/pause",
                  form_rev(*find_task(db.path(), seeded.runnable)))
                 .header("Cookie", pair)
                 .header("Sec-Fetch-Site", "same-origin"));
  CHECK(act.status == 303);
  CHECK(find_task(db.path(), seeded.runnable)->state
        == core::TaskState::paused);
}

TEST_CASE("cross-site POSTs are refused and change nothing") {
  TempDb db;
  const Seeded seeded = seed(db.path());
  Served s(db.path(), actions_allowed());
  const std::string before = snapshot(db.path());
  const std::string target =
      "/tasks/" + std::to_string(seeded.runnable) + "/pause";
  const std::string rev = form_rev(*find_task(db.path(), seeded.runnable));
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{
           {"Sec-Fetch-Site", "cross-site"},
           {"Sec-Fetch-Site", "same-site"},
           {"Sec-Fetch-Site", "none"},
           {"Origin", "http://evil.example"},
           {"Origin", "http://127.0.0.1:1"},
           {"Origin", "null"},
           {"Origin", "https://127.0.0.1.evil.example"}}) {
    // clang 14 cannot INFO a structured binding (a lambda captures it).
    const std::string header = name + ": " + value;
    INFO(header);
    CHECK(s.send(post(target, rev).header(name, value)).status == 403);
    CHECK(s.send(post("/tasks/bulk", "action=kill&queue=beta&expect=25&"
                                     "confirm=25")
                     .header(name, value))
              .status
          == 403);
    CHECK(s.send(post("/queues/alpha/pause").header(name, value)).status
          == 403);
  }
  CHECK(snapshot(db.path()) == before);
  // From our own origin: done.
  const std::string own = "http://127.0.0.1:" + std::to_string(s.port());
  CHECK(s.send(post(target, rev).header("Origin", own)).status == 303);
  CHECK(find_task(db.path(), seeded.runnable)->state
        == core::TaskState::paused);
}

TEST_CASE("a prefix: /taskq/... works and every link carries it") {
  TempDb db;
  const Seeded seeded = seed(db.path());
  ServerSetup setup = actions_allowed();
  setup.app.prefix = "/taskq";
  Served s(db.path(), setup);
  for (const std::string& page : std::vector<std::string>{
           "/taskq", "/taskq/", "/taskq/tasks",
           "/taskq/tasks?queue=beta&limit=5",
           "/taskq/tasks/" + std::to_string(seeded.leased), "/taskq/queues",
           "/taskq/tasks/bulk?queue=beta&bulk=pause"}) {
    INFO(page);
    const Answer a = s.send(get(page));
    CHECK(a.status == 200);
    const auto hrefs = links(a.body);
    CHECK(hrefs.size() > 3);
    for (const auto& h : hrefs) {
      INFO(h);
      CHECK(h.rfind("/taskq/", 0) == 0);
    }
    size_t at = 0;
    while ((at = a.body.find("action=\"", at)) != std::string::npos) {
      at += 8;
      CHECK(a.body.compare(at, 7, "/taskq/") == 0);
    }
    CHECK(has(a.body, "src=\"/taskq/assets/taskq.js\""));
    CHECK(has(a.body, "data-live=\"/taskq/live\""));
  }
  CHECK(s.send(get("/taskq/assets/taskq.css")).status == 200);
  // Behind a proxy that strips the prefix.
  CHECK(s.send(get("/tasks")).status == 200);
  const Answer a =
      s.send(post("/taskq/tasks/" + std::to_string(seeded.runnable) + "/pause",
                  form_rev(*find_task(db.path(), seeded.runnable))));
  CHECK(a.status == 303);
  CHECK(a.header("Location")
        == "/taskq/tasks/" + std::to_string(seeded.runnable));
  CHECK(s.send(post("/taskq/queues/alpha/pause")).header("Location")
        == "/taskq/queues");
  CHECK(s.send(get("/taskqx/tasks")).status == 404);
}

TEST_CASE("security headers on every answer the view gives") {
  TempDb db;
  const Seeded seeded = seed(db.path());
  Served s(db.path(), actions_allowed());
  const std::string id = std::to_string(seeded.runnable);
  std::vector<Req> reqs = {
      get("/"),
      get_json("/"),
      get("/tasks"),
      get("/tasks?state=bogus"),
      get("/tasks/" + id),
      get_json("/tasks/" + id),
      get("/tasks/999999"),
      get("/tasks/abc"),
      get("/tasks/bulk?queue=beta&bulk=pause"),
      get("/queues"),
      get("/assets/taskq.css"),
      get("/assets/taskq.js"),
      get("/assets/nope"),
      get("/nope"),
      get("/a/../b"),
      post("/tasks/" + id + "/pause", "rev=99999"),
      post("/tasks/" + id + "/pause",
           form_rev(*find_task(db.path(), seeded.runnable))),
      post("/tasks/" + id + "/pause", std::string(70000, 'x')),
      post("/tasks/" + id + "/pause", "rev=1")
          .header("Sec-Fetch-Site", "cross-site"),
      post("/"),
  };
  Req put = get("/tasks");
  put.method = "PUT";
  reqs.push_back(put);
  for (const Req& r : reqs) {
    const Answer a = s.send(r);
    REQUIRE(a.status != 0);
    check_hardened(a,
                   r.method + " " + r.target + " " + std::to_string(a.status));
  }
  ServerSetup token = {};
  token.app.token = "0123456789abcdef0123";
  Served t(db.path(), token);
  check_hardened(t.send(get("/")), "the sign-in page");
  check_hardened(t.send(get_json("/")), "401");
  // The live stream's headers.
  Socket live(s.port());
  live.send_all(get("/live").bytes(s.port()));
  std::string got;
  live.read_until(got, 5s,
                  [](const std::string& x) { return has(x, "retry: 3000"); });
  check_hardened(parse_answer(got), "/live");
}

TEST_CASE("HTML escaping: <script> and quotes in a task's command, payload, "
          "labels and queue are shown as text everywhere") {
  TempDb db;
  const Seeded seeded = seed(db.path(), true);
  {
    storage::TaskStore store(db.path(), storage::OpenMode::update);
    const auto leased =
        store.lease(lease_request(k_evil_queue, 2h, k_evil), t0 + 60s);
    REQUIRE(leased.size() == 1);
    storage::FailRequest fail = fail_request(k_evil);
    store.fail(seeded.hostile, leased.front().lease->token, fail, t0 + 61s);
  }
  Served s(db.path(), actions_allowed());
  const std::string id = std::to_string(seeded.hostile);
  const std::string q = web::url_encode(k_evil_queue);
  for (const std::string& page : std::vector<std::string>{
           "/", "/tasks", "/tasks?queue=" + q, "/tasks/" + id, "/queues",
           "/tasks?q=" + web::url_encode(k_evil),
           "/tasks/bulk?bulk=pause&queue=" + q, "/tasks?state=" + q,
           "/tasks?match=" + web::url_encode("evil=" + k_evil)}) {
    INFO(page);
    const Answer a = s.send(get(page));
    CHECK(a.status < 500);
    // The only <script is ours, with src=.
    size_t scripts = 0, ours = 0, at = 0;
    while ((at = a.body.find("<script", at)) != std::string::npos) {
      ++scripts;
      ours += a.body.compare(at, 12, "<script src=") == 0 ? 1 : 0;
      ++at;
    }
    CHECK(scripts == ours);
    CHECK_FALSE(has(a.body, "q<script>"));
    CHECK_FALSE(has(a.body, "\"'"));
  }
  const Answer task = s.send(get("/tasks/" + id));
  CHECK(has(task.body, "&lt;script&gt;alert(&quot;x&#39;1&quot;)"));
  CHECK(has(task.body, "q&lt;script&gt;&quot;&#39;"));
  const Answer list = s.send(get("/tasks?queue=" + q));
  CHECK(has(list.body, "sh: echo &lt;script&gt;"));
  // JSON answers are JSON, not HTML, and keep the text.
  const Answer json = s.send(get_json("/tasks/" + id));
  CHECK(json.header("Content-Type") == "application/json");
  CHECK(parse(json.body)["queue"] == k_evil_queue);
}

TEST_CASE("no database password in any page, header or error") {
  const std::string secret = "Sup3rS3cretPw";
  TempDb db;
  const Seeded seeded = seed(db.path());
  std::vector<std::string> urls = {
      // A server that is not there: every page is an error.
      "postgresql://taskq:" + secret + "@127.0.0.1:1/nodb",
      "postgresql://127.0.0.1:1/nodb?password=" + secret,
      "postgres://u:" + secret + "@localhost:1/x?sslmode=disable",
  };
  if (on_postgresql()) {
    // The test's own database, with a password it does not need (trust).
    const std::string name =
        db.path().substr(std::string("postgresql:///").size());
    urls.push_back("postgresql://postgres:" + secret + "@/" + name);
    urls.push_back("postgresql:///" + name + "?password=" + secret);
  }
  const std::string sid = std::to_string(seeded.runnable);
  for (const auto& url : urls) {
    ServerSetup setup = actions_allowed();
    setup.open_path = url;
    Served s(db.path(), setup);
    for (const Req& r :
         {get("/"), get_json("/"), get("/tasks"), get_json("/tasks?queue=x"),
          get("/tasks/" + sid), get_json("/tasks/" + sid), get("/tasks/99999"),
          get("/queues"), get("/tasks/bulk?queue=beta&bulk=pause"),
          post("/tasks/" + sid + "/pause", "rev=1"),
          post("/queues/alpha/pause"), get("/live"), get("/nope")}) {
      const Answer a = s.send(r, 3s);
      INFO(url << " " << r.target << ": " << a.status);
      CHECK(a.status != 0);
      CHECK_FALSE(has(a.raw, secret));
    }
  }
}
