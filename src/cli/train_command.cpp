#include "cli/train_command.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <thread>

#include "cli/byte_size.hpp"
#include "cli/model_widths.hpp"
#include "cli/progress_display.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/error.hpp"
#include "data/fashion_mnist.hpp"
#include "model/blas_check.hpp"
#include "model/torch/model_factory.hpp"
#include "optim/optimizer.hpp"
#include "sync/gradient_buckets.hpp"
#include "train/run_report.hpp"

namespace ptrain {

namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// --straggler RANK:FACTOR
void parse_straggler(TrainOptions& o) {
  if (o.straggler.empty()) return;
  const size_t colon = o.straggler.find(':');
  int rank = -1;
  double factor = 0;
  size_t used_rank = 0, used_factor = 0;
  try {
    if (colon != std::string::npos) {
      rank = std::stoi(o.straggler.substr(0, colon), &used_rank);
      factor = std::stod(o.straggler.substr(colon + 1), &used_factor);
    }
  } catch (const std::exception&) {
    used_rank = 0;
  }
  if (colon == std::string::npos || used_rank != colon || used_factor != o.straggler.size() - colon - 1 ||
      !(factor >= 1) || !std::isfinite(factor))
    throw Error("--straggler '" + o.straggler + "': expected RANK:FACTOR with FACTOR >= 1, e.g. 3:4");
  if (rank < 0 || rank >= o.train.workers)
    throw Error(fmt::format("--straggler '{}': no worker {} among {} workers", o.straggler, rank, o.train.workers));
  o.train.straggler_rank = rank;
  o.train.straggler_factor = factor;
}

// Every check that needs no data, so a bad command line fails at once.
void check_options(TrainOptions& o) {
  if (o.train.workers < 1) throw Error(fmt::format("--workers must be at least 1 (got {})", o.train.workers));
  if (o.train.batch < 1) throw Error("--batch must be at least 1");
  if (o.train.epochs < 1) throw Error("--epochs must be at least 1");
  if (o.threads_per_worker < 1)
    throw Error(fmt::format("--threads-per-worker must be at least 1 (got {})", o.threads_per_worker));
  if (!(o.comm_timeout_s > 0))
    throw Error(fmt::format("--comm-timeout must be > 0 seconds (got {})", o.comm_timeout_s));
  if (!contains(model_names(), o.model.name))
    throw Error("--model: unknown model '" + o.model.name + "' (choose " + joined(model_names()) + ")");
  if (!contains(strategy_names(), o.train.strategy.name))
    throw Error("--strategy: unknown strategy '" + o.train.strategy.name + "' (choose " +
                joined(strategy_names()) + ")");
  o.model.hidden = parse_widths(o.hidden);
  o.train.strategy.allreduce = parse_allreduce_algorithm(o.allreduce);
  const auto bucket_bytes = parse_byte_size(o.bucket_size);
  if (!bucket_bytes)
    throw Error("--bucket-size '" + o.bucket_size +
                "': expected a positive size such as 25MiB, 512KiB or 4096");
  o.train.strategy.bucket_bytes = *bucket_bytes;
  if (o.int8_rounding != "nearest" && o.int8_rounding != "stochastic")
    throw Error("--int8-rounding: unknown rounding '" + o.int8_rounding + "' (choose nearest or stochastic)");
  o.train.strategy.codec.int8_stochastic = o.int8_rounding == "stochastic";
  o.train.strategy.codec.seed = o.train.seed;
  validate_codec_config(o.train.strategy.codec);
  o.train.strategy.stale_policy = parse_stale_policy(o.stale_policy);
  parse_straggler(o);
  o.train.strategy.time_limit_seconds = o.train.time_limit_s;
  validate_strategy_config(o.train.strategy, o.train.workers);
  OptimizerConfig opt;
  opt.kind = parse_optimizer_kind(o.optimizer);
  opt.lr = o.lr;
  opt.momentum = o.momentum;
  opt.weight_decay = o.weight_decay;
  make_optimizer(opt, 1);  // validates lr, momentum and weight decay
  o.train.strategy.optimizer = opt;
  o.train.comm_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.comm_timeout_s * 1000));
  check_fashion_mnist_dir(o.data_dir);
  if (!o.report_path.empty()) check_writable(o.report_path);
}

nlohmann::json codec_json(const StrategyConfig& s) {
  const CodecConfig& c = s.codec;
  nlohmann::json j = {{"codec", c.name}};
  if (c.name == "int8") j.update({{"chunk", c.int8_chunk}, {"stochastic", c.int8_stochastic}});
  if (c.name == "topk") j.update({{"ratio", c.topk_ratio}, {"error_feedback", c.topk_error_feedback}});
  if (c.name == "dgc")
    j.update({{"density", c.dgc.density},
              {"sample_fraction", c.dgc.sample_fraction},
              {"min_samples", c.dgc.min_samples},
              {"momentum_correction", c.dgc.momentum_correction},
              {"momentum", c.dgc.momentum},
              {"clip_norm", c.dgc.clip_norm},
              {"momentum_masking", c.dgc.momentum_masking},
              {"warmup_epochs", c.dgc.warmup_epochs},
              {"dense_one_dim", c.dgc.dense_one_dim},
              {"accumulation", c.dgc.accumulation},
              {"optimizer_applied", to_string(s.optimizer.kind)}});
  return j;
}

nlohmann::json config_json(const TrainOptions& o, const Dataset& train_set, const Dataset& test_set,
                           size_t num_params, const BlasInfo& blas, const std::string& backend) {
  return {{"model", o.model.name},
          {"hidden", o.model.hidden},
          {"parameters", num_params},
          {"strategy", o.train.strategy.name},
          {"backend", backend},
          {"allreduce", o.allreduce},
          {"bucket_bytes", o.train.strategy.bucket_bytes},
          {"overlap", o.train.strategy.overlap},
          {"compress", codec_json(effective_strategy_config(o.train.strategy))},
          {"workers", o.train.workers},
          {"batch_per_worker", o.train.batch},
          {"epochs", o.train.epochs},
          {"max_steps", o.train.max_steps},
          {"time_limit_s", o.train.time_limit_s},
          {"seed", o.train.seed},
          {"optimizer", o.optimizer},
          {"lr", o.lr},
          {"momentum", o.momentum},
          {"weight_decay", o.weight_decay},
          {"data", o.data_dir},
          {"train_samples", train_set.size()},
          {"test_samples", test_set.size()},
          {"standardize", o.standardize},
          {"threads_per_worker", o.threads_per_worker},
          {"pin_workers", o.train.pin_workers},
          {"comm_timeout_s", o.comm_timeout_s},
          {"servers", uses_parameter_servers(o.train.strategy.name) ? o.train.strategy.servers : 0},
          {"backup", o.train.strategy.backup},
          {"staleness", o.train.strategy.staleness},
          {"stale_policy", to_string(o.train.strategy.stale_policy)},
          {"warmup_single", o.train.strategy.warmup_single},
          {"async_lr_divide", o.train.strategy.async_lr_divide},
          {"straggler", o.straggler},
          {"log_every", o.train.log_every},
          {"blas", blas.library},
          {"hardware_threads", std::thread::hardware_concurrency()}};
}

std::string mib(uint64_t bytes) {
  return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

// Staleness and what the servers dropped, from shard 0 (every shard applies the same gradients).
void print_server_summary(const RunResult& result) {
  const ServerStats& s = result.servers.front();
  fmt::print("  servers      {} shard(s), {} updates of {} gradients applied", result.servers.size(), s.updates,
             s.applied());
  if (s.dropped_late > 0) fmt::print(", {} late ones dropped", s.dropped_late);
  if (s.dropped_stale > 0) fmt::print(", {} stale ones dropped", s.dropped_stale);
  fmt::print("\n  staleness    mean {:.2f}, p99 {}, max {}", s.mean_staleness(), s.staleness_quantile(0.99),
             s.max_staleness());
  if (s.max_clock_gap > 0) fmt::print("; widest ssp gap {} steps", s.max_clock_gap);
  fmt::print("\n");
  std::string steps;
  for (size_t w = 0; w < result.worker_steps.size(); ++w)
    steps += fmt::format("{}{}", w ? " " : "", result.worker_steps[w]);
  fmt::print("  worker steps {}\n", steps);
}

}  // namespace

CLI::App* add_train_command(CLI::App& app, TrainOptions& o) {
  auto* cmd = app.add_subcommand("train", "Train a model on Fashion-MNIST with several workers");
  cmd->option_defaults()->always_capture_default();
  o.train.workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  o.train.epochs = 3;
  o.train.batch = 32;
  o.data_dir = kDefaultFashionMnistDir;
  cmd->add_option("--model", o.model.name, "Model: " + joined(model_names()));
  cmd->add_option("--hidden", o.hidden, "MLP hidden widths, comma-separated");
  o.workers_option =
      cmd->add_option("--workers", o.train.workers,
                      "Workers (threads in this process; under mpirun, the ranks); default: the cores");
  cmd->add_option("--strategy", o.train.strategy.name, "Synchronization: " + joined(strategy_names()));
  cmd->add_option("--allreduce", o.allreduce,
                  "Gradient all-reduce of the hybrid strategy: native (shared memory), ring, hd or tree");
  cmd->add_option(
      "--bucket-size", o.bucket_size,
      "Gradients are all-reduced in buckets of this size (e.g. 25MiB, 512KiB), last layers first");
  cmd->add_flag("--overlap,!--no-overlap", o.train.strategy.overlap,
                "Start each bucket's all-reduce while backward still runs (LibTorch models)");
  auto& codec = o.train.strategy.codec;
  cmd->add_option("--compress", codec.name, "Gradient compression: none, fp16, int8, topk or dgc");
  cmd->add_option("--int8-chunk", codec.int8_chunk, "int8: elements sharing one scale");
  cmd->add_option("--int8-rounding", o.int8_rounding, "int8: nearest or stochastic");
  cmd->add_option("--topk-ratio", codec.topk_ratio, "topk: fraction of the elements sent");
  cmd->add_flag("--error-feedback,!--no-error-feedback", codec.topk_error_feedback,
                "topk: keep what is not sent in a residual for later steps");
  cmd->add_option("--dgc-density", codec.dgc.density, "dgc: fraction of the elements sent after warm-up");
  cmd->add_option("--dgc-sample", codec.dgc.sample_fraction,
                  "dgc: fraction of the elements sampled to estimate the threshold");
  cmd->add_option("--dgc-min-samples", codec.dgc.min_samples, "dgc: ... but at least this many");
  cmd->add_option("--dgc-warmup", codec.dgc.warmup_epochs,
                  "dgc: warm-up epochs (density 25%, 6.25%, 1.5625%, 0.4%, then --dgc-density)");
  cmd->add_option("--dgc-clip", codec.dgc.clip_norm,
                  "dgc: local gradient clipping by norm, threshold x N^-1/2 (0: off)");
  cmd->add_flag("--dgc-momentum-correction,!--no-dgc-momentum-correction", codec.dgc.momentum_correction,
                "dgc: accumulate the velocity, not the gradient (with --optimizer momentum)");
  cmd->add_flag("--dgc-masking,!--no-dgc-masking", codec.dgc.momentum_masking,
                "dgc: momentum factor masking (zero u and v where sent)");
  cmd->add_flag("--dgc-accumulation,!--no-dgc-accumulation", codec.dgc.accumulation,
                "dgc: accumulate locally what is not sent");
  cmd->add_flag("--dgc-dense-biases,!--dgc-sparse-biases", codec.dgc.dense_one_dim,
                "dgc: send 1-D tensors (biases) dense");
  cmd->add_option("--optimizer", o.optimizer, "sgd, momentum, nesterov or adam");
  cmd->add_option("--lr", o.lr, "Learning rate");
  cmd->add_option("--momentum", o.momentum, "Momentum (momentum and nesterov)");
  cmd->add_option("--weight-decay", o.weight_decay, "L2 weight decay");
  cmd->add_option("--batch", o.train.batch, "Mini-batch size per worker");
  cmd->add_option("--epochs", o.train.epochs, "Passes over the training set");
  cmd->add_option("--max-steps", o.train.max_steps, "Stop after this many steps (0: no limit)");
  cmd->add_option("--time-limit", o.train.time_limit_s,
                  "Parameter servers: stop after this many seconds of training (0: no limit; --epochs is the most)");
  cmd->add_option("--seed", o.train.seed, "Seed for data order and initial weights");
  cmd->add_option("--data", o.data_dir, "Directory with the Fashion-MNIST IDX files (.gz or not)");
  cmd->add_flag("--standardize,!--no-standardize", o.standardize,
                "Standardise pixels with the training set's mean and deviation (else only scale to [0,1])");
  cmd->add_option("--train-samples", o.train_samples, "Use only the first N training samples (0: all)");
  cmd->add_option("--report", o.report_path, "Write a JSON run report to this file");
  cmd->add_option("--log-every", o.train.log_every, "Record the loss every k steps in the report");
  cmd->add_option("--threads-per-worker", o.threads_per_worker, "LibTorch and OpenBLAS threads per worker");
  cmd->add_flag("--pin,!--no-pin", o.train.pin_workers, "Pin worker r to the r-th core the process may use");
  cmd->add_option("--comm-timeout", o.comm_timeout_s, "Seconds a worker waits for the others before failing");
  auto& s = o.train.strategy;
  cmd->add_option("--servers", s.servers,
                  "Parameter-server shards (threads; under mpirun, the last S of the ranks)");
  cmd->add_option("--backup", s.backup, "ps-backup: b, each update takes the first W - b gradients");
  cmd->add_option("--staleness", s.staleness, "ssp: no worker runs more than s steps ahead of the slowest");
  cmd->add_option("--stale-policy", o.stale_policy,
                  "ssp and async: none, drop:T (drop gradients staler than T) or scale (step / (1 + staleness))");
  cmd->add_option("--warmup-single", s.warmup_single,
                  "ssp and async: only worker 0 trains for the first N gradients");
  cmd->add_flag("--async-lr-divide", s.async_lr_divide, "async: divide the learning rate by the workers");
  cmd->add_option("--straggler", o.straggler,
                  "RANK:FACTOR makes worker RANK compute FACTOR times slower (for experiments)");
  return cmd;
}

int run_train_command(TrainOptions& o) {
  // Started by mpirun: the workers are the ranks, one per process; with
  // parameter servers the last S ranks are the shards.
  const int servers = uses_parameter_servers(o.train.strategy.name) ? o.train.strategy.servers : 0;
  std::unique_ptr<MpiCommunicator> mpi, mpi_workers;
  if (launched_by_mpi()) {
    mpi = std::make_unique<MpiCommunicator>(
        std::chrono::milliseconds(static_cast<int64_t>(std::max(o.comm_timeout_s, 0.001) * 1000)));
    const int workers = mpi->size() - std::max(servers, 0);
    if (workers < 1)
      throw Error(fmt::format("--servers {}: mpirun started {} ranks, which leaves no worker (start W + S ranks)",
                              servers, mpi->size()));
    if (o.workers_option && o.workers_option->count() > 0 && o.train.workers != workers)
      throw Error(
          fmt::format("--workers {} does not match the {} worker ranks mpirun started (under mpirun the "
                      "workers are the ranks{})",
                      o.train.workers, workers, servers > 0 ? ", less the --servers" : ""));
    o.train.workers = workers;
    if (servers > 0) mpi_workers = mpi->split(mpi->rank() < workers ? 0 : 1);
  }
  const bool server_rank = mpi && servers > 0 && mpi->rank() >= o.train.workers;
  const bool speaker = !mpi || mpi->rank() == 0;  // only one process prints and writes
  check_options(o);
  o.model.init_seed = o.train.seed;
  const BlasInfo blas = detect_blas();
  if (blas.is_reference && speaker)
    fmt::print(stderr,
               "ptrain: warning: the reference BLAS is loaded ({}); training runs many times slower. Select "
               "OpenBLAS: update-alternatives --set libblas.so.3-x86_64-linux-gnu "
               "/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3\n",
               blas.library);
  set_compute_threads(o.threads_per_worker);

  Dataset train_set = load_fashion_mnist(o.data_dir, Split::Train);
  Dataset test_set = load_fashion_mnist(o.data_dir, Split::Test);
  if (o.train_samples > 0) train_set = train_set.head(o.train_samples);
  if (o.standardize) {
    const auto s = fit_standardization(train_set);
    apply_standardization(train_set, s);
    apply_standardization(test_set, s);
  }
  auto factory = [&] { return make_model(o.model, train_set.sample_shape(), train_set.num_classes()); };
  auto probe = factory();
  const size_t num_params = probe->params().size();
  const size_t num_buckets = plan_gradient_buckets(probe->layout(), o.train.strategy.bucket_bytes).size();
  const bool overlaps = o.train.strategy.overlap && probe->set_gradient_ready_hook({});
  probe.reset();
  if (mpi && servers > 0) {
    fmt::print("ptrain: rank {} of {}: {}\n", mpi->rank(), mpi->size(),
               server_rank ? fmt::format("parameter server shard {}", mpi->rank() - o.train.workers)
                           : fmt::format("worker {}", mpi->rank()));
    std::fflush(stdout);
  }
  if (server_rank) {
    serve_on(*mpi, o.train, train_set, factory);
    return 0;
  }
  if (!speaker) {
    if (mpi_workers)
      train_on(*mpi_workers, *mpi, o.train, train_set, &test_set, factory);
    else
      train_on(*mpi, o.train, train_set, &test_set, factory);
    return 0;
  }
  std::string backend =
      mpi ? fmt::format("mpi backend (started by mpirun): {} ranks, one worker each", o.train.workers)
          : fmt::format("local backend: {} workers as threads", o.train.workers);
  if (servers > 0)
    backend += fmt::format(" and {} server shard {}(s)", servers, mpi ? "rank" : "thread");
  fmt::print("ptrain: {} model ({} parameters), {} strategy, {}, {} compute thread(s) each; BLAS {}\n",
             o.model.name, num_params, o.train.strategy.name, backend, o.threads_per_worker,
             blas.library.empty() ? "not found" : blas.library);
  fmt::print("ptrain: data {}: {} training and {} test samples; batch {} per worker\n", o.data_dir,
             train_set.size(), test_set.size(), o.train.batch);

  ProgressDisplay display(stdout);
  TrainCallbacks callbacks;
  callbacks.on_progress = [&](const Progress& p) { display.progress(p); };
  callbacks.on_epoch_end = [&](const EpochMetrics& m) { display.epoch_end(m, o.train.epochs); };
  const RunResult result =
      mpi_workers ? train_on(*mpi_workers, *mpi, o.train, train_set, &test_set, factory, callbacks)
      : mpi       ? train_on(*mpi, o.train, train_set, &test_set, factory, callbacks)
                  : train(o.train, train_set, &test_set, factory, callbacks);

  uint64_t sent = 0;
  for (const auto& c : result.comm) sent = std::max(sent, c.bytes_sent);
  const double accuracy = result.epochs.empty() ? 0.0 : result.epochs.back().test_accuracy;
  fmt::print("\nsummary\n");
  fmt::print("  model        {} ({} parameters)\n", o.model.name, num_params);
  fmt::print("  strategy     {}, {} workers x batch {}, {} lr {}\n", o.train.strategy.name, o.train.workers,
             o.train.batch, o.optimizer, o.lr);
  fmt::print("  steps        {} in {} epoch(s), {:.2f} ms each\n", result.steps, result.epochs.size(),
             result.steps > 0 ? 1000.0 * result.train_seconds / static_cast<double>(result.steps) : 0.0);
  if (o.train.strategy.name == "hybrid")
    fmt::print("  all-reduce   {} in {} bucket(s) of at most {}, overlap with backward {}\n", o.allreduce,
               num_buckets, human_bytes(o.train.strategy.bucket_bytes), overlaps ? "on" : "off");
  fmt::print("  test         accuracy {:.2f}%  loss {:.4f}\n", 100 * accuracy,
             result.epochs.empty() ? 0.0 : result.epochs.back().test_loss);
  fmt::print("  throughput   {:.0f} samples/s ({:.1f} s training, {:.1f} s wall)\n", result.samples_per_s,
             result.train_seconds, result.wall_seconds);
  fmt::print("  comm         {} sent by the busiest worker\n", mib(sent));
  if (o.train.strategy.codec.name != "none") {
    CodecStats codec;
    for (const auto& c : result.codec) codec += c;
    fmt::print("  compression  {}: {:.1f}x (dense fp32 bytes / bytes on the wire)",
               o.train.strategy.codec.name, codec.ratio());
    if (codec.steady_ratio() != codec.ratio()) fmt::print(", {:.1f}x after warm-up", codec.steady_ratio());
    if (o.train.strategy.codec.name == "fp16") fmt::print(", {} value(s) saturated", codec.saturated);
    if (codec.refinements > 0) fmt::print(", {} threshold refinement(s)", codec.refinements);
    fmt::print("\n");
  }
  if (!result.servers.empty()) print_server_summary(result);
  for (const auto& why : result.left) fmt::print("  left         {}\n", why);
  if (!o.report_path.empty()) {
    write_json_file(o.report_path, make_run_report(config_json(o, train_set, test_set, num_params, blas,
                                                               mpi ? "mpi" : "local"),
                                                   result));
    fmt::print("  report       {}\n", o.report_path);
  }
  return 0;
}

}  // namespace ptrain
