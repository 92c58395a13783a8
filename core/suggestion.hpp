// A command line taskq prints for the user to paste: in a refusal ("did you
// mean: taskq run jobs -- echo hi?"), a note or a `why` line ("taskq retry
// 12 runs it now"). Each is held as the argv it means and rendered by one
// function, so what a POSIX shell reads back is exactly that argv.
//
// What counts as a suggestion: a whole command line starting with `taskq`
// that names real values (a queue, an id, the user's own words). Not one:
// a usage form with placeholders (`taskq add QUEUE -- CMD [ARG...]`), which
// cannot be pasted as it is, and an English list of alternatives ("did you
// mean 'kill' or 'purge'"), which names words, not a command line.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace taskq::core {

// Contract: the text is "taskq" and each of `args` as core::command_line
// writes it (a word of letters, digits and %+,-./:=@_ as it is, any other
// word single-quoted, ' as '\''), so `sh -c TEXT` runs `taskq` with argv
// exactly `args`, whatever bytes they hold (but NUL, which no argv holds):
// spaces, quotes, ;|&<>$`*?(), newlines. A word that begins with `-` is
// left as the shell gives it: a suggestion puts such a word where taskq
// reads it as a word (after `--`), not in front of an option.
// The sink set by set_suggestion_sink, if any, hears each one rendered.
std::string suggest(const std::vector<std::string>& args);

// What the hearer of every suggestion gets: the text and the argv meant
// (args, without "taskq"). Set once, before any command runs (the taskq
// executable sets one when TASKQ_TEST_SUGGESTIONS names a file); nullptr,
// the default, hears nothing. core itself does no I/O: the sink does.
using SuggestionSink = void (*)(const std::string& text,
                                const std::vector<std::string>& args);
void set_suggestion_sink(SuggestionSink sink);

// Words every suggestion carries after "taskq", before its own: the global
// options that choose what it acts on (`--db PATH` when the command line
// gave one), so that a pasted suggestion acts on the same database. Set once,
// before any command runs; empty by default.
void set_suggestion_prefix(std::vector<std::string> words);

// The words the user typed, `given` (from the command's name on), with the
// words `moved` taken out and `tail` put at the end: how a suggestion keeps
// every option the user gave (`add jobs --priority 5 echo hi` ->
// `add jobs --priority 5 -- echo hi`). `moved` is matched as a subsequence
// from the end, as a parser leaves such words over. Empty when `given`
// already holds `--` (what follows it is a program's, not to be rebuilt)
// or does not hold `moved`: the caller then shows the usage form.
std::optional<std::vector<std::string>>
rebuilt(const std::vector<std::string>& given,
        const std::vector<std::string>& moved,
        const std::vector<std::string>& tail);

// The words of `taskq add QUEUE ...` that add `command` (the words the user
// gave) as a task: `--sh LINE` when it is one word that a shell would split
// or interpret (`cd /srv && make`: run by /bin/sh -c, as the user meant),
// else `-- CMD [ARG...]`, each word as given.
std::vector<std::string> add_args(const std::string& queue,
                                  const std::vector<std::string>& command);

// Whether no word of `words` holds a control character (below 0x20, or
// 0x7f): a suggestion shown inside a one-line message must be one line.
bool one_line(const std::vector<std::string>& words);

// Whether one word holds a character that splits a shell line into
// commands or words, or expands in it: blank, tab, newline, ;|&<>`$().
// `add` refuses such a word as a command's name (no program is named like
// that) and suggests it as --sh LINE.
bool shell_syntax(const std::string& word);

} // namespace taskq::core
