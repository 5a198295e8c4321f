#pragma once
// How ptrain writes to a terminal: a line redrawn in place only on a terminal
// that is the user's (not under mpirun, whose ranks write to a pseudo-terminal
// even when the job's output goes to a log), and colours only there, never
// with NO_COLOR set (no-color.org) or TERM=dumb.
#include <cstdio>
#include <string>

namespace ptrain {

// `out` is a terminal a line may be redrawn on.
bool redraws(std::FILE* out);
// `out` may hold colours.
bool colours(std::FILE* out);

enum class Colour { Red, Yellow, Bold };
// `text` in `colour` where `out` may hold colours; as it is otherwise.
std::string painted(std::FILE* out, Colour colour, const std::string& text);

// "ptrain: KIND: MESSAGE" on standard error, KIND in red ("error", "internal
// error") or yellow (print_warning) where colours go.
void print_error(const std::string& kind, const std::string& message);
void print_warning(const std::string& message);

}  // namespace ptrain
