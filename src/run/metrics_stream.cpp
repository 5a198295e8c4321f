#include "run/metrics_stream.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"
#include "plan/plan_json.hpp"
#include "run/report.hpp"
#include "run/run.hpp"

namespace ptrain {

MetricsStream::MetricsStream(const std::string& path, const std::string& label, bool append)
    : path_(path), label_(label + " " + path) {
  if (path == "-") {
    out_ = stdout;
    return;
  }
  // O_NONBLOCK: a FIFO put there since the check would otherwise hang the open.
  const int fd = ::open(path.c_str(),
                        O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC) | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
  if (fd < 0) throw Error(fmt::format("{}: cannot open ({})", label_, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(label_ + ": is not a regular file (a FIFO, socket or device); not written");
  }
  out_ = ::fdopen(fd, append ? "a" : "w");
  if (!out_) {
    ::close(fd);
    throw Error(fmt::format("{}: cannot open ({})", label_, std::strerror(errno)));
  }
  owned_ = true;
}

MetricsStream::~MetricsStream() {
  if (owned_) std::fclose(out_);
}

void MetricsStream::line(const nlohmann::ordered_json& object) {
  if (failed_) return;
  const std::string text = object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (std::fwrite(text.data(), 1, text.size(), out_) != text.size() || std::fflush(out_) != 0) {
    failed_ = true;  // the run goes on: these lines are for watching it, the report is its result
    fmt::print(stderr, "ptrain: warning: {}: write failed ({}); no more lines\n", label_, std::strerror(errno));
  }
}

void MetricsStream::start(const RunStart& s, const RunPlan& plan, size_t every) {
  every_ = std::max<size_t>(every, 1);
  line({{"event", "start"},
        {"pid", static_cast<int64_t>(::getpid())},
        {"started_at", utc_now()},
        {"resumed_from",
         s.resumed_from.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(s.resumed_from)},
        {"model", s.model},
        {"parameters", s.parameters},
        {"workers", s.world ? s.world->workers : plan.run.workers},
        {"train_samples", s.train_samples},
        {"test_samples", s.test_samples},
        {"task", s.task == Task::Classification ? "classification" : "language-model"},
        {"plan", plan_to_json(plan)}});
}

void MetricsStream::step(const StepDone& s) {
  if (s.step % every_ != 0) return;
  line({{"event", "step"}, {"step", s.step}, {"epoch", s.epoch}, {"loss", s.loss}, {"seconds", s.seconds}});
}

void MetricsStream::checkpoint(const CheckpointDone& c) {
  line({{"event", "checkpoint"}, {"step", c.step}, {"manifest", c.manifest}});
}

void MetricsStream::epoch(const EpochMetrics& m) {
  line({{"event", "epoch"},
        {"epoch", m.epoch},
        {"steps", m.steps},
        {"train_loss", m.train_loss},
        {"test_loss", m.test_loss},
        {"test_accuracy", m.test_accuracy},
        {"test_perplexity", m.test_perplexity},
        {"samples_per_s", m.samples_per_s},
        {"seconds", m.seconds}});
}

void MetricsStream::loss_check(const LossCheck& c) {
  line({{"event", "loss_check"}, {"updates", c.updates}, {"seconds", c.seconds}, {"loss", c.loss}});
}

void MetricsStream::warning(const std::string& message) { line({{"event", "warning"}, {"message", message}}); }

void MetricsStream::recovery(const Recovery& r) {
  line({{"event", "recovery"},
        {"kind", r.kind},
        {"why", r.why},
        {"from", r.from.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(r.from)},
        {"lr", r.lr}});
}

void MetricsStream::end(const RunResult& r) {
  // As the report's summary has them: the last epoch's.
  const double accuracy = r.epochs.empty() ? 0.0 : r.epochs.back().test_accuracy;
  const double loss = r.epochs.empty() ? 0.0 : r.epochs.back().train_loss;
  line({{"event", "end"},
        {"outcome", r.diverged ? "diverged" : "trained"},
        {"steps", r.steps},
        {"samples", r.samples},
        {"train_seconds", r.train_seconds},
        {"samples_per_s", r.samples_per_s},
        {"final_test_accuracy", accuracy},
        {"final_test_perplexity", r.epochs.empty() ? 0.0 : r.epochs.back().test_perplexity},
        {"final_train_loss", loss}});
}

void MetricsStream::error(const std::string& message) { line({{"event", "error"}, {"message", message}}); }

}  // namespace ptrain
