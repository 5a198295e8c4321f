#pragma once
// The King James Bible as a language-modelling corpus (--data-set bible): its
// text from Debian's bible-kjv (the `bible` program over bible-kjv-text's
// data), 31,102 verses and 790,000 words, close to Penn Treebank's
// size. Books are split into training, validation and test; the book and
// verse labels are dropped; words are lowercased, punctuation dropped, each
// verse ends with <eos>, and words outside the vocabulary (the training
// books' most frequent) become <unk>. At character level the tokens are the
// verses' characters and a newline after each.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/dataset.hpp"
#include "core/fields.hpp"
#include "core/problems.hpp"
#include "data/loaded_data.hpp"

namespace ptrain {

inline constexpr const char* kDefaultBibleProgram = "/usr/bin/bible";

// The books a run scores.
enum class HeldOutBooks { Validation, Test };
template <>
struct EnumText<HeldOutBooks> {
  static constexpr std::array<std::string_view, 2> names = {"validation", "test"};
};

struct BibleOptions {
  static constexpr std::string_view name = "bible";
  static constexpr std::string_view summary =
      "the King James Bible, split by book, as a token stream for language models (model lstm by default; Debian: bible-kjv)";
  static constexpr std::string_view default_model = "lstm";
  std::string program = kDefaultBibleProgram;
  int vocabulary = 10000;
  bool characters = false;
  HeldOutBooks held_out = HeldOutBooks::Validation;
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("program", s.program, "bible-kjv's `bible` program, which prints the text", Range{});
    visit("vocabulary", s.vocabulary,
          "words kept, with <unk> and <eos> (the training books' most frequent); words only", Range::at_least(3));
    visit("characters", s.characters, "characters as tokens instead of words (a quick run)", Range{});
    visit("held_out", s.held_out, "the books a run scores: validation or test", Range{});
  }
  void check(const std::string& prefix, Problems& problems) const;
  // Training books, and the held-out ones: each one token stream (Dataset::token_stream).
  LoadedData load() const;
  void check_test(const std::string& prefix, Problems& problems) const { check(prefix, problems); }
  Dataset load_test() const { return load().test; }
};

// One verse as the program prints it: "Ge1:1 In the beginning ...".
struct Verse {
  std::string book;  // "Ge", "1Sam"
  std::string text;
};

// The program's lines as verses. Throws ptrain::Error naming the line that is not one.
std::vector<Verse> parse_bible_lines(std::string_view text, const std::string& source);

// Which part a book goes to, by its place among the books (0 = Genesis):
// every tenth from the ninth to validation, from the tenth to test.
enum class BiblePart { Train, Validation, Test };
BiblePart bible_part(size_t book_index);

// The corpus as token ids: training, validation and test streams, and the
// vocabulary (id -> token). Words: 0 is <eos>, 1 <unk>, then the training
// books' words by frequency (ties alphabetically), `vocabulary` in all.
// Characters: 0 is <unk>, then the training books' characters by code, the
// newline that ends a verse among them.
struct TokenCorpus {
  std::vector<int32_t> train, validation, test;
  std::vector<std::string> vocabulary;
};
TokenCorpus tokenize_bible(const std::vector<Verse>& verses, int vocabulary, bool characters);

}  // namespace ptrain
