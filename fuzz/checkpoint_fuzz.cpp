// Fuzz target: checkpoints (src/run/checkpoint_store, src/core/state_stream),
// read as `ptrain train --resume DIR` reads them, through the calls run()
// makes: the newest intact checkpoint in the directory (manifest and parts,
// sizes and CRC-32s), the plan it holds checked against this run's, then the
// trainer on threads, where every worker loads its state from its part (the
// parameters, the optimizer's, the codecs', the strategy's, the epoch and the
// results so far) through a StateReader and trains on to the run's end; for a
// shared-memory strategy, run_shared_memory loading the one part (the shared
// parameters and optimizer state, each thread's order, generators and
// counters, the run's position) and its threads training on.
//
// Input: the run (one of run_kinds(): a softmax model on a small synthetic set,
// trained by hybrid, sequential, a parameter-server or a shared-memory
// strategy), how
// the files are made, the step and run id they are named for, then chunks
// (uint32 length, bytes): the manifest, then each worker's part. The files are
//   mode 0: the chunks as they are (a checkpoint on disk, damaged or not);
//   mode 1: the manifest chunk is its body, sealed here with its magic and
//           CRC-32 so that its records are read; parts written by the store;
//   mode 2: the manifest committed by the store for the parts it wrote, with
//           the manifest chunk as its plan: every record of every part is read.
// Seeds are the checkpoints real runs of each kind write.
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "data/loaded_data.hpp"
#include "data/synthetic.hpp"
#include "fuzz_support.hpp"
#include "model/model_input.hpp"
#include "model/softmax_regression.hpp"
#include "plan/plan_json.hpp"
#include "run/resume.hpp"
#include "run/run.hpp"
#include "run/shared_memory_run.hpp"
#include "run/train_config.hpp"
#include "run/checkpoint_store.hpp"

namespace ptrain::fuzz {
namespace {

struct RunKind {
  const char* name;
  StrategyChoice strategy;
  OptimizerChoice optimizer;
  CodecChoice codec;
  int workers;
};

template <class Options>
Options with_shards(int servers) {
  Options options;
  options.servers = servers;
  return options;
}

const std::vector<RunKind>& run_kinds() {
  static const std::vector<RunKind> kinds = {
      {"hybrid-sgd", HybridOptions{}, SgdOptions{}, NoCompression{}, 1},
      {"hybrid-momentum-dgc", HybridOptions{}, MomentumOptions{}, DgcOptions{}, 2},
      {"hybrid-adam-topk", HybridOptions{}, AdamOptions{}, TopkOptions{}, 2},
      {"hybrid-nesterov-int8", HybridOptions{}, NesterovOptions{}, Int8Options{}, 3},
      {"hybrid-adam-fp16", HybridOptions{}, AdamOptions{}, Fp16Options{}, 2},
      {"hybrid-momentum", HybridOptions{}, MomentumOptions{}, NoCompression{}, 3},
      {"sequential-sgd", SequentialOptions{}, SgdOptions{}, NoCompression{}, 2},
      {"sequential-adam", SequentialOptions{}, AdamOptions{}, NoCompression{}, 3},
      // The parameter-server strategies: worker 0's part holds every shard's state.
      {"ps-sync-sgd", PsSyncOptions{}, SgdOptions{}, NoCompression{}, 2},
      {"ps-sync-adam-topk", with_shards<PsSyncOptions>(2), AdamOptions{}, TopkOptions{}, 2},
      {"ps-backup-momentum", PsBackupOptions{}, MomentumOptions{}, NoCompression{}, 3},
      {"ssp-sgd-int8", with_shards<SspOptions>(2), SgdOptions{}, Int8Options{}, 2},
      {"async-sgd-dgc", AsyncOptions{}, SgdOptions{}, DgcOptions{}, 2},
      // The shared-memory strategies: one part, every thread's state in it.
      {"seq-momentum", SeqOptions{}, MomentumOptions{}, NoCompression{}, 1},
      {"mutex-adam", MutexOptions{}, AdamOptions{}, NoCompression{}, 2},
      {"hogwild-adam", HogwildOptions{}, AdamOptions{}, NoCompression{}, 3},
      {"leashed-nesterov", LeashedOptions{}, NesterovOptions{}, NoCompression{}, 2},
  };
  return kinds;
}

RunPlan plan_of(const RunKind& kind) {
  RunPlan plan;
  plan.model = SoftmaxOptions{};
  plan.strategy = kind.strategy;
  plan.optimizer = kind.optimizer;
  plan.codec = kind.codec;
  plan.data_controls.standardize = false;
  plan.run.backend = Backend::Local;
  plan.run.workers = kind.workers;
  plan.run.batch = 3;
  plan.run.epochs = 2;
  plan.run.seed = 7;
  plan.run.placement = Placement::None;
  plan.run.comm_timeout = 10;
  return plan;
}

const LoadedData& data() {
  static const LoadedData loaded = [] {
    const Dataset all = make_gaussian_clusters(48, 4, 3, 5, 1.5f);
    return LoadedData{all.head(36), all};
  }();
  return loaded;
}

// What run() does with a plan on threads, resuming from `resume` unless it is empty.
RunResult run_on_threads(const RunPlan& plan, const std::string& resume) {
  Problems problems = check_plan(plan);
  std::optional<FoundCheckpoint> found;
  if (!resume.empty()) {
    found = newest_checkpoint(resume);
    check_resume(checkpoint_plan(*found), plan, problems);
  }
  problems.throw_if_any();
  TrainConfig config = train_config(plan, plan.run.workers);
  config.resume = found;
  config.resume_dir = resume;
  const LoadedData& loaded = data();
  const ModelInput input{loaded.train.sample_shape(), loaded.train.num_classes(), loaded.train.label_shape(),
                         plan.run.seed};
  const ModelFactory softmax = [&](int) { return SoftmaxOptions{}.make(input); };
  if (const auto shm = shared_memory_config(plan.strategy))
    return run_shared_memory(plan, *shm, plan.run.workers, loaded.train, loaded.test, softmax, {}, config);
  return train(config, loaded.train, &loaded.test, softmax);
}

constexpr std::string_view kManifestMagic = "PTRNCKPT";
constexpr size_t kMagicBytes = 8, kCrcBytes = 4;

// A manifest file from its body: magic, body, CRC-32 of both.
std::vector<uint8_t> sealed_manifest(std::span<const uint8_t> body) {
  std::vector<uint8_t> file(kManifestMagic.begin(), kManifestMagic.end());
  file.insert(file.end(), body.begin(), body.end());
  const auto crc = static_cast<uint32_t>(crc32_z(crc32_z(0L, Z_NULL, 0), file.data(), file.size()));
  const auto* p = reinterpret_cast<const uint8_t*>(&crc);
  file.insert(file.end(), p, p + sizeof crc);
  return file;
}

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::span<const uint8_t> body_of(const std::vector<uint8_t>& file) {
  return std::span(file).subspan(kMagicBytes, file.size() - kMagicBytes - kCrcBytes);
}

// Each run kind trained with checkpoints; its newest checkpoint in the three modes.
void write_seeds(const std::string& dir) {
  const ScratchDirectory scratch("checkpoint-seeds");
  for (size_t k = 0; k < run_kinds().size(); ++k) {
    const RunKind& kind = run_kinds()[k];
    scratch.clear();
    RunPlan plan = plan_of(kind);
    plan.run.checkpoint_dir = scratch.path();
    plan.run.checkpoint_every = Cadence{5, 0};
    plan.run.checkpoint_keep = 1;
    run_on_threads(plan, {});
    const auto found = CheckpointStore::existing(scratch.path()).newest();
    require(found.has_value(), std::string("no checkpoint written by run ") + kind.name);
    const std::vector<uint8_t> manifest = file_bytes(found->manifest);
    std::vector<std::vector<uint8_t>> parts;
    for (size_t r = 0; r < found->parts.size(); ++r)
      parts.push_back(file_bytes(
          CheckpointStore::existing(scratch.path()).part_path(found->step, found->run, static_cast<int>(r))));
    for (uint8_t mode = 0; mode < 3; ++mode) {
      InputBuilder seed;
      seed.put(static_cast<uint8_t>(k)).put(mode).put(found->step).put(found->run);
      if (mode == 0) seed.put_chunk(manifest);
      if (mode == 1) seed.put_chunk(body_of(manifest));
      if (mode == 2) seed.put_chunk(as_input(found->plan_json));
      for (const auto& part : parts) mode == 0 ? seed.put_chunk(part) : seed.put_chunk(body_of(part));
      write_seed(dir, std::string(kind.name) + "-mode" + std::to_string(mode), seed.bytes());
    }
  }
}

}  // namespace
}  // namespace ptrain::fuzz

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  ptrain::fuzz::write_seeds_if_asked(argc, argv, ptrain::fuzz::write_seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ptrain;
  using namespace ptrain::fuzz;
  static const ScratchDirectory dir("checkpoint");
  constexpr size_t kMaxParts = 4;
  dir.clear();
  InputCursor input({data, size});
  const RunKind& kind = run_kinds()[input.take<uint8_t>() % run_kinds().size()];
  const uint8_t mode = input.take<uint8_t>() % 3;
  const auto step = input.take<uint64_t>();
  const auto run_id = input.take<uint64_t>();
  const auto manifest = input.take_chunk();
  const CheckpointStore store(dir.path(), 1);
  std::vector<CheckpointPart> parts;
  for (int r = 0; r < static_cast<int>(kMaxParts) && input.left() > 0; ++r) {
    const auto part = input.take_chunk();
    if (mode == 0)
      write_file(store.part_path(step, run_id, r), part);
    else
      parts.push_back(store.write_part(step, run_id, r, std::as_bytes(part)));
  }
  if (mode == 0) write_file(store.manifest_path(step), manifest);
  if (mode == 1) write_file(store.manifest_path(step), sealed_manifest(manifest));
  if (mode == 2)
    store.commit(step, run_id, std::string(reinterpret_cast<const char*>(manifest.data()), manifest.size()),
                 parts);

  const RunPlan plan = plan_of(kind);
  RunResult result;
  if (!accepted([&] { result = run_on_threads(plan, dir.path()); })) return 0;
  require(!result.resumed_from.empty(), "a resumed run that says it did not resume");
  require(result.final_params.size() == 15, "a resumed run without the model's parameters");
  return 0;
}
