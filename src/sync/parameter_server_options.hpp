#pragma once
// The parameter-server strategies as a run chooses them: ps-sync, ps-backup,
// ssp and async. Each is a ServerMode for ParameterServerGroup
// (parameter_server_strategy.hpp), which holds their common code.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/fields.hpp"
#include "core/problems.hpp"
#include "sync/stale_policy.hpp"
#include "sync/strategy.hpp"

namespace ptrain {

// What distinguishes one parameter-server strategy from another.
struct ServerMode {
  std::string name;        // for messages, e.g. "ps-backup"
  int servers = 1;         // shards
  bool aggregated = true;  // each update is the mean of several gradients (ps-sync, ps-backup)
  int backup = 0;          // ps-backup: the gradients an update does without
  std::optional<uint64_t> staleness_bound;  // ssp: s
  bool workers_may_leave = false;           // async: a failed worker leaves, the others go on
  StalePolicy stale_policy;                 // ssp and async
  uint64_t warmup_single = 0;               // ssp and async: only worker 0 trains for the first N gradients
  bool lr_divide = false;                   // async: the learning rate over W

  static ServerMode of(std::string_view name, int servers) {
    ServerMode m;
    m.name = name;
    m.servers = servers;
    return m;
  }
};

std::unique_ptr<StrategyGroup> make_parameter_server_group(const ServerMode& mode, const StrategyConfig& config,
                                                           size_t num_params, int workers);

// The fields of every parameter-server strategy.
#define PTRAIN_PS_COMMON                                                                 \
  static constexpr bool takes_codec = true;                                              \
  static constexpr bool distributed = true;                                              \
  static constexpr bool stops_on_time = true;                                            \
  static constexpr bool checkpoints = true; /* inside epochs for ps-sync, else at their ends */ \
  static constexpr bool mpi_by_default = true; /* the shards take gradients as they come (recv_any) */ \
  int servers = 1;                                                                       \
  std::unique_ptr<StrategyGroup> make_group(const StrategyConfig& config, size_t num_params, int workers) const { \
    return make_parameter_server_group(mode(), config, num_params, workers);             \
  }

struct PsSyncOptions {
  static constexpr std::string_view name = "ps-sync";
  static constexpr std::string_view summary = "parameter servers: each update the mean of all W gradients";
  PTRAIN_PS_COMMON
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("servers", s.servers, "parameter-server shards (threads; under mpirun, the last S ranks)",
          Range::at_least(1));
  }
  ServerMode mode() const { return ServerMode::of(name, servers); }
};

struct PsBackupOptions {
  static constexpr std::string_view name = "ps-backup";
  static constexpr std::string_view summary =
      "parameter servers with backup workers: each update the first W - b gradients (Chen et al. 2016)";
  PTRAIN_PS_COMMON
  int backup = 1;
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("servers", s.servers, "parameter-server shards (threads; under mpirun, the last S ranks)",
          Range::at_least(1));
    visit("backup", s.backup, "b: each update takes the first W - b gradients", Range::at_least(1));
  }
  void check(int workers, const std::string& prefix, Problems& problems) const {
    if (backup >= workers)
      problems.add(prefix + "backup", "must be below the " + std::to_string(workers) +
                                          " workers (each update takes W - b gradients; got " +
                                          std::to_string(backup) + ")");
  }
  ServerMode mode() const {
    ServerMode m = ServerMode::of(name, servers);
    m.backup = backup;
    return m;
  }
};

// What ssp and async share: how stale gradients are treated.
#define PTRAIN_PS_STALE_FIELDS(s, visit)                                                                        \
  visit("stale_policy", s.stale_policy,                                                                       \
        "none, drop:T (drop gradients staler than T updates), scale (step / (1 + staleness)) or batch:K (a " \
        "worker's next batch one base batch larger for each round of the W workers' updates its last "     \
        "gradient missed, at most K)",                                                                     \
        Range{});    \
  visit("warmup_single", s.warmup_single, "only worker 0 trains for the first N gradients", Range{})

struct SspOptions {
  static constexpr std::string_view name = "ssp";
  static constexpr std::string_view summary =
      "Stale Synchronous Parallel: no worker more than s steps ahead of the slowest";
  PTRAIN_PS_COMMON
  uint64_t staleness = 2;
  std::string stale_policy = "none";
  uint64_t warmup_single = 0;
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("servers", s.servers, "parameter-server shards (threads; under mpirun, the last S ranks)",
          Range::at_least(1));
    visit("staleness", s.staleness, "s: no worker runs more than s steps ahead of the slowest", Range{});
    PTRAIN_PS_STALE_FIELDS(s, visit);
  }
  void check(int, const std::string& prefix, Problems& problems) const;
  ServerMode mode() const;
};

struct AsyncOptions {
  static constexpr std::string_view name = "async";
  static constexpr std::string_view summary = "parameter servers applying every gradient as it arrives";
  PTRAIN_PS_COMMON
  std::string stale_policy = "none";
  uint64_t warmup_single = 0;
  bool async_lr_divide = false;
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("servers", s.servers, "parameter-server shards (threads; under mpirun, the last S ranks)",
          Range::at_least(1));
    PTRAIN_PS_STALE_FIELDS(s, visit);
    visit("async_lr_divide", s.async_lr_divide, "divide the learning rate by the workers", Range{});
  }
  void check(int, const std::string& prefix, Problems& problems) const;
  ServerMode mode() const;
};

#undef PTRAIN_PS_COMMON
#undef PTRAIN_PS_STALE_FIELDS

}  // namespace ptrain
