// The LSTM language model: its state carried along each row's stream from
// batch to batch (and not across a row that jumps), its state through
// checkpoint records, its own dropout generator, and training through run()
// on a token stream, where a killed run resumes to the bits of one never
// interrupted.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "data/sharded_sampler.hpp"
#include "model/model_registry.hpp"
#include "model/saved_model.hpp"
#include "run/resume.hpp"
#include "run/run.hpp"
#include "run/run_fixtures.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

constexpr int kVocabulary = 12;

// A stream with structure worth remembering: runs of a token repeated a
// random number of times, the next token of a run depending on the last.
std::vector<int32_t> stream_tokens(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> tokens;
  int32_t t = 1;
  while (tokens.size() < n) {
    const size_t run = 1 + rng.below(4);
    for (size_t k = 0; k < run && tokens.size() < n; ++k) tokens.push_back(t);
    t = static_cast<int32_t>((t * 5 + 1 + rng.below(2)) % kVocabulary);
  }
  return tokens;
}

LstmOptions small_lstm(double dropout = 0) {
  LstmOptions o;
  o.embedding_size = 16;
  o.hidden_size = 16;
  o.layers = 2;
  o.bptt = 8;
  o.dropout = dropout;
  return o;
}

std::unique_ptr<Model> make_lstm(const LstmOptions& o, uint64_t seed = 3) {
  return o.make(ModelInput{{o.bptt}, kVocabulary, {o.bptt}, seed});
}

Batch batch_of(const Dataset& data, std::vector<size_t> indices) {
  Batch b;
  b.gather(data, indices);
  return b;
}

TEST(LstmModel, CarriesEachRowsStateToThePieceThatFollows) {
  const Dataset stream = Dataset::token_stream("s", stream_tokens(400, 1), kVocabulary);
  const LstmOptions o = small_lstm();
  const Dataset pieces = stream.chunked(8), doubled = stream.chunked(16);
  // Rows 0 and 1 of pieces {0, 1} and {10, 11}, two batches; against one
  // batch of the doubled pieces 0 and 5, the same tokens from a zero state.
  auto carried = make_lstm(o);
  const float first = carried->forward_backward(batch_of(pieces, {0, 10}));
  const float second = carried->forward_backward(batch_of(pieces, {1, 11}));
  auto whole = make_lstm(o);
  const float both = whole->forward_backward(batch_of(doubled, {0, 5}));
  EXPECT_NEAR((first + second) / 2, both, 1e-5);

  // A row that jumps (piece 3 after piece 1) starts from zeros: as a fresh model.
  const float jumped = carried->forward_backward(batch_of(pieces, {3, 12}));
  auto fresh = make_lstm(o);
  const float row0_fresh = fresh->forward_backward(batch_of(pieces, {3, 12}));
  EXPECT_NE(jumped, row0_fresh);  // row 1 (12 after 11) kept its state
  auto both_fresh = make_lstm(o);
  both_fresh->forward_backward(batch_of(pieces, {1, 11}));
  EXPECT_EQ(both_fresh->forward_backward(batch_of(pieces, {5, 7})),
            make_lstm(o)->forward_backward(batch_of(pieces, {5, 7})));

  // Samples that are not a stream never carry anything.
  const Dataset samples = make_token_sequences(20, 8, kVocabulary, 2);
  auto independent = make_lstm(o);
  independent->forward_backward(batch_of(samples, {0, 1}));
  EXPECT_EQ(independent->forward_backward(batch_of(samples, {1, 2})),
            make_lstm(o)->forward_backward(batch_of(samples, {1, 2})));
}

TEST(LstmModel, ItsStateAndDropoutGeneratorTravelThroughCheckpointRecords) {
  const Dataset pieces = Dataset::token_stream("s", stream_tokens(400, 4), kVocabulary).chunked(8);
  const LstmOptions o = small_lstm(0.5);
  auto a = make_lstm(o);
  a->forward_backward(batch_of(pieces, {0, 20}));
  StateWriter out;
  a->save_state(out);
  const float next = a->forward_backward(batch_of(pieces, {1, 21}));
  const std::vector<float> grads(a->grads().begin(), a->grads().end());

  auto b = make_lstm(o);
  StateReader in(out.bytes(), "test");
  b->load_state(in);
  in.expect_end();
  EXPECT_EQ(b->forward_backward(batch_of(pieces, {1, 21})), next);
  EXPECT_TRUE(std::equal(grads.begin(), grads.end(), b->grads().begin()));

  // Dropout draws the same masks for the same seed, whatever else runs.
  EXPECT_EQ(make_lstm(o, 9)->forward_backward(batch_of(pieces, {2, 3})),
            make_lstm(o, 9)->forward_backward(batch_of(pieces, {2, 3})));
  EXPECT_NE(make_lstm(o, 9)->forward_backward(batch_of(pieces, {2, 3})),
            make_lstm(small_lstm(0), 9)->forward_backward(batch_of(pieces, {2, 3})));

  // Records of another shape are refused, naming the record.
  LstmOptions one_layer = o;
  one_layer.layers = 1;
  auto c = make_lstm(one_layer);
  StateWriter two;
  a->save_state(two);
  StateReader wrong(two.bytes(), "part 0");
  const std::string message = test::error_message([&] {
    c->load_state(wrong);
    wrong.expect_end();
  });
  EXPECT_NE(message.find("part 0"), std::string::npos) << message;
}

TEST(LstmModel, TyingSharesTheEmbeddingAndIsRefusedForOtherWidths) {
  LstmOptions o = small_lstm();
  const size_t untied = make_lstm(o)->params().size();
  o.tie = true;
  EXPECT_EQ(make_lstm(o)->params().size(), untied - kVocabulary * 16);
  EXPECT_EQ(static_cast<double>(make_lstm(o)->params().size()),
            o.parameters(ModelInput{{8}, kVocabulary, {8}, 0}));
  o.hidden_size = 24;
  EXPECT_NE(test::error_message([&] { make_lstm(o); }).find("needs embedding_size = hidden_size (here 16 and 24)"),
            std::string::npos);
  EXPECT_NE(test::error_message([&] { small_lstm().make(ModelInput{{1, 28, 28}, 10, {}, 0}); })
                .find("model lstm: a language model needs token sequences"),
            std::string::npos);
}

// Saved (--save), the model scores a stream as the trained one did: the
// file's forward from a zero state over whole rows is the trained model's
// pieces with the state carried through them.
TEST(LstmModel, ASavedModelScoresAStreamAsTheTrainedModelDid) {
  test::ScratchDir dir;
  const Dataset stream = Dataset::token_stream("s", stream_tokens(700, 6), kVocabulary);
  for (const bool tie : {false, true}) {
    LstmOptions o = small_lstm(0.3);
    o.tie = tie;
    const ModelInput input{{o.bptt}, kVocabulary, {o.bptt}, 3};
    const ModelChoice choice = o;
    auto replica = make_model(choice, input);
    std::vector<float> params(replica->params().begin(), replica->params().end());
    for (size_t i = 0; i < params.size(); ++i) params[i] += 0.01f * static_cast<float>(i % 5) - 0.02f;
    std::copy(params.begin(), params.end(), replica->params().begin());
    SavedModelFacts facts;
    facts.ptrain_version = "test";
    facts.input_shape = {o.bptt};
    facts.label_shape = {o.bptt};
    facts.classes = kVocabulary;
    const std::string path = dir.file(tie ? "tied.pt" : "lstm.pt");
    save_model_file(path, choice, input, params, facts, "{}", "test");

    SavedModel saved = load_saved_model(path);
    EXPECT_TRUE(saved.facts.recurrent);
    EXPECT_EQ(saved.facts.model, "lstm");
    const Dataset rows = stream.as_evaluation_rows(8);
    ASSERT_EQ(rows.size(), 10u);  // 699 tokens: 87 pieces of 8, 10 rows of 8 pieces
    EXPECT_EQ(rows.sample_shape(), std::vector<int64_t>{64});
    const Metrics trained = replica->evaluate(stream.chunked(8));
    const Metrics loaded = saved.model->evaluate(rows);
    EXPECT_EQ(loaded.targets, trained.targets);
    EXPECT_NEAR(loaded.loss, trained.loss, 1e-6 * trained.loss) << tie;
    EXPECT_NEAR(loaded.accuracy, trained.accuracy, 2.0 / static_cast<double>(trained.targets)) << tie;
    EXPECT_GT(trained.perplexity, 1.0);
  }
}

RunPlan lstm_plan() {
  RunPlan plan;
  plan.model = small_lstm(0.1);
  plan.optimizer = AdamOptions{.lr = 0.01f};
  plan.data_controls.standardize = false;
  plan.run.workers = 2;
  plan.run.batch = 4;
  plan.run.epochs = 3;
  plan.run.placement = Placement::None;
  plan.run.comm_timeout = 30;
  plan.run.seed = 5;
  return plan;
}

LoadedData stream_data() {
  return {Dataset::token_stream("train", stream_tokens(3000, 7), kVocabulary),
          Dataset::token_stream("test", stream_tokens(600, 8), kVocabulary)};
}

RunResult run_lstm(const RunPlan& plan, const std::string& resume = {}, decltype(RunInputs::model) model = {}) {
  World world = make_world(plan);
  RunInputs inputs;
  inputs.data = stream_data();
  inputs.resume = resume;
  inputs.model = std::move(model);
  return run(plan, world, {}, inputs);
}

TEST(LstmModel, LearnsAStreamThroughRunAndTwoWorkersAreOneWithTheirRows) {
  RunPlan plan = lstm_plan();
  plan.model = small_lstm(0);
  const RunResult two = run_lstm(plan);
  ASSERT_EQ(two.task, Task::LanguageModel);
  ASSERT_EQ(two.epochs.size(), 3u);
  const double first = two.epochs.front().test_perplexity, last = two.epochs.back().test_perplexity;
  EXPECT_LT(last, first);
  EXPECT_LT(last, 4.0) << first;  // a uniform guess is 12
  // Two workers of 4 rows read the rows one worker of 8 reads, and the mean
  // gradient is the same: plain SGD ends within rounding of it.
  plan.optimizer = SgdOptions{.lr = 0.5f};
  plan.run.epochs = 1;
  const RunResult g2 = run_lstm(plan);
  plan.run.workers = 1;
  plan.run.batch = 8;
  const RunResult g1 = run_lstm(plan);
  ASSERT_EQ(g1.final_params.size(), g2.final_params.size());
  ASSERT_EQ(g1.step_losses.size(), g2.step_losses.size());
  for (size_t i = 0; i < g1.final_params.size(); ++i) ASSERT_NEAR(g1.final_params[i], g2.final_params[i], 1e-4) << i;
}

TEST(LstmModel, AKilledRunResumesToTheSameBitsStateIncluded) {
  RunPlan plan = lstm_plan();
  const RunResult whole = run_lstm(plan);
  test::ScratchDir dir;
  plan.run.checkpoint_dir = dir.file("ckpt");
  plan.run.checkpoint_every = Cadence{20, 0};
  std::atomic<bool> armed{true};
  const std::string message = test::error_message([&] {
    run_lstm(plan, {}, [&](const ModelInput& in) -> std::unique_ptr<Model> {
      return std::make_unique<test::FailingModel>(make_model(plan.model, in), 47, &armed);
    });
  });
  EXPECT_NE(message.find("killed for the test"), std::string::npos) << message;
  EXPECT_EQ(newest_checkpoint(plan.run.checkpoint_dir).step, 40u);  // mid-epoch: 46 steps an epoch
  const RunResult resumed = run_lstm(plan, plan.run.checkpoint_dir);
  EXPECT_EQ(resumed.final_params, whole.final_params);
  EXPECT_EQ(resumed.step_losses, whole.step_losses);
  ASSERT_EQ(resumed.epochs.size(), whole.epochs.size());
  EXPECT_EQ(resumed.epochs.back().test_perplexity, whole.epochs.back().test_perplexity);
}

TEST(LstmModel, ABpttLongerThanEachRowsStreamIsRefused) {
  RunPlan plan = lstm_plan();
  auto lstm = small_lstm();
  lstm.bptt = 400;  // 3000 tokens in 8 rows: 374 each
  plan.model = lstm;
  const std::string message = test::error_message([&] { run_lstm(plan); });
  EXPECT_NE(message.find("model.bptt 400: the training stream's 2999 tokens, read as 8 rows (2 workers x batch 4), "
                         "give each row 374, not one piece of 400"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace ptrain
