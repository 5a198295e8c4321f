// Where a run under mpirun puts its workers (run/world.hpp).
#include <gtest/gtest.h>

#include "plan/run_plan.hpp"
#include "run/world.hpp"

namespace ptrain {
namespace {

TEST(MpiWorld, RanksOfOneHostTakeTheirPlacesOnItInRankOrder) {
  RunPlan plan;
  plan.run.comm_timeout = 60;
  const World world = make_world(plan);
  ASSERT_EQ(world.backend, Backend::Mpi);
  // CTest's mpirun starts every rank on this host: rank r has r lower ranks
  // beside it, so its GPU is the r-th and its worker threads come after the
  // lower ranks' on the cores they share unbound.
  EXPECT_EQ(world.host_slot, world.rank());
  EXPECT_EQ(world.device_slot(world.rank()), world.rank());
}

}  // namespace
}  // namespace ptrain
