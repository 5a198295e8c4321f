#include "cli/terminal.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace ptrain {

namespace {

bool set(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0';
}

}  // namespace

bool redraws(std::FILE* out) {
  if (::isatty(::fileno(out)) == 0) return false;
  // OpenMPI and other launchers give each rank a pseudo-terminal.
  if (set("OMPI_COMM_WORLD_SIZE") || set("PMIX_RANK") || set("PMI_RANK")) return false;
  const char* term = std::getenv("TERM");
  return term == nullptr || std::strcmp(term, "dumb") != 0;
}

bool colours(std::FILE* out) { return redraws(out) && !set("NO_COLOR"); }

std::string painted(std::FILE* out, Colour colour, const std::string& text) {
  if (!colours(out)) return text;
  const char* code = colour == Colour::Red ? "\x1b[1;31m" : colour == Colour::Yellow ? "\x1b[1;33m" : "\x1b[1m";
  return code + text + "\x1b[0m";
}

void print_error(const std::string& kind, const std::string& message) {
  fmt::print(stderr, "ptrain: {}: {}\n", painted(stderr, Colour::Red, kind), message);
}

void print_warning(const std::string& message) {
  fmt::print(stderr, "ptrain: {}: {}\n", painted(stderr, Colour::Yellow, "warning"), message);
}

}  // namespace ptrain
