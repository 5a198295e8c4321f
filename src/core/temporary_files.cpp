#include "core/temporary_files.hpp"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <random>

namespace ptrain {

namespace {

// A fixed table, so that a signal handler reads it without allocating or locking.
constexpr int kSlots = 256;
enum SlotState : int { kFree = 0, kBusy = 1, kHeld = 2 };
struct Slot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX];
};
Slot slots[kSlots];
std::atomic<bool> dying{false};
std::atomic<bool> announced{false};  // the first handler has written its line
bool announce_signal = true;  // set before the handlers are installed

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction previous[sizeof kSignals / sizeof kSignals[0]];

void write_text(const char* text) {
  const ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

extern "C" void on_signal(int sig) {
  // Two signals (timeout's and the shell's) may reach two threads at once:
  // both remove the files; the first says so, and the other waits until it
  // has (ending the process first would leave the line unsaid).
  const bool first = !dying.exchange(true);
  for (Slot& slot : slots)
    if (slot.state.load() == kHeld) ::unlink(slot.path);
  if (first && announce_signal)
    write_text(sig == SIGINT    ? "ptrain: error: stopped by SIGINT\n"
             : sig == SIGTERM ? "ptrain: error: stopped by SIGTERM\n"
                              : "ptrain: error: stopped by SIGHUP\n");
  if (first) announced.store(true);
  while (!announced.load()) {
  }
  // End as the signal would have: the earlier handler, else the default action.
  for (size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i)
    if (kSignals[i] == sig) ::sigaction(sig, &previous[i], nullptr);
  ::raise(sig);
}

}  // namespace

void remove_temporary_files_on_signals(bool announce) {
  static std::once_flag once;
  std::call_once(once, [&] {
    announce_signal = announce;
    for (size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i) {
      struct sigaction action {};
      action.sa_handler = on_signal;
      sigemptyset(&action.sa_mask);
      for (int other : kSignals) sigaddset(&action.sa_mask, other);  // one handler at a time
      ::sigaction(kSignals[i], &action, &previous[i]);
      // Left ignored where it was (nohup): then no signal comes to handle.
      if (previous[i].sa_handler == SIG_IGN) ::sigaction(kSignals[i], &previous[i], nullptr);
    }
  });
}

void TemporaryFileGuard::hold(const std::string& path) {
  release();
  if (path.size() >= PATH_MAX) return;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!slots[i].state.compare_exchange_strong(expected, kBusy)) continue;
    std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
    slots[i].state.store(kHeld);
    slot_ = i;
    break;
  }
  // A handler that scanned the table before this file was in it has set
  // `dying` first (both sequentially consistent): then this one goes itself.
  if (dying.load()) ::unlink(path.c_str());
}

int TemporaryFileGuard::create(const std::string& prefix, std::string& path) {
  static constexpr char kLetters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 random{std::random_device{}()};
  for (int attempt = 0; attempt < 100; ++attempt) {
    path = prefix;
    for (int i = 0; i < 6; ++i) path += kLetters[random() % (sizeof kLetters - 1)];
    hold(path);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      // A handler that ran between hold() and open() removed nothing yet.
      if (dying.load()) ::unlink(path.c_str());
      return fd;
    }
    if (errno != EEXIST) break;
  }
  const int code = errno;
  release();
  errno = code;
  return -1;
}

void TemporaryFileGuard::release() {
  if (slot_ < 0) return;
  slots[slot_].state.store(kFree);
  slot_ = -1;
}

int registered_temporary_files() {
  int n = 0;
  for (const Slot& slot : slots) n += slot.state.load() == kHeld;
  return n;
}

}  // namespace ptrain
