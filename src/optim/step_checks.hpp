#pragma once
// Checks every optimizer makes on its inputs before it touches any state, so a
// bad call fails loudly instead of reading or writing past a buffer.
#include <cstddef>
#include <string_view>

#include "core/state_stream.hpp"

namespace ptrain {

// Throws ptrain::Error unless params and grad both hold exactly `size` values.
void check_step_sizes(std::string_view optimizer, size_t size, size_t params_size, size_t grad_size);

// Returns lr if a schedule may set it (finite and >= 0; 0 freezes the parameters,
// as at the end of a cosine schedule); throws ptrain::Error otherwise.
float checked_scheduled_lr(std::string_view optimizer, float lr);

// Reads the "optimizer" record of a checkpoint and throws ptrain::Error unless
// it names `optimizer` (a state saved by another optimizer cannot be loaded).
void check_state_kind(StateReader& in, std::string_view optimizer);

}  // namespace ptrain
