// The roll call after a wait timed out on the MPI backend, as many ranks as
// mpirun started (three at least). A rank that stops answering sits in a
// blocking MPI call of the test's own, which answers no roll call, as a
// stopped process would.
//
// Point to point: rank 1 waits for rank 2, which waits in turn for rank 0.
// When rank 0 stops answering, rank 1's error names rank 0 as well as rank 2;
// when every rank still answers, it names rank 2 alone. The ranks past 2 wait
// on another communicator meanwhile, and answer from there.
//
// The entry check, as a parameter-server job waits: the last rank (a shard)
// stops answering while rank 1 (a worker) waits for it; rank 0, in a barrier
// of the workers' own communicator (split()), times out waiting for rank 1
// and names the shard, which is not in that communicator, as a rank of the job.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "comm/message_tags.hpp"
#include "comm/mpi_communicator.hpp"
#include "mpi_test_support.hpp"

namespace ptrain {
namespace {

constexpr auto kRollCallTimeout = std::chrono::seconds(1);  // rank 1's; the roll call listens a quarter of it
constexpr auto kLongTimeout = std::chrono::seconds(60);  // everyone else's
// Past MPI's eager limit (shared memory or TCP), so that the send waits for
// its receive rather than completing into a buffer.
constexpr size_t kLargeMessage = size_t{8} << 20;
constexpr int kReleaseTag = 1;  // on MPI_COMM_WORLD: rank 1 lets a silent rank 0 go on

struct Case {
  bool send;    // rank 1 sends to rank 2 (else receives from it)
  bool silent;  // rank 0 stops answering while rank 1 waits
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return std::string(info.param.send ? "Send" : "Recv") +
         (info.param.silent ? "Rank0Silent" : "EveryRankAnswers");
}

class MpiRollCall : public ::testing::TestWithParam<Case> {};

TEST_P(MpiRollCall, PointToPointTimeoutNamesTheRankThatStoppedAnswering) {
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MpiCommunicator comm = communicator_when_all_arrived(world_rank == 1 ? kRollCallTimeout : kLongTimeout);
  MpiCommunicator others = communicator_when_all_arrived(kLongTimeout);  // where rank 1 releases the rest
  if (comm.size() < 3) GTEST_SKIP() << "needs three ranks";
  const Case c = GetParam();
  const std::byte token{7};
  std::byte got{0};
  std::vector<std::byte> large(kLargeMessage, std::byte{1});  // rank 1's send may read it until the end
  std::string error;                                          // rank 1's
  switch (comm.rank()) {
    case 0:
      if (c.silent) {
        int release = 0;
        MPI_Recv(&release, 1, MPI_INT, 1, kReleaseTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        others.recv(1, kTagPsReply, std::span(&got, 1));
      }
      comm.send(2, kTagPsRequest, std::span(&token, 1));
      break;
    case 1:
      error = error_of([&] {
        if (c.send)
          comm.send(2, kTagPsRequest, large);
        else
          comm.recv(2, kTagPsReply, std::span(&got, 1));
      });
      if (c.silent) {
        const int release = 1;
        MPI_Send(&release, 1, MPI_INT, 0, kReleaseTag, MPI_COMM_WORLD);
      }
      for (int r = 0; r < comm.size(); ++r)
        if (r >= 3 || (r == 0 && !c.silent)) others.send(r, kTagPsReply, std::span(&token, 1));
      break;
    case 2:
      comm.recv(0, kTagPsRequest, std::span(&got, 1));
      EXPECT_EQ(got, token);
      if (c.send) comm.recv(1, kTagPsRequest, large);  // the send rank 1 gave up on, still in flight
      break;
    default:
      others.recv(1, kTagPsReply, std::span(&got, 1));
  }
  // Every rank is done with `large` after this, and rank 0 prints rank 1's verdict.
  const std::string peer =
      c.send ? "parameter-server request: rank 1 timed out after 1 s waiting for rank 2 to receive"
             : "parameter-server reply: rank 1 timed out after 1 s waiting for rank 2";
  EXPECT_EQ(from_every_rank(error)[1],
            c.silent ? peer + "; rank(s) 0 stopped answering (stopped, hung or gone)" : peer);
}

TEST(MpiRollCallOfTheJob, EntryTimeoutOnTheWorkersCommunicatorNamesAStoppedShard) {
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MpiCommunicator job = communicator_when_all_arrived(world_rank == 0 ? kRollCallTimeout : kLongTimeout);
  if (job.size() < 3) GTEST_SKIP() << "needs three ranks";
  const int shard = job.size() - 1;
  const auto workers = job.split(job.rank() < shard ? 0 : 1);  // rank 0's with rank 0's timeout
  const std::byte token{7};
  std::byte got{0};
  std::string error;  // rank 0's
  if (job.rank() == 0) {
    error = error_of([&] { workers->barrier(); });
    const int release = 1;
    MPI_Send(&release, 1, MPI_INT, shard, kReleaseTag, MPI_COMM_WORLD);
    for (int r = 2; r < shard; ++r) job.send(r, kTagPsReply, std::span(&token, 1));
  } else if (job.rank() == 1) {
    job.recv(shard, kTagPsReply, std::span(&got, 1));
  } else if (job.rank() < shard) {
    job.recv(0, kTagPsReply, std::span(&got, 1));
  } else {
    int release = 0;
    MPI_Recv(&release, 1, MPI_INT, 0, kReleaseTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    job.send(1, kTagPsReply, std::span(&token, 1));
  }
  std::string missing = "1";  // the workers that never entered the barrier
  for (int r = 2; r < shard; ++r) missing += ", " + std::to_string(r);
  EXPECT_EQ(from_every_rank(error)[0], "barrier: timed out after 1 s waiting for rank(s) " + missing +
                                           " (on rank 0); rank(s) " + std::to_string(shard) +
                                           " of the job stopped answering (stopped, hung or gone)");
}

INSTANTIATE_TEST_SUITE_P(All, MpiRollCall,
                         ::testing::Values(Case{true, true}, Case{true, false}, Case{false, true},
                                           Case{false, false}),
                         case_name);

}  // namespace
}  // namespace ptrain
