#pragma once
// Which ranks of an MPI job still answer, asked by a rank whose wait timed
// out: MPI says what a rank waits for, not which rank stopped the chain. A
// rank waiting for its peer may wait because that peer waits in turn for a
// rank that stopped; the waiter names the peer, the roll call names the rank
// that stopped.
//
// A roll call is a message to every rank asked, on a channel of its own (a
// duplicate of MPI_COMM_WORLD that carries nothing else), answered by every
// wait of comm/mpi_communicator.cpp while it polls: a live rank answers from
// whatever it waits in (a receive, a send, MPI's collective, a roll call of
// its own, on any communicator, on any thread), and a rank that is stopped,
// hung outside MPI or gone does not. One channel per process, not one per
// communicator, and every rank of the job asked, not only the communicator's:
// a parameter-server job's workers wait for each other on a communicator of
// their own, and one of them may wait for a stopped shard outside it.
// (A rank busy outside MPI for longer than the roll call listens, computing
// or writing a checkpoint, is named too.)
#include <mpi.h>

#include <chrono>
#include <optional>
#include <vector>

namespace ptrain {

// The channel is made with the first MPI communicator of the process, which
// every rank makes in the same order: returns the request to wait for
// alongside that communicator's own (then call roll_call_channel_ready()), or
// false when the channel was asked for already.
bool start_roll_call_channel(MPI_Request* request);
// The channel's request completed: roll calls are held and answered from now on.
void roll_call_channel_ready();

// Answers the roll calls waiting for this process; does not block. Every
// polling wait calls it.
void answer_roll_calls();

// Asks every other rank of the job and listens for `listen`, answering other
// roll calls meanwhile; returns the ranks (in MPI_COMM_WORLD) that did not
// answer, or nullopt when this process has no channel (its first
// communicator's setup timed out).
std::optional<std::vector<int>> call_the_roll(std::chrono::milliseconds listen);

}  // namespace ptrain
