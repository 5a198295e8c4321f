#pragma once
// The strategies a run can choose (--strategy, the plan's `strategy`). Adding
// one is its options struct (`name`, `fields`, `make_group`, and the traits
// below where they differ from the defaults) and one line in the list.
#include <optional>
#include <string>

#include "core/problems.hpp"
#include "core/registry.hpp"
#include "shm/hogwild_parameters.hpp"
#include "shm/leashed_parameters.hpp"
#include "shm/locked_parameters.hpp"
#include "sync/hybrid_allreduce.hpp"
#include "sync/parameter_server_options.hpp"
#include "sync/pipeline_strategy.hpp"
#include "sync/sequential_turns.hpp"

namespace ptrain {

using StrategyRegistry =
    Registry<HybridOptions, SequentialOptions, PsSyncOptions, PsBackupOptions, SspOptions, AsyncOptions,
             PipelineOptions, SeqOptions, MutexOptions, RwLockOptions, HogwildOptions, LeashedOptions>;
using StrategyChoice = StrategyRegistry::Choice;

// Traits a strategy's options may declare (with these defaults when absent):
//   static constexpr bool takes_codec = false;    gradients cross a wire, so a codec applies
//   static constexpr bool distributed = false;    runs as MPI ranks too, not only as threads
//   static constexpr bool stops_on_time = false;  ends a run at run.time_limit by itself
//   static constexpr bool checkpoints = false;    writes checkpoints and resumes from them
//   static constexpr bool shared_memory = false;  threads share one model (shm_config()), run by run_async_sgd
//   static constexpr bool local_workers = false;  runs worker threads inside MPI ranks (run.local_workers)
//   static constexpr bool mpi_by_default = false; between hosts, run.transport auto takes MPI's transport, not
//                                                 Gloo's (comm/gloo_communicator.hpp)
//   static constexpr bool pipeline = false;       its workers hold stages of the model (stages_of(workers) each
//                                                 pipeline), share their pipeline's batch, take run.microbatches
//   int servers;                                  parameter-server shards besides the workers
//   void check(int workers, const std::string& prefix, Problems&) const;
bool takes_codec(const StrategyChoice& s);
bool distributed(const StrategyChoice& s);
bool stops_on_time(const StrategyChoice& s);
bool checkpoints(const StrategyChoice& s);
bool runs_local_workers(const StrategyChoice& s);
bool mpi_by_default(const StrategyChoice& s);
// "hybrid, sequential, ...": the strategies that write checkpoints, for messages.
std::string strategies_with_checkpoints();
// "ps-sync, ps-backup, ssp and async": the strategies with parameter servers.
std::string strategies_with_servers();
int servers_of(const StrategyChoice& s);
bool has_servers(const StrategyChoice& s);
// A pipeline's stages among `workers` (the workers of one pipeline); 0 for the other strategies.
int pipeline_stages_of(const StrategyChoice& s, int workers);
void check_strategy(const StrategyChoice& s, int workers, const std::string& prefix, Problems& problems);
// The trainer's strategy; empty for a shared-memory one.
StrategyFactory strategy_factory_of(const StrategyChoice& s);
// A shared-memory strategy's own fields as the runner's config; nullopt for the others.
std::optional<ShmConfig> shared_memory_config(const StrategyChoice& s);

}  // namespace ptrain
