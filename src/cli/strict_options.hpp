#pragma once
// What every subcommand's options have in common, applied once to the whole
// command tree instead of option by option: a switch takes only
// true/false, 1/0, yes/no or on/off (CLI11 alone reads any number, and reads
// "false" as a count, so --pin=false turned pinning on); an option's value is
// never empty (CLI11 reads "" as the default for a number).
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ptrain {

// The switch words, lower-cased: true, 1, yes, on; false, 0, no, off. Nothing for any other text.
std::optional<bool> switch_value(std::string text);

// Adds both checks to every option of `app` and of its subcommands, at any depth.
void check_every_option(CLI::App& app);

// "--pin=" anywhere before a lone "--": CLI11 takes an empty assignment to a
// switch as the switch given. The argument, or nothing.
std::optional<std::string> empty_assignment(const std::vector<std::string>& args);

// An error line cut to at most `limit` characters (a plan file with a
// million unknown keys named them all), saying how much was left out.
std::string bounded_line(const std::string& line, size_t limit = 2000);

}  // namespace ptrain
