#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <string>

namespace taskq::cli {

// Help text within 80 columns: descriptions, options and footers wrapped at
// spaces; `taskq --help` lists the commands by what a user does with them,
// one short line each; a usage line of our own where CLI11's cannot say it
// (run's `-- CMD [ARG...]`).
class HelpFormatter : public CLI::Formatter {
public:
  static constexpr size_t k_width = 80;

  std::map<const CLI::App*, std::string> usages;

  HelpFormatter();

  std::string make_usage(const CLI::App* app, std::string name) const override;
  std::string make_description(const CLI::App* app) const override;
  std::string make_footer(const CLI::App* app) const override;
  std::string make_subcommands(const CLI::App* app,
                               CLI::AppFormatMode mode) const override;
  std::string make_subcommand(const CLI::App* sub) const override;
  std::string make_option(const CLI::Option* opt,
                          bool is_positional) const override;
};

// Every command's help ends with the global options, and with the forms
// of DUR and TIME when it takes one.
void add_help_footers(CLI::App& cmd);

} // namespace taskq::cli
