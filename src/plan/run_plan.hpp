#pragma once
// A run, typed: the model, the data, the optimizer, the strategy, the codec,
// the pull codec and the run's controls. Each of the first six is a registry's choice (one of
// its options structs, with only its own fields), not a bag of every flag.
// check() finds every impossible or inapplicable combination at once and
// names the plan's fields ("strategy.backup"), never a command-line flag.
// A plan is read from and written to JSON (plan/plan_json.hpp), and every run
// report embeds the plan it ran, so a report replays its run.
#include <cstdint>
#include <string>

#include "compress/codec_registry.hpp"
#include "compress/pull_codec_registry.hpp"
#include "core/fields.hpp"
#include "core/problems.hpp"
#include "data/data_registry.hpp"
#include "model/model_registry.hpp"
#include "optim/lr_schedule.hpp"
#include "optim/optimizer_registry.hpp"
#include "plan/strategy_registry.hpp"
#include "topology/placement.hpp"

namespace ptrain {

// Where the workers run: threads of this process, or MPI ranks (under
// mpirun); auto picks mpi when mpirun started the process.
enum class Backend { Auto, Local, Mpi };
template <>
struct EnumText<Backend> {
  static constexpr std::array<std::string_view, 3> names = {"auto", "local", "mpi"};
};

// What carries MPI ranks' all-reduces: OpenMPI's own transport, or Gloo's TCP
// connections (comm/gloo_communicator.hpp); launch and parameter servers stay
// on MPI either way. Auto: Gloo when the ranks span several hosts (it filled
// 94% of a 1 Gbit/s link where OpenMPI's filled 62-89%), the strategy does not
// declare mpi_by_default (the parameter servers and the pipeline do) and the
// build has Gloo; MPI otherwise (shared memory on one host).
enum class Transport { Auto, Mpi, Gloo };
template <>
struct EnumText<Transport> {
  static constexpr std::array<std::string_view, 3> names = {"auto", "mpi", "gloo"};
};

// What a run does when its training diverges (a non-finite loss, or a
// gradient beyond fp16's range): stop with its report, or roll back to the
// last checkpoint with a smaller step size.
enum class OnDiverge { Stop, Rollback };
template <>
struct EnumText<OnDiverge> {
  static constexpr std::array<std::string_view, 2> names = {"stop", "rollback"};
};

// The plan's "run" section: how long, how many, how repeatable.
struct RunControls {
  static constexpr std::string_view name = "run";
  Backend backend = Backend::Auto;
  int workers = 0;  // 0: one per core (threads), or the ranks less the servers (mpi)
  int local_workers = 1;  // mpi: worker threads in each rank (worker rank x T + t)
  Transport transport = Transport::Auto;  // mpi: what carries the all-reduces between ranks
  size_t batch = 32;  // per worker
  size_t microbatches = 1;  // each worker's batch in this many parts, their gradients summed before the exchange
  double epochs = 3;  // passes over the training set; fractions allowed
  size_t max_steps = 0;  // steps per worker at most (0: no limit)
  LrDecay lr_decay = LrDecay::Constant;  // how the optimizer's lr changes with the epoch (optim/lr_schedule.hpp)
  std::vector<int64_t> lr_milestones;    // step: the epochs after which lr is multiplied by lr_gamma
  double lr_gamma = 0.1;
  uint64_t seed = 42;  // data order, initial weights, codec randomness
  double time_limit = 0;  // seconds of training (0: none); strategies that stop on time
  size_t log_every = 10;  // a loss point every k steps
  double comm_timeout = 60;  // seconds a worker waits for the others before failing
  int threads_per_worker = 1;  // LibTorch and OpenBLAS threads per worker
  std::string device = "cpu";  // where workers compute: cpu, cuda or cuda:N (core/compute_device.hpp)
  ByteSize memory_limit;  // the most each worker may hold to train (0: no limit)
  Placement placement = Placement::Compact;  // where the threads and their memory go (topology/thread_places.hpp)
  std::string topology;  // the machine to place them on: "" this one, an hwloc XML file (.xml) or a synthetic description
  int straggler_rank = -1;  // this worker computes straggler_factor times slower (-1: none)
  double straggler_factor = 1;
  std::string checkpoint_dir;  // write checkpoints here ("": none)
  Cadence checkpoint_every;    // steps ("100") or seconds ("30s"); 0: at the end of every epoch
  int checkpoint_keep = 3;     // the newest this many are kept
  OnDiverge on_diverge = OnDiverge::Stop;
  double rollback_lr_scale = 0.5;  // each rollback multiplies the learning rate by this
  int max_rollbacks = 3;           // then a divergence stops the run
  int max_restarts = 0;            // threads: restarts from the last checkpoint after a worker failed
  std::string save_model;      // write the trained model here, a TorchScript module ("": not saved)
  std::string metrics;   // the run as it goes, JSON lines (run/metrics_stream.hpp; "-": standard output)
  std::string timeline;  // what each worker did when, Chrome trace events (run/timeline_file.hpp)
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("backend", s.backend, "auto, local (threads) or mpi (ranks under mpirun)", Range{});
    visit("workers", s.workers,
          "workers (threads; under mpirun, the ranks less the servers, times local_workers); 0: one per core",
          Range::non_negative());
    visit("local_workers", s.local_workers,
          "under mpirun, worker threads in each rank, each with its own replica and data shard (thread t of rank r "
          "is worker r x local_workers + t); strategy hybrid",
          Range::between(1, 256));
    visit("transport", s.transport,
          "under mpirun, what carries the all-reduces between ranks: mpi (OpenMPI's transport), gloo (Gloo's TCP "
          "connections, on the interface GLOO_SOCKET_IFNAME or MPI's btl_tcp_if_include names, loopback when every "
          "rank shares a host; strategies without parameter servers) or auto (gloo when the ranks span several "
          "hosts and the strategy is neither a parameter server nor the pipeline, else mpi)",
          Range{});
    visit("batch", s.batch, "mini-batch size per worker", Range::at_least(1));
    visit("microbatches", s.microbatches,
          "gradient accumulation: each worker takes its batch as this many micro-batches, one after another, and "
          "sums their gradients (each weighted by its share of the samples) before one exchange; the update is the "
          "whole batch's, with one micro-batch's activations at a time; strategy pipeline: the micro-batches that "
          "flow through its stages",
          Range::between(1, 1 << 20));
    visit("epochs", s.epochs, "passes over the training set (fractions allowed)", Range{0, 1e6, true, false});
    visit("max_steps", s.max_steps, "stop after this many steps per worker (0: no limit)", Range{});
    visit("lr_decay", s.lr_decay,
          "how the learning rate changes as training goes on, from the optimizer's lr: constant, step (multiplied "
          "by lr_gamma after each epoch of lr_milestones) or cosine (annealed to 0 over the run's epochs); every "
          "worker, server shard and thread applies the rate of the epoch its update belongs to",
          Range{});
    visit("lr_milestones", s.lr_milestones, "lr_decay step: the epochs after which lr is multiplied by lr_gamma",
          Range::any_count());
    visit("lr_gamma", s.lr_gamma, "lr_decay step: what each milestone multiplies lr by", Range::fraction());
    visit("seed", s.seed, "seed for data order, initial weights and codecs", Range{});
    visit("time_limit", s.time_limit, "stop after this many seconds of training (0: no limit)",
          Range::between(0, 1e9));
    visit("log_every", s.log_every, "record the loss every k steps", Range::at_least(1));
    visit("comm_timeout", s.comm_timeout, "seconds a worker waits for the others before failing",
          Range::between(0.001, 1e6));
    visit("threads_per_worker", s.threads_per_worker, "LibTorch and OpenBLAS threads per worker",
          Range::between(1, 1024));
    visit("device", s.device,
          "where each worker's forward and backward run: cpu, cuda (the workers spread over the visible GPUs; an "
          "MPI rank by its rank on its host) or cuda:N; the parameters stay in host memory, where the gradients are "
          "reduced and the update applied",
          Range{});
    visit("memory_limit", s.memory_limit,
          "the most each worker may hold to train, e.g. 512MiB (0: no limit): its parameters, their gradients and "
          "the optimizer's state, and for a pipeline stage only its own layers', with the step's gradient sum and "
          "the activations it keeps for backward passes (measured at its first step), a pipeline's cut chosen among "
          "those whose every stage fits; a worker that would hold more is refused before training, one that comes "
          "to hold more stops the run, each naming the worker",
          Range{});
    visit("placement", s.placement,
          "where the threads go: none (where the scheduler puts them), compact (thread i on the i-th core this "
          "process may use; a core's second hardware thread only once every core has one) or spread (round-robin "
          "over the NUMA nodes, then the cores of each); each thread's memory, its replica's included, on its "
          "core's node, and the shared-memory strategies' shared parameters on thread 0's node (compact) or "
          "interleaved over the threads' nodes (spread); worker threads in MPI ranks after those of the host's "
          "lower ranks, parameter-server shard threads after the workers (a rank with one worker is placed by "
          "mpirun); more threads than cores wrap around",
          Range{});
    visit("topology", s.topology,
          "the machine to place the threads on: empty for this one, a path ending in .xml (hwloc's XML, as lstopo "
          "writes it) or hwloc's synthetic description, e.g. 'pack:2 node:1 core:2 pu:1' (2 NUMA nodes of 2 "
          "cores); on another machine than this one the placement is planned and reported, nothing bound",
          Range{});
    visit("straggler_rank", s.straggler_rank, "this worker computes straggler_factor times slower (-1: none)",
          Range::at_least(-1));
    visit("straggler_factor", s.straggler_factor, "how much slower the straggler computes",
          Range::between(1, 1e6));
    visit("checkpoint_dir", s.checkpoint_dir, "write checkpoints of the whole training state into this directory",
          Range{});
    visit("checkpoint_every", s.checkpoint_every,
          "a checkpoint every N steps per worker, or every N seconds with Ns (0: at the end of every epoch); "
          "ps-backup, ssp and async take them at epoch ends only, the shared-memory strategies every N x threads "
          "gradients and on the clock at loss checks",
          Range{});
    visit("checkpoint_keep", s.checkpoint_keep, "keep the newest this many checkpoints", Range::between(1, 1000000));
    visit("on_diverge", s.on_diverge,
          "when training diverges: stop (exit 3, the report written) or rollback (to the last checkpoint, with the "
          "learning rate scaled by rollback_lr_scale)",
          Range{});
    visit("rollback_lr_scale", s.rollback_lr_scale, "each rollback multiplies the learning rate by this",
          Range{0, 1, true, true});
    visit("max_rollbacks", s.max_rollbacks, "rollbacks at most; the next divergence stops the run",
          Range::between(1, 1000));
    visit("max_restarts", s.max_restarts,
          "restart from the last checkpoint, in the same process, after a worker failed, at most this many times "
          "(threads only; under mpirun restart the job with --resume)",
          Range::between(0, 1000));
    visit("save_model", s.save_model,
          "write the trained model to this file, a TorchScript module with the input preprocessing built in "
          "(Python's torch.jit.load runs it; ptrain eval evaluates it)",
          Range{});
    visit("metrics", s.metrics,
          "write the run as it goes to this file as JSON lines, each flushed at once: the plan, a loss every "
          "log_every steps (shared-memory strategies: each loss check), each epoch's evaluation, each committed "
          "checkpoint and the end, so a killed run keeps its curve (- : standard output; a resumed run appends)",
          Range{});
    visit("timeline", s.timeline,
          "write what each worker did when to this file as Chrome trace events (open it in Perfetto or "
          "chrome://tracing): forward, backward, each bucket's encode, all-reduce and decode, the waits, the "
          "optimizer, parameter-server pushes and pulls, checkpoints, evaluation; under mpirun every rank's, on "
          "one clock",
          Range{});
  }
};

// The plan's "data" section besides the data set's own fields.
struct DataControls {
  bool standardize = true;   // pixels standardised with the training set's mean and deviation
  size_t train_samples = 0;  // only the first N training samples (0: all)
  size_t test_samples = 0;   // only the first N test samples (0: all)
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("standardize", s.standardize,
          "standardise features with the training set's mean and deviation (else as loaded; token ids never are)",
          Range{});
    visit("train_samples", s.train_samples, "use only the first N training samples (0: all)", Range{});
    visit("test_samples", s.test_samples, "score only the first N test samples (0: all)", Range{});
  }
};

struct RunPlan {
  ModelChoice model = MlpOptions{};
  DataChoice data = FashionMnistOptions{};
  DataControls data_controls;
  OptimizerChoice optimizer = AdamOptions{};
  StrategyChoice strategy = HybridOptions{};
  CodecChoice codec = NoCompression{};
  PullCodecChoice pull = DensePullOptions{};  // parameter servers: what a pull sends back
  RunControls run;
};

// Every problem of the plan, naming fields: ranges, and the combinations that
// cannot run (a codec on a strategy that exchanges nothing, DGC's momentum
// correction without the momentum optimizer, a time limit on a strategy that
// cannot stop on time, a backup count the workers cannot cover...). Reads no
// file; `workers` is checked against what it must cover when it is known (> 0).
Problems check_plan(const RunPlan& plan);

// The optimizer and codec a run really uses. DGC's momentum correction takes
// over a momentum optimizer's momentum: the codec applies it, and the
// optimizer becomes plain SGD with the same learning rate and weight decay.
struct Effective {
  OptimizerConfig optimizer;
  CodecConfig codec;
  PullCodecChoice pull;
};
Effective effective_optimizer_and_codec(const RunPlan& plan);

}  // namespace ptrain
