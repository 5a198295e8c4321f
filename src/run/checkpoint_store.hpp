#pragma once
// Checkpoints on disk: a directory of numbered checkpoints, each complete or
// absent. Every worker writes its own part (`step-<N>.<run>.rank-<r>.part`,
// its state as records with a CRC-32 at the end; <run> tells one run's parts
// from a crashed run's at the same step), and once all parts are there
// worker 0 commits them with a manifest (`step-<N>.ckpt`: the plan, the step,
// the run, each part's size and CRC-32, and a CRC-32 of its own). Each file is
// written to a temporary name and renamed (core/atomic_file.hpp), so a
// checkpoint exists exactly when its manifest does, and its parts are the
// ones the manifest names.
//
// Two orders of flushing to disk: commit() flushes the parts, then writes
// and flushes the manifest (a checkpoint is on disk once it is there at all);
// publish() renames the manifest into place unflushed, which a crash of the
// process survives (the page cache does), and make_durable() flushes it all
// later, off the training path; only a durable checkpoint lets older ones go.
// A power loss before then may take the newest checkpoint, whose CRC-32s
// then refuse it, never the durable one before it.
//
// Reading skips a damaged checkpoint (truncated, a flipped byte, a part
// missing) and takes the newest intact one.
#include <cstddef>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/atomic_file.hpp"

namespace ptrain {

struct CheckpointPart {
  uint64_t bytes = 0;  // the whole part file
  uint32_t crc = 0;    // CRC-32 of the part file
};

struct FoundCheckpoint {
  uint64_t step = 0;  // steps every worker had taken
  uint64_t run = 0;   // the run that wrote it
  std::string plan_json;
  std::vector<CheckpointPart> parts;  // per worker
  std::string manifest;               // its path
};

// A new run's name for its parts, so that they are told from a crashed run's
// at the same step: random, drawn once (by worker 0, which tells the others).
uint64_t new_checkpoint_run_id();

class CheckpointStore {
 public:
  // For writing: `dir` is created if missing. Throws ptrain::Error naming it when it cannot be.
  CheckpointStore(std::string dir, int keep);
  // For reading: `dir` must exist already (resuming never creates it).
  static CheckpointStore existing(std::string dir);
  // Before a run: throws ptrain::Error "checkpoint directory <dir>: ..." when
  // checkpoints could not be written there (it is a file, a FIFO or a device,
  // or nothing can be created in it or, where it is missing, in the directory
  // it would be made in). Creates nothing.
  static void check_writable(const std::string& dir);

  const std::string& dir() const { return dir_; }
  std::string manifest_path(uint64_t step) const;
  std::string part_path(uint64_t step, uint64_t run, int rank) const;

  // Writes worker `rank`'s part of the checkpoint at `step` of run `run`:
  // flushed to disk (Flush::file; its rename by commit()) or not (Flush::none;
  // make_durable() flushes it).
  CheckpointPart write_part(uint64_t step, uint64_t run, int rank, std::span<const std::byte> state,
                            Flush flush = Flush::file) const;
  // What worker 0 commits: each of `workers` parts once it is on disk, waiting
  // up to `timeout` for the others' (or until `give_up` says so).
  std::vector<CheckpointPart> wait_for_parts(uint64_t step, uint64_t run, int workers,
                                             std::chrono::milliseconds timeout,
                                             const std::function<bool()>& give_up = {}) const;
  // Commits the checkpoint at `step` once every part is flushed: its manifest,
  // flushed with the directory; then removes all but the newest `keep`
  // checkpoints (and parts no manifest names).
  void commit(uint64_t step, uint64_t run, const std::string& plan_json, std::span<const CheckpointPart> parts) const;
  // Commits the checkpoint at `step` once every part is renamed into place,
  // flushing nothing: resumable from here on after a crash of the process.
  void publish(uint64_t step, uint64_t run, const std::string& plan_json, std::span<const CheckpointPart> parts) const;
  // Flushes a published checkpoint's `workers` parts, its manifest and the
  // directory to disk (a WriteError when one cannot be), then removes all but
  // the newest `keep` checkpoints up to `step`; newer ones stay.
  void make_durable(uint64_t step, uint64_t run, int workers) const;
  // Removes the manifest of the checkpoint at `step` (its parts go with the
  // leftovers): one that could not be made durable is not kept.
  void withdraw(uint64_t step) const;

  // Removes what a run that failed or was killed left behind: temporary files
  // and parts of a checkpoint that was never committed (no manifest of their
  // step). Only while no worker writes here. Returns how many it removed.
  size_t remove_leftovers() const;

  // The newest intact checkpoint (nullopt: none). Each newer one skipped is
  // reported through `skipped` as one line naming the file and the damage.
  std::optional<FoundCheckpoint> newest(const std::function<void(const std::string&)>& skipped = {}) const;
  // Worker `rank`'s state in `found`, checked against the manifest.
  std::vector<std::byte> read_part(const FoundCheckpoint& found, int rank) const;

 private:
  struct NoCreate {};
  CheckpointStore(std::string dir, int keep, NoCreate);
  std::vector<uint64_t> committed_steps() const;  // ascending, by manifest name
  FoundCheckpoint read_manifest(uint64_t step) const;
  void write_manifest(uint64_t step, uint64_t run, const std::string& plan_json, std::span<const CheckpointPart> parts,
                      Flush flush) const;
  // All but the newest `keep` checkpoints up to `durable`, and parts no kept manifest names, go.
  void prune(uint64_t durable) const;

  std::string dir_;
  int keep_;
};

}  // namespace ptrain
