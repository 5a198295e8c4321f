#include "cli/progress_display.hpp"

#include <fmt/format.h>

#include <string>

#include "cli/terminal.hpp"

namespace ptrain {

ProgressDisplay::ProgressDisplay(std::FILE* out) : out_(out), terminal_(redraws(out)) {}

std::string ProgressDisplay::time_left(const Progress& p) {
  const size_t done = (p.epoch - 1) * p.steps_per_epoch + p.step;
  const size_t all = p.epochs * p.steps_per_epoch;
  if (!first_step_) {
    first_step_ = done;
    since_first_.reset();
  }
  const double seconds = since_first_.seconds();
  if (done <= *first_step_ || seconds < 0.5 || all < done) return "";
  const auto left = static_cast<long long>(seconds / static_cast<double>(done - *first_step_) *
                                           static_cast<double>(all - done) + 0.5);
  if (left >= 3600) return fmt::format("  ETA {}:{:02}:{:02}", left / 3600, left / 60 % 60, left % 60);
  return fmt::format("  ETA {}:{:02}", left / 60, left % 60);
}

void ProgressDisplay::progress(const Progress& p) {
  const double fraction = static_cast<double>(p.step) / static_cast<double>(p.steps_per_epoch);
  if (terminal_) {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(fraction * kWidth);
    std::string bar(static_cast<size_t>(filled), '=');
    if (filled < kWidth) bar += '>' + std::string(static_cast<size_t>(kWidth - filled - 1), ' ');
    fmt::print(out_, "\repoch {}/{} [{}] {:3.0f}%  loss {:.4f}  {:.0f} samples/s{}\x1b[K", p.epoch, p.epochs,
               bar, 100 * fraction, p.loss, p.samples_per_s, time_left(p));
    std::fflush(out_);
    return;
  }
  const auto quarter = static_cast<size_t>(fraction * 4);
  if (p.step == 1 || quarter == 0) last_quarter_ = 0;
  if (quarter > last_quarter_ && quarter < 4) {
    last_quarter_ = quarter;
    fmt::print(out_, "epoch {}/{}: step {}/{}  loss {:.4f}  {:.0f} samples/s\n", p.epoch, p.epochs, p.step,
               p.steps_per_epoch, p.loss, p.samples_per_s);
    std::fflush(out_);
  }
}

void ProgressDisplay::epoch_end(const EpochMetrics& m, size_t epochs) {
  if (terminal_) fmt::print(out_, "\r\x1b[K");
  // The task's figure: accuracy for classification, perplexity for language modelling.
  const std::string figure = task_ == Task::LanguageModel ? fmt::format("test perplexity {:.3f}", m.test_perplexity)
                                                          : fmt::format("test accuracy {:.2f}%", 100 * m.test_accuracy);
  fmt::print(out_, "epoch {}/{}  train loss {:.4f}  test loss {:.4f}  {}  {:.0f} samples/s  {:.1f} s\n", m.epoch,
             epochs, m.train_loss, m.test_loss, figure, m.samples_per_s, m.seconds);
  std::fflush(out_);
}

}  // namespace ptrain
