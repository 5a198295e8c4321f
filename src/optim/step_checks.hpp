#pragma once
// Checks every optimizer makes on its inputs before it touches any state, so a
// bad call fails loudly instead of reading or writing past a buffer.
#include <cstddef>
#include <string_view>

namespace ptrain {

// Throws ptrain::Error unless params and grad both hold exactly `size` values.
void check_step_sizes(std::string_view optimizer, size_t size, size_t params_size, size_t grad_size);

// Returns lr if a schedule may set it (finite and >= 0; 0 freezes the parameters,
// as at the end of a cosine schedule); throws ptrain::Error otherwise.
float checked_scheduled_lr(std::string_view optimizer, float lr);

}  // namespace ptrain
