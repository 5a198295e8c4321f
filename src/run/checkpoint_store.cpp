#include "run/checkpoint_store.hpp"

#include <sys/stat.h>

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/state_stream.hpp"
#include "core/wait_deadline.hpp"

namespace ptrain {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPartMagic = "PTRNPART";
constexpr std::string_view kManifestMagic = "PTRNCKPT";
constexpr uint32_t kFormat = 3;  // 2: a worker's part counts the base batches it drew; 3: a shard's statistics count the bytes pushed and pulled

// CRC-32 of `bytes`, going on from `crc`, that of the bytes before them (0: none).
uint32_t crc_of(std::span<const std::byte> bytes, uint32_t crc = 0) {
  return static_cast<uint32_t>(crc32_z(crc, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

// The CRC-32 a sealed file ends with.
uint32_t trailer_crc(std::span<const std::byte> file) {
  uint32_t crc = 0;
  if (file.size() >= sizeof crc) std::memcpy(&crc, file.data() + file.size() - sizeof crc, sizeof crc);
  return crc;
}

// A sealed file's size and the CRC-32 it ends with, reading only its end.
CheckpointPart part_on_disk(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error("checkpoint " + path + ": cannot open");
  const auto size = static_cast<uint64_t>(in.tellg());
  uint32_t crc = 0;
  if (size < sizeof crc) throw Error("checkpoint " + path + ": truncated");
  in.seekg(static_cast<std::streamoff>(size - sizeof crc));
  in.read(reinterpret_cast<char*>(&crc), sizeof crc);
  if (!in) throw Error("checkpoint " + path + ": cannot read");
  return {size, crc};
}

// The body of a sealed file, or a description of what is wrong with it.
std::span<const std::byte> unsealed(std::string_view magic, std::span<const std::byte> file, const std::string& label) {
  if (file.size() < magic.size() + sizeof(uint32_t))
    throw Error(fmt::format("{}: truncated ({} bytes)", label, file.size()));
  if (std::memcmp(file.data(), magic.data(), magic.size()) != 0)
    throw Error(fmt::format("{}: not a ptrain checkpoint file", label));
  uint32_t stored = 0;
  std::memcpy(&stored, file.data() + file.size() - sizeof stored, sizeof stored);
  if (crc_of(file.first(file.size() - sizeof stored)) != stored)
    throw Error(fmt::format("{}: damaged (checksum mismatch)", label));
  return file.subspan(magic.size(), file.size() - magic.size() - sizeof stored);
}

// Writes one of a checkpoint's files, sealed: magic + body + CRC-32 of magic
// and body, written from where they are (a part is the worker's whole state:
// no copy to join them). Complete or absent; a full disk is named as such,
// with the directory to free or change.
CheckpointPart write_sealed(const std::string& dir, const std::string& path, std::string_view magic,
                            std::span<const std::byte> body, Flush flush) {
  const auto head = std::as_bytes(std::span(magic.data(), magic.size()));
  const uint32_t crc = crc_of(body, crc_of(head));
  const std::span<const std::byte> pieces[] = {head, body, std::as_bytes(std::span(&crc, 1))};
  const uint64_t bytes = head.size() + body.size() + sizeof crc;
  try {
    write_file_atomically(path, pieces, "checkpoint " + path, flush);
  } catch (const WriteError& e) {
    if (!e.no_space()) throw;
    throw Error(
        fmt::format("checkpoint directory {}: no space left on device for {} ({} bytes); the checkpoints "
                    "before it are intact: resume once there is room, or into another run.checkpoint_dir",
                    dir, fs::path(path).filename().string(), bytes));
  }
  return {bytes, crc};
}

}  // namespace

uint64_t new_checkpoint_run_id() { return (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}(); }

CheckpointStore::CheckpointStore(std::string dir, int keep) : dir_(std::move(dir)), keep_(std::max(keep, 1)) {
  std::error_code ec;
  if (dir_.empty()) throw Error("checkpoint directory: empty path");
  fs::create_directories(dir_, ec);
  if (!fs::is_directory(dir_)) throw Error(fmt::format("checkpoint directory {}: {}", dir_, ec ? ec.message() : "not a directory"));
}

CheckpointStore::CheckpointStore(std::string dir, int keep, NoCreate) : dir_(std::move(dir)), keep_(std::max(keep, 1)) {
  if (!fs::is_directory(dir_)) throw Error(fmt::format("checkpoint directory {}: no such directory", dir_));
}

CheckpointStore CheckpointStore::existing(std::string dir) { return CheckpointStore(std::move(dir), 1, NoCreate{}); }

void CheckpointStore::check_writable(const std::string& dir) {
  const std::string label = "checkpoint directory " + dir;
  if (dir.empty()) throw Error("checkpoint directory: empty path");
  // The directory, or the nearest one above it that is there (where it would be made).
  fs::path there = fs::absolute(dir);
  std::error_code ec;
  while (!fs::exists(fs::symlink_status(there, ec)) && there.has_parent_path() && there != there.parent_path())
    there = there.parent_path();
  struct stat st {};
  if (::stat(there.c_str(), &st) != 0)
    throw Error(fmt::format("{}: {} cannot be reached ({})", label, there.string(), std::strerror(errno)));
  if (!S_ISDIR(st.st_mode))
    throw Error(fmt::format("{}: {} is {}, not a directory", label, there.string(), file_kind(st.st_mode)));
  check_output_path((there / ".ptrain-checkpoint").string(), label);  // makes a file there, and removes it
}

std::string CheckpointStore::manifest_path(uint64_t step) const {
  return (fs::path(dir_) / fmt::format("step-{:012}.ckpt", step)).string();
}

std::string CheckpointStore::part_path(uint64_t step, uint64_t run, int rank) const {
  return (fs::path(dir_) / fmt::format("step-{:012}.{:016x}.rank-{}.part", step, run, rank)).string();
}

CheckpointPart CheckpointStore::write_part(uint64_t step, uint64_t run, int rank, std::span<const std::byte> state,
                                           Flush flush) const {
  // The directory is flushed once for every part: by commit() or make_durable().
  return write_sealed(dir_, part_path(step, run, rank), kPartMagic, state, flush);
}

std::vector<CheckpointPart> CheckpointStore::wait_for_parts(uint64_t step, uint64_t run, int workers,
                                                            std::chrono::milliseconds timeout,
                                                            const std::function<bool()>& give_up) const {
  std::vector<CheckpointPart> parts(static_cast<size_t>(workers));
  WaitDeadline deadline(timeout);
  for (int r = 0; r < workers; ++r) {
    const std::string path = part_path(step, run, r);
    // A part is renamed into place whole, after it is flushed: once it is there, it is all there.
    while (!fs::exists(path)) {
      if (give_up && give_up()) throw Error(fmt::format("checkpoint at step {}: abandoned", step));
      if (deadline.passed())
        throw Error(fmt::format("checkpoint at step {}: worker {}'s part did not appear in {} within {:g} s", step, r,
                                dir_, static_cast<double>(timeout.count()) / 1000));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    parts[static_cast<size_t>(r)] = part_on_disk(path);
  }
  return parts;
}

void CheckpointStore::write_manifest(uint64_t step, uint64_t run, const std::string& plan_json,
                                     std::span<const CheckpointPart> parts, Flush flush) const {
  StateWriter w;
  w.put_value("format", kFormat);
  w.put_value("step", step);
  w.put_value("run", run);
  w.put_text("plan", plan_json);
  w.put("parts", parts);
  write_sealed(dir_, manifest_path(step), kManifestMagic, w.bytes(), flush);
}

void CheckpointStore::commit(uint64_t step, uint64_t run, const std::string& plan_json,
                             std::span<const CheckpointPart> parts) const {
  sync_directory(dir_);  // every part's rename, before the manifest names them
  write_manifest(step, run, plan_json, parts, Flush::all);
  prune(step);
}

void CheckpointStore::publish(uint64_t step, uint64_t run, const std::string& plan_json,
                              std::span<const CheckpointPart> parts) const {
  write_manifest(step, run, plan_json, parts, Flush::none);
}

void CheckpointStore::make_durable(uint64_t step, uint64_t run, int workers) const {
  for (int r = 0; r < workers; ++r) {
    const std::string path = part_path(step, run, r);
    flush_file(path, "checkpoint " + path);
  }
  const std::string manifest = manifest_path(step);
  flush_file(manifest, "checkpoint " + manifest);
  sync_directory(dir_);  // the renames of the parts and the manifest: on disk before anything older goes
  prune(step);
}

void CheckpointStore::withdraw(uint64_t step) const {
  std::error_code ec;
  fs::remove(manifest_path(step), ec);
}

void CheckpointStore::prune(uint64_t durable) const {
  // Of the checkpoints up to `durable` keep the newest `keep` (`durable`
  // among them); then drop every part no kept manifest names. Newer ones are
  // not on disk yet: none of them counts, none goes.
  std::vector<uint64_t> steps = committed_steps();
  std::erase_if(steps, [&](uint64_t s) { return s > durable; });
  std::set<uint64_t> kept;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps.size() - i > static_cast<size_t>(keep_)) {
      std::error_code ec;
      fs::remove(manifest_path(steps[i]), ec);
    } else {
      kept.insert(steps[i]);
    }
  }
  static const std::regex part_name(R"(step-(\d{12})\.[0-9a-f]{16}\.rank-\d+\.part)");
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, m, part_name)) continue;
    const uint64_t s = std::stoull(m[1].str());
    if (s <= durable && !kept.contains(s)) fs::remove(entry.path(), ec);
  }
}

size_t CheckpointStore::remove_leftovers() const {
  // ptrain's own names only: a part, and the hidden temporary file of a part or a manifest.
  static const std::regex part_name(R"(step-(\d{12})\.[0-9a-f]{16}\.rank-\d+\.part)");
  static const std::regex temporary_name(
      R"(\.step-\d{12}\.(ckpt|[0-9a-f]{16}\.rank-\d+\.part)\.[A-Za-z0-9]{6})");
  const std::vector<uint64_t> steps = committed_steps();
  const std::set<uint64_t> committed(steps.begin(), steps.end());
  std::vector<fs::path> leftovers;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, temporary_name) ||
        (std::regex_match(name, m, part_name) && !committed.contains(std::stoull(m[1].str()))))
      leftovers.push_back(entry.path());
  }
  size_t removed = 0;
  for (const auto& path : leftovers) removed += fs::remove(path, ec) ? 1 : 0;
  return removed;
}

std::vector<uint64_t> CheckpointStore::committed_steps() const {
  static const std::regex manifest_name(R"(step-(\d{12})\.ckpt)");
  std::vector<uint64_t> steps;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, m, manifest_name)) steps.push_back(std::stoull(m[1].str()));
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

FoundCheckpoint CheckpointStore::read_manifest(uint64_t step) const {
  FoundCheckpoint found;
  found.manifest = manifest_path(step);
  const std::string label = "checkpoint " + found.manifest;
  const std::vector<std::byte> file = read_regular_file(found.manifest, label);
  StateReader in(unsealed(kManifestMagic, file, label), label);
  const auto format = in.take_value<uint32_t>("format");
  if (format != kFormat)
    throw Error(fmt::format("{}: format {}, this ptrain reads format {}", label, format, kFormat));
  found.step = in.take_value<uint64_t>("step");
  if (found.step != step) throw Error(fmt::format("{}: holds step {}, its name says {}", label, found.step, step));
  found.run = in.take_value<uint64_t>("run");
  found.plan_json = in.take_text("plan");
  found.parts = in.take_vector<CheckpointPart>("parts");
  in.expect_end();
  if (found.parts.empty()) throw Error(label + ": names no parts");
  return found;
}

std::optional<FoundCheckpoint> CheckpointStore::newest(const std::function<void(const std::string&)>& skipped) const {
  const std::vector<uint64_t> steps = committed_steps();
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    try {
      FoundCheckpoint found = read_manifest(*it);
      for (size_t r = 0; r < found.parts.size(); ++r) read_part(found, static_cast<int>(r));
      return found;
    } catch (const Error& e) {
      if (skipped) skipped(e.what());
    }
  }
  return std::nullopt;
}

std::vector<std::byte> CheckpointStore::read_part(const FoundCheckpoint& found, int rank) const {
  if (rank < 0 || static_cast<size_t>(rank) >= found.parts.size())
    throw Error(fmt::format("checkpoint {}: has parts for {} workers, none for worker {}", found.manifest,
                            found.parts.size(), rank));
  const std::string path = part_path(found.step, found.run, rank);
  const std::string label = "checkpoint " + path;
  const std::vector<std::byte> file = read_regular_file(path, label);
  const CheckpointPart& want = found.parts[static_cast<size_t>(rank)];
  if (file.size() != want.bytes)
    throw Error(fmt::format("{}: {} bytes, its manifest says {}", label, file.size(), want.bytes));
  const auto body = unsealed(kPartMagic, file, label);
  if (trailer_crc(file) != want.crc)
    throw Error(fmt::format("{}: not the part its manifest names (checksum differs)", label));
  return {body.begin(), body.end()};
}

}  // namespace ptrain
