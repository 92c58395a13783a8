#include "core/suggestion.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using taskq::core::add_args;
using taskq::core::set_suggestion_sink;
using taskq::core::suggest;

namespace {

std::vector<std::string> g_heard;

void hear(const std::string& text, const std::vector<std::string>& args) {
  g_heard.push_back(text);
  g_heard.insert(g_heard.end(), args.begin(), args.end());
}

} // namespace

TEST_CASE("a suggestion's plain words are written as they are") {
  CHECK(suggest({"retry", "12"}) == "taskq retry 12");
  CHECK(suggest({"run", "jobs", "--", "./make-thumb.sh", "a.png"})
        == "taskq run jobs -- ./make-thumb.sh a.png");
}

TEST_CASE("a word the shell would split or interpret is single-quoted") {
  CHECK(suggest({"add", "jobs", "--sh", "cd /srv/app && rm -rf build"})
        == "taskq add jobs --sh 'cd /srv/app && rm -rf build'");
  CHECK(suggest({"x", "it's"}) == "taskq x 'it'\\''s'");
  for (const std::string word :
       {"a b",  "a;b", "a|b", "a&b", "a<b",   "a>b", "$HOME",
        "`id`", "*",   "a?",  "(a)", "a\nb",  "~",   "#c",
        "\"",   "\\",  "!",   "[a]", "{a,b}", "",    "a\tb"}) {
    CAPTURE(word);
    const std::string text = suggest({word});
    CHECK(text.rfind("taskq '", 0) == 0);
    CHECK(text.back() == '\'');
  }
}

TEST_CASE("a shell line given as one word becomes --sh, words stay words") {
  CHECK(add_args("jobs", {"cd /srv/app && rm -rf build"})
        == std::vector<std::string>{"add", "jobs", "--sh",
                                    "cd /srv/app && rm -rf build"});
  CHECK(add_args("jobs", {"echo", "a b"})
        == std::vector<std::string>{"add", "jobs", "--", "echo", "a b"});
  CHECK(add_args("jobs", {"./run.sh"})
        == std::vector<std::string>{"add", "jobs", "--", "./run.sh"});
}

TEST_CASE("a word with a control character is not one line") {
  CHECK(taskq::core::one_line({"a b", "c;d", "é"}));
  CHECK_FALSE(taskq::core::one_line({"a", "b\nc"}));
  CHECK_FALSE(taskq::core::one_line({"\x1b[31m"}));
  CHECK_FALSE(taskq::core::one_line({"\x7f"}));
}

TEST_CASE("the sink hears each suggestion's text and argv") {
  g_heard.clear();
  set_suggestion_sink(&hear);
  suggest({"retry", "7"});
  set_suggestion_sink(nullptr);
  suggest({"retry", "8"});
  CHECK(g_heard == std::vector<std::string>{"taskq retry 7", "retry", "7"});
}

TEST_CASE("a suggestion carries the prefix, in its text and its argv") {
  g_heard.clear();
  set_suggestion_sink(&hear);
  taskq::core::set_suggestion_prefix({"--db", "/srv/my jobs.db"});
  CHECK(suggest({"retry", "7"}) == "taskq --db '/srv/my jobs.db' retry 7");
  taskq::core::set_suggestion_prefix({});
  set_suggestion_sink(nullptr);
  CHECK(g_heard
        == std::vector<std::string>{"taskq --db '/srv/my jobs.db' retry 7",
                                    "--db", "/srv/my jobs.db", "retry", "7"});
}

TEST_CASE("rebuilt: the words as typed, the leftovers moved to the end") {
  using V = std::vector<std::string>;
  using taskq::core::rebuilt;
  // Options before and after the leftovers stay, in order.
  CHECK(rebuilt({"add", "jobs", "--priority", "5", "echo", "hi"},
                {"echo", "hi"}, {"--", "echo", "hi"})
        == V{"add", "jobs", "--priority", "5", "--", "echo", "hi"});
  CHECK(rebuilt({"run", "jobs", "echo", "hi", "--until-empty"}, {"echo", "hi"},
                {"--", "echo", "hi"})
        == V{"run", "jobs", "--until-empty", "--", "echo", "hi"});
  // The leftover is matched from the end: an option's value of the same
  // spelling earlier stays.
  CHECK(rebuilt({"add", "jobs", "--label", "echo", "echo"}, {"echo"},
                {"--", "echo"})
        == V{"add", "jobs", "--label", "echo", "--", "echo"});
  // A -- already given, or leftovers not in the words: nothing to suggest.
  CHECK_FALSE(
      rebuilt({"add", "jobs", "a;", "--", "b"}, {"a;"}, {"--sh", "a;"}));
  CHECK_FALSE(rebuilt({"add", "jobs"}, {"x"}, {"--", "x"}));
}
