#include "cli/strict_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "cli/path_option.hpp"

namespace ptrain {

std::optional<bool> switch_value(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  if (text == "true" || text == "1" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "0" || text == "no" || text == "off") return false;
  return std::nullopt;
}

namespace {

// A switch's value, normalised to "true" or "false" before CLI11 converts it.
// `name`: for a switch --help does not list (--no-overlap), which CLI11's error leaves unnamed.
CLI::Validator switch_word(const std::string& name) {
  return CLI::Validator(
      [name](std::string& text) {
        const auto value = switch_value(text);
        if (!value)
          return fmt::format("{}'{}' is not a switch value (true/false, 1/0, yes/no, on/off)",
                             name.empty() ? "" : name + ": ", text);
        text = *value ? "true" : "false";
        return std::string();
      },
      "", "switch");
}

void check_options_of(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    if (option == app.get_help_ptr() || option == app.get_help_all_ptr() || option == app.get_version_ptr())
      continue;
    const bool hidden = option->get_group().empty();
    if (option->get_expected_max() == 0 || option->get_type_size_max() == 0)
      option->check(switch_word(hidden && !option->get_lnames().empty() ? "--" + option->get_lnames().front() : ""));
    else option->check(non_empty("value"));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) check_options_of(*sub);
}

}  // namespace

void check_every_option(CLI::App& app) { check_options_of(app); }

std::optional<std::string> empty_assignment(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (arg == "--") break;
    if (arg.starts_with("--") && arg.size() > 3 && arg.back() == '=' && arg.find('=') == arg.size() - 1) return arg;
  }
  return std::nullopt;
}

std::string bounded_line(const std::string& line, size_t limit) {
  if (line.size() <= limit) return line;
  size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
  return fmt::format("{}... ({} more characters)", line.substr(0, cut), line.size() - cut);
}

}  // namespace ptrain
