#include "data/bible_corpus.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <map>
#include <unordered_map>

#include "core/error.hpp"
#include "core/printable.hpp"

extern char** environ;

namespace ptrain {

namespace {

constexpr const char* kWholeBible = "Gen1:1-Rev22:21";
constexpr size_t kMostOutput = 16u << 20;  // the whole text is 4.4 MB
constexpr int kProgramSeconds = 60;        // it takes 0.2 s
constexpr const char* kInstall = "install Debian's bible-kjv and bible-kjv-text (apt-get install bible-kjv)";

std::string program_problem(const std::string& program) {
  struct stat st {};
  if (program.empty()) return "needs the path of bible-kjv's `bible` program";
  if (::stat(program.c_str(), &st) != 0) return program + ": no such program; " + kInstall;
  if (!S_ISREG(st.st_mode) || ::access(program.c_str(), X_OK) != 0) return program + ": not an executable file";
  return {};
}

// What `program -f Gen1:1-Rev22:21` prints (stdout and stderr together), with
// stdin closed, bounded in size and time, so that a wrong program can neither
// flood memory nor hang the run.
std::string whole_text(const std::string& program) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw Error("data.program: cannot make a pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, out[1], 2);
  std::string arg0 = program, flag = "-f", range = kWholeBible;
  char* argv[] = {arg0.data(), flag.data(), range.data(), nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (spawned != 0) {
    ::close(out[0]);
    throw Error("data.program: " + program + ": cannot run it (" + std::string(std::strerror(spawned)) + ")");
  }
  std::string text;
  std::string why;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kProgramSeconds);
  char buffer[1 << 16];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{out[0], POLLIN, 0};
    const int ready = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      why = fmt::format("printed nothing more for {} s", kProgramSeconds);
      break;
    }
    const ssize_t n = ::read(out[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > kMostOutput) {
      why = fmt::format("printed more than {} MiB, which the Bible is not", kMostOutput >> 20);
      break;
    }
  }
  ::close(out[0]);
  if (!why.empty()) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!why.empty()) throw Error("data.program: " + program + ": " + why);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string first = text.substr(0, text.find('\n'));
    throw Error(fmt::format("data.program: {} -f {} failed ({}){}{}; {}", program, kWholeBible,
                            WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status)) : "killed by a signal",
                            first.empty() ? "" : ": ", printable(first, 120), kInstall));
  }
  return text;
}

bool is_word_char(unsigned char c) { return std::isalpha(c) || c == '\''; }

// Lowercased words, apostrophes inside a word kept ("lord's"), the rest dropped.
void words_of(const std::string& text, std::vector<std::string>& out) {
  std::string word;
  for (const unsigned char c : text) {
    if (is_word_char(c)) {
      word.push_back(static_cast<char>(std::tolower(c)));
    } else if (!word.empty()) {
      out.push_back(std::move(word));
      word.clear();
    }
  }
  if (!word.empty()) out.push_back(std::move(word));
  for (auto& w : out) {  // quotes, not apostrophes, at the ends
    while (!w.empty() && w.back() == '\'') w.pop_back();
    while (!w.empty() && w.front() == '\'') w.erase(w.begin());
  }
  std::erase_if(out, [](const std::string& w) { return w.empty(); });
}

}  // namespace

std::vector<Verse> parse_bible_lines(std::string_view text, const std::string& source) {
  std::vector<Verse> verses;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    ++line_no;
    if (line.empty()) continue;
    // "1Sam3:4 text": a book (an optional digit, letters), chapter:verse, a space, the text.
    size_t i = 0;
    if (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
    const size_t letters = i;
    while (i < line.size() && std::isalpha(static_cast<unsigned char>(line[i]))) ++i;
    const size_t book_end = i;
    while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
    const bool chapter = i > book_end;
    const bool colon = i < line.size() && line[i] == ':';
    if (colon) ++i;
    const size_t verse_start = i;
    while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
    if (book_end == letters || !chapter || !colon || i == verse_start || i >= line.size() || line[i] != ' ')
      throw Error(fmt::format("{}: line {} is not a verse (\"Book1:1 text\"): \"{}\"", source, line_no,
                              printable(std::string(line), 80)));
    verses.push_back({std::string(line.substr(0, book_end)), std::string(line.substr(i + 1))});
  }
  return verses;
}

BiblePart bible_part(size_t book_index) {
  if (book_index % 10 == 8) return BiblePart::Validation;
  if (book_index % 10 == 9) return BiblePart::Test;
  return BiblePart::Train;
}

TokenCorpus tokenize_bible(const std::vector<Verse>& verses, int vocabulary, bool characters) {
  // Each verse's part, by its book's place.
  std::vector<BiblePart> part(verses.size());
  size_t book = 0;
  for (size_t v = 0; v < verses.size(); ++v) {
    if (v > 0 && verses[v].book != verses[v - 1].book) ++book;
    part[v] = bible_part(book);
  }
  TokenCorpus corpus;
  auto stream_of = [&](BiblePart p) -> std::vector<int32_t>& {
    return p == BiblePart::Train ? corpus.train : p == BiblePart::Validation ? corpus.validation : corpus.test;
  };
  if (characters) {
    std::map<unsigned char, int32_t> ids;  // by code
    for (size_t v = 0; v < verses.size(); ++v)
      if (part[v] == BiblePart::Train)
        for (const unsigned char c : verses[v].text) ids[c] = 0;
    ids['\n'] = 0;
    corpus.vocabulary.push_back("<unk>");
    for (auto& [c, id] : ids) {
      id = static_cast<int32_t>(corpus.vocabulary.size());
      corpus.vocabulary.push_back(c == '\n' ? "\\n" : std::string(1, static_cast<char>(c)));
    }
    for (size_t v = 0; v < verses.size(); ++v) {
      auto& s = stream_of(part[v]);
      for (const unsigned char c : verses[v].text) {
        const auto it = ids.find(c);
        s.push_back(it == ids.end() ? 0 : it->second);
      }
      s.push_back(ids['\n']);
    }
    return corpus;
  }
  std::vector<std::vector<std::string>> words(verses.size());
  std::unordered_map<std::string, uint64_t> counts;
  for (size_t v = 0; v < verses.size(); ++v) {
    words_of(verses[v].text, words[v]);
    if (part[v] == BiblePart::Train)
      for (const auto& w : words[v]) ++counts[w];
  }
  std::vector<std::pair<std::string, uint64_t>> by_count(counts.begin(), counts.end());
  std::sort(by_count.begin(), by_count.end(),
            [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  const size_t kept = std::min(by_count.size(), static_cast<size_t>(std::max(vocabulary, 2) - 2));
  corpus.vocabulary = {"<eos>", "<unk>"};
  std::unordered_map<std::string, int32_t> ids;
  for (size_t k = 0; k < kept; ++k) {
    ids[by_count[k].first] = static_cast<int32_t>(corpus.vocabulary.size());
    corpus.vocabulary.push_back(by_count[k].first);
  }
  for (size_t v = 0; v < verses.size(); ++v) {
    auto& s = stream_of(part[v]);
    for (const auto& w : words[v]) {
      const auto it = ids.find(w);
      s.push_back(it == ids.end() ? 1 : it->second);
    }
    s.push_back(0);
  }
  return corpus;
}

void BibleOptions::check(const std::string& prefix, Problems& problems) const {
  if (const std::string why = program_problem(program); !why.empty()) problems.add(prefix + "program", ": " + why);
}

LoadedData BibleOptions::load() const {
  if (const std::string why = program_problem(program); !why.empty()) throw Error("data.program: " + why);
  const std::vector<Verse> verses = parse_bible_lines(whole_text(program), program + " -f " + kWholeBible);
  // The whole text has 66 books; a program that printed less is not the whole Bible.
  size_t books = verses.empty() ? 0 : 1;
  for (size_t v = 1; v < verses.size(); ++v) books += verses[v].book != verses[v - 1].book;
  if (books < 10)
    throw Error(fmt::format("data.program: {} printed {} verses of {} books, not the Bible's 66 books; {}", program,
                            verses.size(), books, kInstall));
  TokenCorpus corpus = tokenize_bible(verses, vocabulary, characters);
  const int size = static_cast<int>(corpus.vocabulary.size());
  const std::string level = characters ? "characters" : "words";
  return {Dataset::token_stream("bible-" + level + "-train", corpus.train, size),
          Dataset::token_stream("bible-" + level + "-" + std::string(enum_name(held_out)),
                                held_out == HeldOutBooks::Test ? corpus.test : corpus.validation, size)};
}

}  // namespace ptrain
