#include "cli/progress_lines.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace ptrain {

namespace {

std::string label_of(const std::string& path) { return "--progress-lines " + path; }

}  // namespace

void ProgressLines::check(const std::string& path) {
  if (path != "-") check_output_path(path, label_of(path));
}

ProgressLines::ProgressLines(const std::string& path) : path_(path) {
  if (path == "-") {
    out_ = stdout;
    return;
  }
  // O_NONBLOCK: a FIFO put there since the check would otherwise hang the open.
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
  if (fd < 0) throw Error(fmt::format("{}: cannot open ({})", label_of(path), std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(label_of(path) + ": is not a regular file (a FIFO, socket or device); not written");
  }
  out_ = ::fdopen(fd, "a");
  if (!out_) {
    ::close(fd);
    throw Error(fmt::format("{}: cannot open ({})", label_of(path), std::strerror(errno)));
  }
  owned_ = true;
}

ProgressLines::~ProgressLines() {
  if (owned_) std::fclose(out_);
}

void ProgressLines::line(const nlohmann::ordered_json& object) {
  if (failed_) return;
  const std::string text = object.dump() + "\n";
  if (std::fwrite(text.data(), 1, text.size(), out_) != text.size() || std::fflush(out_) != 0) {
    failed_ = true;  // the run goes on: these lines are for watching it, the report is its result
    fmt::print(stderr, "ptrain: warning: {}: write failed ({}); no more progress lines\n", label_of(path_),
               std::strerror(errno));
  }
}

void ProgressLines::start(const RunStart& s) {
  line({{"event", "start"},
        {"pid", static_cast<int64_t>(::getpid())},
        {"resumed_from",
         s.resumed_from.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(s.resumed_from)}});
}

void ProgressLines::step(const StepDone& s) {
  line({{"event", "step"}, {"step", s.step}, {"epoch", s.epoch}, {"loss", s.loss}, {"seconds", s.seconds}});
}

void ProgressLines::checkpoint(const CheckpointDone& c) {
  line({{"event", "checkpoint"}, {"step", c.step}, {"manifest", c.manifest}});
}

void ProgressLines::epoch(const EpochMetrics& m) {
  line({{"event", "epoch"},
        {"epoch", m.epoch},
        {"train_loss", m.train_loss},
        {"test_loss", m.test_loss},
        {"test_accuracy", m.test_accuracy},
        {"samples_per_s", m.samples_per_s},
        {"seconds", m.seconds}});
}

void ProgressLines::loss_check(const LossCheck& c) {
  line({{"event", "loss_check"}, {"updates", c.updates}, {"seconds", c.seconds}, {"loss", c.loss}});
}

void ProgressLines::end(const RunResult& r) {
  line({{"event", "end"}, {"outcome", r.diverged ? "diverged" : "trained"}, {"steps", r.steps}});
}

void ProgressLines::error(int exit_status, const std::string& message) {
  line({{"event", "error"}, {"exit_status", exit_status}, {"message", message}});
}

}  // namespace ptrain
