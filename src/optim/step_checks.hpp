#pragma once
// Checks every optimizer makes on its inputs before it touches any state, so a
// bad call fails loudly instead of reading or writing past a buffer.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/state_stream.hpp"

namespace ptrain {

// Throws ptrain::Error unless params and grad both hold exactly `size` values.
void check_step_sizes(std::string_view optimizer, size_t size, size_t params_size, size_t grad_size);
// Throws ptrain::Error unless [offset, offset + params_size) lies within the
// optimizer's `size` values and grad holds as many as params.
void check_slice_sizes(std::string_view optimizer, size_t size, size_t offset, size_t params_size, size_t grad_size);

// Returns lr if a schedule may set it (finite and >= 0; 0 freezes the parameters,
// as at the end of a cosine schedule); throws ptrain::Error otherwise.
float checked_scheduled_lr(std::string_view optimizer, float lr);

// Reads the "optimizer" record of a checkpoint and throws ptrain::Error unless
// it names `optimizer` (a state saved by another optimizer cannot be loaded).
void check_state_kind(StateReader& in, std::string_view optimizer);

// The "optimizer.steps" and "optimizer.lr" records of a checkpoint, refused
// (ptrain::Error naming the checkpoint) when no run could have saved them: a
// negative step count or one that counting on would overflow (2^53 and up:
// more than any run takes), a learning rate set_lr would refuse (a damaged
// state, though a resumed run trains on with its plan's learning rate).
int64_t take_step_count(StateReader& in);
float take_lr(StateReader& in);

}  // namespace ptrain
