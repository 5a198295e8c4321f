#pragma once
// The word-level LSTM language model (--model lstm), as the standard word
// language-model recipe builds it: an embedding, L LSTM layers, dropout, a
// linear decoder (optionally sharing the embedding's weights), trained by
// truncated back-propagation through time over `bptt` tokens with the state
// carried from batch to batch along each row's stream. Torch-free, so that
// the plan can name it; make() lives in model/torch/lstm_model.cpp.
#include <cstdint>
#include <memory>
#include <string_view>

#include "core/fields.hpp"
#include "core/model.hpp"
#include "model/model_input.hpp"
#include "model/model_script.hpp"

namespace ptrain {

struct LstmOptions {
  static constexpr std::string_view name = "lstm";
  static constexpr std::string_view summary =
      "LSTM language model: embedding, LSTM layers, dropout, decoder; state carried along the stream (LibTorch)";
  int64_t embedding_size = 200;
  int64_t hidden_size = 200;
  int layers = 2;
  int bptt = 35;
  double dropout = 0.2;
  bool tie = false;
  template <class Self, class Visit>
  static void fields(Self& s, Visit&& visit) {
    visit("embedding_size", s.embedding_size, "embedding width", Range::at_least(1));
    visit("hidden_size", s.hidden_size, "hidden width of each LSTM layer", Range::at_least(1));
    visit("layers", s.layers, "LSTM layers", Range::between(1, 16));
    visit("bptt", s.bptt, "tokens per step: a token stream is cut into pieces this long", Range::at_least(1));
    visit("dropout", s.dropout, "dropout after the embedding and after each LSTM layer", Range::unit_interval());
    visit("tie", s.tie, "the decoder shares the embedding's weights (needs embedding_size = hidden_size)", Range{});
  }
  std::unique_ptr<Model> make(const ModelInput& input) const;
  // Its forward from a zero state over sequences of any length, the state
  // carried through each (evaluation: no dropout).
  ModelScript script(const ModelInput& input) const;
  // The parameters make() would allocate, known before anything is.
  double parameters(const ModelInput& input) const;
  static constexpr const char* size_field = "hidden_size";
  // A token stream is cut into samples of this many tokens for it.
  size_t sequence_length() const { return static_cast<size_t>(bptt); }
  static constexpr const char* sequence_field = "bptt";
};

}  // namespace ptrain
