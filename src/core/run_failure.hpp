#pragma once
// What a failed run means to whoever restarts it. A plain ptrain::Error is bad
// input: retrying will not help. The kinds here tell the CLI's exit status
// apart, so that a shell loop or a scheduler can retry from the last
// checkpoint exactly when that can succeed.
#include "core/error.hpp"

namespace ptrain {

// The run stopped part-way for a reason a restart from its last checkpoint can
// get past: a worker or rank that failed, died or never answered (a
// timeout), a checkpoint that could not be written.
class InterruptedError : public Error {
 public:
  using Error::Error;
};

// Bad input found before any rank talked to another (the flags, the plan):
// every rank of an mpirun job finds the same, so each can end on its own
// with kExitInput, rank 0 alone saying why, instead of aborting the job.
class PlanError : public Error {
 public:
  using Error::Error;
};

// The exit statuses of ptrain's commands.
enum ExitStatus : int {
  kExitOk = 0,
  kExitInternal = 1,  // a bug in ptrain: not the input's fault, not a passing failure
  kExitInput = 2,     // the input is wrong (options, plan, data, paths): fix it first
  kExitDiverged = 3,  // training diverged; the report says where
  kExitRetry = 75,    // interrupted: resume from the last checkpoint (EX_TEMPFAIL of sysexits.h)
};

}  // namespace ptrain
