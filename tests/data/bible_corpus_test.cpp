// The King James Bible corpus: the program's lines read as verses, books
// split into training, validation and test, words and characters as tokens
// with <unk> and <eos>, and every way the program can be wrong refused in one
// line. With bible-kjv installed, the whole text too.
#include "data/bible_corpus.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

TEST(BibleCorpus, ReadsVersesAndRefusesALineThatIsNone) {
  const auto verses = parse_bible_lines("Ge1:1 In the beginning.\n1Sam3:10 And the LORD came\n\nRev22:21 Amen.\n", "t");
  ASSERT_EQ(verses.size(), 3u);
  EXPECT_EQ(verses[0].book, "Ge");
  EXPECT_EQ(verses[0].text, "In the beginning.");
  EXPECT_EQ(verses[1].book, "1Sam");
  EXPECT_EQ(verses[2].text, "Amen.");
  for (const char* bad : {"Ge1:1\n", "Ge1 text\n", "1:1 text\n", "Ge:1 text\n", "Ge1:x text\n", "Cannot open data file"}) {
    const std::string m = test::error_message([&] { parse_bible_lines(bad, "prog"); });
    EXPECT_NE(m.find("prog: line 1 is not a verse"), std::string::npos) << bad << ": " << m;
  }
}

// Twelve one-verse books: book 8 (0-based) is validation, book 9 test.
std::vector<Verse> twelve_books() {
  std::vector<Verse> v;
  for (char b = 'a'; b < 'a' + 12; ++b) v.push_back({std::string{'B', b}, "The LORD's word, the word;"});
  v[8].text = "Held-out validation";
  v[9].text = "Test the";
  return v;
}

TEST(BibleCorpus, SplitsByBookAndMakesAVocabularyOfTheTrainingBooks) {
  EXPECT_EQ(bible_part(0), BiblePart::Train);
  EXPECT_EQ(bible_part(18), BiblePart::Validation);
  EXPECT_EQ(bible_part(59), BiblePart::Test);
  const TokenCorpus words = tokenize_bible(twelve_books(), 10, false);
  // the (20), word (20), lord's (10): <eos> 0, <unk> 1, then by count, ties alphabetically.
  ASSERT_EQ(words.vocabulary, (std::vector<std::string>{"<eos>", "<unk>", "the", "word", "lord's"}));
  EXPECT_EQ(words.train.size(), 10u * 6);
  EXPECT_EQ(std::vector<int32_t>(words.train.begin(), words.train.begin() + 6),
            (std::vector<int32_t>{2, 4, 3, 2, 3, 0}));
  EXPECT_EQ(words.validation, (std::vector<int32_t>{1, 1, 1, 0}));  // held, out, validation: unknown
  EXPECT_EQ(words.test, (std::vector<int32_t>{1, 2, 0}));
  const TokenCorpus fewer = tokenize_bible(twelve_books(), 4, false);
  EXPECT_EQ(fewer.vocabulary.size(), 4u);
  EXPECT_EQ(fewer.train[1], 1);  // lord's is out of a vocabulary of 4

  const TokenCorpus chars = tokenize_bible(twelve_books(), 10, true);
  EXPECT_EQ(chars.vocabulary.front(), "<unk>");
  EXPECT_EQ(chars.train.size(), 10u * (std::string("The LORD's word, the word;").size() + 1));
  EXPECT_EQ(chars.train[26], chars.train[2 * 27 - 1]);  // the newline ending each verse
  EXPECT_EQ(chars.validation[0], 0);  // 'H' is in no training book: <unk>
  EXPECT_NE(chars.validation[1], 0);  // 'e' is
}

TEST(BibleCorpus, AWrongProgramIsOneLine) {
  test::ScratchDir dir;
  auto script = [&](const std::string& name, const std::string& body) {
    const std::string path = dir.file(name);
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path;
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {dir.file("none"), "no such program; install Debian's bible-kjv"},
      {dir.path().string(), "not an executable file"},
      {script("fails", "echo Cannot open data file bible.data; exit 255"),
       "failed (exit status 255): Cannot open data file bible.data; install Debian's bible-kjv"},
      {script("prose", "echo hello"), "line 1 is not a verse"},
      {script("short", "echo 'Ge1:1 In the beginning.'"), "printed 1 verses of 1 books"},
      {script("floods", "yes 'Ge1:1 In the beginning.'"), "printed more than 16 MiB"},
  };
  for (const auto& [program, expected] : cases) {
    BibleOptions o;
    o.program = program;
    const std::string m = test::error_message([&] { o.load(); });
    EXPECT_NE(m.find(expected), std::string::npos) << program << ": " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  BibleOptions o;
  o.program = dir.file("none");
  Problems problems;
  o.check("data.", problems);
  EXPECT_NE(problems.joined().find("data.program"), std::string::npos) << problems.joined();
}

TEST(BibleCorpus, TheWholeTextFromDebiansPackage) {
  if (!std::filesystem::exists(kDefaultBibleProgram)) GTEST_SKIP() << "bible-kjv not installed";
  BibleOptions o;
  const LoadedData words = o.load();
  EXPECT_TRUE(words.train.stream());
  EXPECT_EQ(words.train.num_classes(), 10000);
  // wc counts 820,736 words in the program's output, 31,102 of them the verses'
  // references: the text has 789,634, and each verse an <eos>.
  const size_t train = words.train.stream_tokens() + 1, held = words.test.stream_tokens() + 1;
  o.held_out = HeldOutBooks::Test;
  const size_t test = o.load().test.stream_tokens() + 1;
  EXPECT_GT(train, 600'000u);
  EXPECT_GT(held, 40'000u);
  EXPECT_GT(test, 40'000u);
  EXPECT_NEAR(static_cast<double>(train + held + test), 789'634.0 + 31'102.0, 0.001 * 820'736);
  o.characters = true;
  const LoadedData chars = o.load();
  EXPECT_LT(chars.train.num_classes(), 100);
  EXPECT_GT(chars.train.stream_tokens(), 3'000'000u);
}

}  // namespace
}  // namespace ptrain
