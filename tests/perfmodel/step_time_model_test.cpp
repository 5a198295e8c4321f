// The step-time model against cases worked out by hand (alpha-beta: 50 us a
// message, 1 Gbit/s = 1.25e8 bytes/s a link; 1e6 parameters = 4e6 bytes).
#include "perfmodel/step_time_model.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <limits>

#include "compress/codec_registry.hpp"
#include "compress/pull_codec_registry.hpp"
#include "perfmodel/calibration.hpp"
#include "perfmodel/codec_costs.hpp"
#include "test_support.hpp"

namespace ptrain {
namespace {

StepModelConfig hand_case(ExchangeKind exchange) {
  StepModelConfig c;
  c.parameters = 1e6;
  c.compute_per_sample_s = 1e-3;
  c.batch = 32;
  c.bandwidth_bits_s = 1e9;
  c.latency_s = 50e-6;
  c.exchange = exchange;
  return c;
}

TEST(StepTimeModel, RingAllreduce) {
  const auto c = hand_case(ExchangeKind::RingAllreduce);
  EXPECT_DOUBLE_EQ(exchange_seconds(c, 1), 0);
  // 2 (N - 1) (alpha + M / (N beta)) = 6 (5e-5 + 4e6 / 4 / 1.25e8) = 0.0483
  EXPECT_NEAR(exchange_seconds(c, 4), 0.0483, 1e-12);
}

TEST(StepTimeModel, PipelineFlowsInSlotsThenAllReducesEachStageAmongThePipelines) {
  auto c = hand_case(ExchangeKind::Pipeline);
  c.stages = 4;
  c.microbatches = 8;
  c.activation_bytes_per_sample = 0;
  c.latency_s = 0;
  // Free messages: M + S - 1 = 11 slots of a stage's share of a micro-batch,
  // 4 rows x 1 ms / 4 stages; each stage computes in 8 of them.
  const StepPrediction one = predict_step(c, 4);
  EXPECT_NEAR(one.compute_s, 8e-3, 1e-12);
  EXPECT_NEAR(one.step_s, 11e-3, 1e-12);
  EXPECT_NEAR(one.samples_per_s, 32 / one.step_s, 1e-9);
  EXPECT_NEAR(one.bubble_fraction, 3.0 / 11, 1e-12);
  // Two pipelines: each stage's quarter of the parameters by ring of 2,
  // 2 (5e-5 + 1e6 / 4 x 4 / 2 / 1.25e8) = 0.0081 after the flow; twice the samples.
  c.latency_s = 50e-6;
  const StepPrediction two = predict_step(c, 8);
  EXPECT_NEAR(two.step_s, predict_step(c, 4).step_s + 0.0081, 1e-12);
  EXPECT_NEAR(two.samples_per_s, 64 / two.step_s, 1e-9);
  // Activations cost each slot their trips there and back (4 rows x 1000
  // bytes, eager: under the limit).
  c.activation_bytes_per_sample = 1000;
  const StepPrediction sent = predict_step(c, 4);
  EXPECT_GT(sent.step_s, 11e-3 + 2 * 3 * (50e-6 + 3.2e-5) - 1e-12);  // the first micro-batch's trip at least
  EXPECT_LT(sent.step_s, 11 * (1e-3 + 2 * (50e-6 + 3.2e-5)));
  EXPECT_DOUBLE_EQ(sent.boundary_bytes, 2 * 32 * 1000);
  // The eager limit counts the message's header too: 4 rows of 16,384 bytes
  // (64 KiB) wait for their receiver, 4 of 16,370 (65,480 bytes) do not.
  // The slots' order keeps every receiver waiting, so a waiting sender shows.
  {
    auto edge = c;
    edge.eager_limit_bytes = 65536;
    edge.activation_bytes_per_sample = 16370;
    const double eager = predict_step(edge, 4).step_s;
    edge.eager_limit_bytes = 1e9;
    EXPECT_DOUBLE_EQ(predict_step(edge, 4).step_s, eager);
    edge.eager_limit_bytes = 0;
    const double rendezvous = predict_step(edge, 4).step_s;
    EXPECT_GT(rendezvous, eager);
    edge.eager_limit_bytes = 65536;
    edge.activation_bytes_per_sample = 16384;
    const double at_limit = predict_step(edge, 4).step_s;
    edge.eager_limit_bytes = 0;
    EXPECT_DOUBLE_EQ(at_limit, predict_step(edge, 4).step_s);
  }
  // A stage twice the others' share sets the pace: 3 of 5 parts of the
  // compute, 4 rows x 1 ms x 2/5 a slot.
  c.activation_bytes_per_sample = 0, c.latency_s = 0;
  c.stage_shares = {1, 2, 1, 1};
  EXPECT_NEAR(predict_step(c, 4).compute_s, 8 * 4e-3 * 2 / 5, 1e-12);
  c.stage_shares = {1, 2};
  EXPECT_NE(test::error_message([&] { predict_step(c, 4); }).find("--stage-shares: 2 shares for 4 stages"),
            std::string::npos);
  c.stage_shares.clear();
  // Each micro-batch's cost beyond its rows: 1e6 / 4 parameters a stage x
  // 1 ns, 8 of them on every stage, on top of the 11 slots.
  c.microbatch_s_per_parameter = 1e-9;
  EXPECT_NEAR(predict_step(c, 4).compute_s, 8e-3 + 8 * 2.5e-4, 1e-12);
  EXPECT_NEAR(predict_step(c, 4).step_s, 11 * (1e-3 + 2.5e-4), 1e-12);
  c.microbatch_s_per_parameter = 0;
  // More micro-batches shrink the bubble.
  c.microbatches = 32;
  EXPECT_NEAR(predict_step(c, 4).bubble_fraction, 3.0 / 35, 1e-12);
  EXPECT_NE(test::error_message([&] { predict_step(c, 6); }).find("6 workers do not make whole pipelines of 4 stages"),
            std::string::npos);
  c.microbatches = 33;
  EXPECT_NE(test::error_message([&] { predict_step(c, 4); }).find("--microbatches must be from 1 to the batch, 32"),
            std::string::npos);
}

TEST(StepTimeModel, HalvingDoublingRoundsLog2Up) {
  const auto c = hand_case(ExchangeKind::HalvingDoubling);
  // 2 log2(4) alpha + 2 (3/4) M / beta = 2e-4 + 0.048
  EXPECT_NEAR(exchange_seconds(c, 4), 0.0482, 1e-12);
  // 5 workers: 3 rounds each way; 2 (4/5) M / beta = 0.0512
  EXPECT_NEAR(exchange_seconds(c, 5), 6 * 50e-6 + 0.0512, 1e-12);
}

TEST(StepTimeModel, SparseAllgatherGrowsWithWorkersAndOvertakesTheRing) {
  auto c = hand_case(ExchangeKind::SparseAllgather);
  c.density = 0.001;  // 1,000 values of 8 bytes: 8,000 bytes a worker
  // (N - 1) (alpha + m / beta) = 3 (5e-5 + 6.4e-5)
  EXPECT_NEAR(exchange_seconds(c, 4), 3 * (50e-6 + 6.4e-5), 1e-12);
  // Without latency the sparse message (8,000 bytes) costs more than the
  // ring's 2 M / N once N > 2 M / m = 1,000.
  c.latency_s = 0;
  auto ring = hand_case(ExchangeKind::RingAllreduce);
  ring.latency_s = 0;
  EXPECT_LT(exchange_seconds(c, 1000), exchange_seconds(ring, 1000) + 1e-9);
  EXPECT_GT(exchange_seconds(c, 1001), exchange_seconds(ring, 1001));
}

TEST(StepTimeModel, ParameterServerIsBoundByTheBusierLink) {
  auto c = hand_case(ExchangeKind::ParameterServer);
  c.servers = 2;
  // push 4e6 + pull 4e6 bytes: a worker's link 0.064 s; a shard's 4 x 8e6 / 2 / 1.25e8 = 0.128 s.
  EXPECT_NEAR(exchange_seconds(c, 4), 2 * 50e-6 + 0.128, 1e-12);
  c.servers = 8;  // now the worker's own link is the bottleneck
  EXPECT_NEAR(exchange_seconds(c, 4), 2 * 50e-6 + 0.064, 1e-12);
  c.bytes_per_value = 2;  // fp16 pushes: 2e6 + 4e6 bytes
  EXPECT_NEAR(exchange_seconds(c, 4), 2 * 50e-6 + 0.048, 1e-12);
  c.pull_bytes_per_value = 1;  // and int8-like pulls: 2e6 + 1e6 bytes
  EXPECT_NEAR(exchange_seconds(c, 4), 2 * 50e-6 + 0.024, 1e-12);
}

TEST(StepTimeModel, PullCodecsCutWhatEachShardsLinkCarriesAWorkerRound) {
  auto c = hand_case(ExchangeKind::AsyncParameterServer);
  c.servers = 2;
  // 4 workers' pushes (4e6 bytes) and fp16 pulls (2e6): 4 x 6e6 / 2 / 1.25e8 = 0.096 s a round.
  c.pull_bytes_per_value = pull_bytes_per_value(Fp16PullOptions{});
  EXPECT_NEAR(shard_round_seconds(c, 4), 0.096, 1e-12);
  // Top-k pulls: 10% of the values as 8-byte pairs, a dense pull every 50: 0.8 x 49/50 + 4/50 bytes a value.
  TopkPullOptions topk;
  EXPECT_NEAR(pull_bytes_per_value(topk), (0.8 * 49 + 4) / 50, 1e-12);
  topk.refresh = 0;
  EXPECT_NEAR(pull_bytes_per_value(topk), 0.8, 1e-12);
  EXPECT_DOUBLE_EQ(pull_bytes_per_value(DensePullOptions{}), 4.0);
}

TEST(StepTimeModel, AsyncParameterServerWaitsForNobodyButTheShardsLinks) {
  auto c = hand_case(ExchangeKind::AsyncParameterServer);
  c.servers = 2;
  // A worker: compute 0.032 s, then its push and pull on its own link, 0.064 s.
  EXPECT_NEAR(exchange_seconds(c, 4), 2 * 50e-6 + 0.064, 1e-12);
  // A shard's link carries 4 pushes and 4 pulls: 4 x 8e6 / 2 / 1.25e8 = 0.128 s a round, more than a worker's step.
  EXPECT_NEAR(shard_round_seconds(c, 4), 0.128, 1e-12);
  EXPECT_NEAR(predict_step(c, 4).step_s, 0.128, 1e-12);
  c.servers = 8;  // now each worker's own compute and link: 0.032 + 0.064
  EXPECT_NEAR(predict_step(c, 4).step_s, 0.032 + 2 * 50e-6 + 0.064, 1e-12);
  // 16 workers on 2 shards: the shards' links bind (0.512 s a round); synchronous servers also wait for the compute.
  c.servers = 2;
  EXPECT_NEAR(predict_step(c, 16).step_s, 0.512, 1e-12);
  auto sync = hand_case(ExchangeKind::ParameterServer);
  sync.servers = 2;
  EXPECT_GT(predict_step(sync, 16).step_s, predict_step(c, 16).step_s);
  // Stragglers slow each worker by its own mean, not by the slowest of N.
  c.straggler_mean = 0.5;
  EXPECT_DOUBLE_EQ(expected_compute_seconds(c, 64), 0.032 * 1.5);
  EXPECT_EQ(shard_round_seconds(sync, 16), 0.0);
  EXPECT_EQ(parse_exchange_kind("ps-async"), ExchangeKind::AsyncParameterServer);
  EXPECT_EQ(to_string(ExchangeKind::AsyncParameterServer), "ps-async");
}

TEST(StepTimeModel, AnUnsummableCodecIsAllGathered) {
  // int8 at 1 byte a value: a ring cannot sum its messages, so each of 4 workers'
  // 1e6 bytes reaches the 3 others, 3 x (50 us + 8 ms), and every worker decodes all 4.
  auto c = hand_case(ExchangeKind::RingAllreduce);
  c.bytes_per_value = 1;
  c.summable = false;
  EXPECT_NEAR(exchange_seconds(c, 4), 3 * (50e-6 + 8e-3), 1e-12);
  c.exchange = ExchangeKind::HalvingDoubling;
  EXPECT_NEAR(exchange_seconds(c, 4), 3 * (50e-6 + 8e-3), 1e-12);
  EXPECT_EQ(exchange_seconds(c, 1), 0.0);
  c.encode_s_per_value = 2e-9;
  c.decode_s_per_value = 1e-9;
  EXPECT_NEAR(codec_seconds(c, 4), 1e6 * (2e-9 + 4 * 1e-9), 1e-12);
  // Which codecs the model sums: as the communicator does (Codec::summable_as_half).
  EXPECT_TRUE(summed_on_the_wire(*CodecRegistry::make("none")));
  EXPECT_TRUE(summed_on_the_wire(*CodecRegistry::make("fp16")));
  EXPECT_FALSE(summed_on_the_wire(*CodecRegistry::make("int8")));
  EXPECT_FALSE(summed_on_the_wire(*CodecRegistry::make("dgc")));
  for (const char* name : {"fp16", "int8", "topk", "dgc"}) {
    const auto codec = make_codec({*CodecRegistry::make(name)}, CodecRange{1000, {}}, 0);
    EXPECT_EQ(codec->summable_as_half(), summed_on_the_wire(*CodecRegistry::make(name))) << name;
  }
}

TEST(StepTimeModel, StragglersAndBackupWorkersByOrderStatistics) {
  auto c = hand_case(ExchangeKind::RingAllreduce);
  EXPECT_DOUBLE_EQ(expected_compute_seconds(c, 4), 0.032);
  c.straggler_mean = 0.5;
  // Waiting for all 4: E[max] = 0.5 (1/4 + 1/3 + 1/2 + 1).
  EXPECT_NEAR(expected_compute_seconds(c, 4), 0.032 * (1 + 0.5 * (0.25 + 1.0 / 3 + 0.5 + 1)), 1e-12);
  c.backup = 1;  // the 3 fastest
  EXPECT_NEAR(expected_compute_seconds(c, 4), 0.032 * (1 + 0.5 * (0.25 + 1.0 / 3 + 0.5)), 1e-12);
}

TEST(StepTimeModel, OverlapHidesTheExchangeBehindBackward) {
  auto c = hand_case(ExchangeKind::RingAllreduce);
  StepPrediction p = predict_step(c, 4);
  EXPECT_NEAR(p.step_s, 0.032 + 0.0483, 1e-12);
  EXPECT_NEAR(p.samples_per_s, 4 * 32 / p.step_s, 1e-9);
  EXPECT_NEAR(p.efficiency, 0.032 / p.step_s, 1e-12);
  c.overlap = true;  // forward 1/3 of 0.032, then the longer of backward (2/3) and the exchange
  EXPECT_NEAR(predict_step(c, 4).step_s, 0.032 / 3 + 0.0483, 1e-12);
  // Without a core to spare for the communication thread nothing is hidden;
  // with half a spare core, half of min(backward, exchange).
  c.cores_per_rank = 1;
  EXPECT_NEAR(predict_step(c, 4).step_s, 0.032 + 0.0483, 1e-12);
  c.cores_per_rank = 1.5;
  EXPECT_NEAR(predict_step(c, 4).step_s, 0.032 + 0.0483 - 0.5 * (0.032 * 2 / 3), 1e-12);
  c.cores_per_rank = 2;
  c.bandwidth_bits_s = 100e9;  // the exchange is now shorter than backward: it is hidden
  EXPECT_NEAR(predict_step(c, 4).step_s, 0.032, 1e-12);
  const StepPrediction one = predict_step(c, 1);
  EXPECT_DOUBLE_EQ(one.efficiency, 1);
  EXPECT_DOUBLE_EQ(one.samples_per_s, 1000);
}

TEST(StepTimeModel, CodecCpuTimeByExchange) {
  // 1e6 values, encode 2 ns and decode 1 ns a value, 4 workers.
  auto c = hand_case(ExchangeKind::RingAllreduce);
  c.encode_s_per_value = 2e-9;
  c.decode_s_per_value = 1e-9;
  // fp16 in a ring: encode P, decode-add-encode 3/4 P while reducing, decode P: 3 ns x 1.75 x 1e6.
  EXPECT_NEAR(codec_seconds(c, 4), 5.25e-3, 1e-12);
  c.cores_per_rank = 0.5;  // two ranks on a core: twice the wall time
  EXPECT_NEAR(codec_seconds(c, 4), 10.5e-3, 1e-12);
  c.cores_per_rank = 1;
  EXPECT_NEAR(codec_seconds(c, 4), 5.25e-3, 1e-12);  // a core of its own: as measured on one
  c.exchange = ExchangeKind::SparseAllgather;  // encode P, decode 4 parts over the dense range
  EXPECT_NEAR(codec_seconds(c, 4), 1e6 * (2e-9 + 4 * 1e-9), 1e-12);
  c.exchange = ExchangeKind::ParameterServer;  // the worker encodes its push
  EXPECT_NEAR(codec_seconds(c, 4), 2e-3, 1e-12);
  // The step adds it to compute and exchange: 32 ms + 4 x (50 us + 64 us) + 6 ms.
  c.exchange = ExchangeKind::SparseAllgather;
  c.density = 0.001;
  EXPECT_NEAR(predict_step(c, 4).step_s, 0.032 + 3 * (50e-6 + 6.4e-5) + 6e-3, 1e-12);
  // One worker exchanges nothing, so it encodes nothing.
  EXPECT_EQ(predict_step(c, 1).codec_s, 0);
}

// 4 hosts x 2 threads: within a host (3T - 1) M = 5 x 4e6 bytes at 10 GB/s;
// between hosts the ring over 4: 2 x 3 latencies and 2 (3/4) M on each link.
TEST(StepTimeModel, HierarchicalIsAMemoryStageAndARingBetweenHosts) {
  auto c = hand_case(ExchangeKind::Hierarchical);
  c.local_workers = 2;
  c.memory_bytes_s = 10e9;
  EXPECT_NEAR(exchange_seconds(c, 8), 5 * 4e6 / 10e9 + 6 * 50e-6 + 1.5 * 4e6 / 1.25e8, 1e-12);
  // One host: the memory stage alone; one thread a host: the ring.
  EXPECT_NEAR(exchange_seconds(c, 2), 5 * 4e6 / 10e9, 1e-12);
  c.local_workers = 1;
  EXPECT_NEAR(exchange_seconds(c, 4), exchange_seconds(hand_case(ExchangeKind::RingAllreduce), 4), 1e-12);
  // Against the flat ring over the same 8 workers, the link carries 2 (H-1)/H
  // of the buffer instead of 2 (N-1)/N: 1.5 M against 1.75 M.
  c.local_workers = 2;
  c.latency_s = 0;
  c.memory_bytes_s = 1e30;
  auto flat = hand_case(ExchangeKind::RingAllreduce);
  flat.latency_s = 0;
  EXPECT_NEAR(exchange_seconds(flat, 8) / exchange_seconds(c, 8), 1.75 / 1.5, 1e-9);
  EXPECT_NEAR(exchange_seconds(flat, 4) / exchange_seconds(c, 4), 1.5 / 1.0, 1e-9);  // 2 hosts x 2
  // Hosts that the workers do not fill: 5 workers of 2 a host are 3 hosts.
  EXPECT_NEAR(exchange_seconds(c, 5), 2 * (2.0 / 3) * 4e6 / 1.25e8, 1e-12);
}

TEST(CodecCosts, TakesTheRowNearestTheModelSize) {
  test::ScratchDir dir;
  const std::string path = dir.file("compress.csv");
  std::ofstream(path) << "codec,elements,encode_seconds,encode_gbps,decode_seconds,decode_gbps,wire_bytes,dense_bytes\n"
                         "fp16,1048576,0.001048576,4,0.000524288,8,2097152,4194304\n"
                         "fp16,16777216,0.033554432,2,0.016777216,4,33554432,67108864\n"
                         "dgc,16777216,0.016777216,4,0.000016777216,4000,134224,67108864\n"
                         "nth_element,16777216,0.16777216,0.4,,,134216,67108864\n";
  CodecCost fp16 = load_codec_cost(path, "fp16", 2e6);  // nearer 1M than 16M (in log)
  EXPECT_EQ(fp16.elements, 1048576);
  EXPECT_NEAR(fp16.encode_s_per_value, 1e-9, 1e-18);
  EXPECT_NEAR(fp16.decode_s_per_value, 0.5e-9, 1e-18);
  fp16 = load_codec_cost(path, "fp16", 18e6);
  EXPECT_NEAR(fp16.encode_s_per_value, 2e-9, 1e-18);
  EXPECT_NEAR(load_codec_cost(path, "dgc", 18e6).decode_s_per_value, 1e-12, 1e-21);
  EXPECT_EQ(test::error_message([&] { load_codec_cost(path, "topk", 1e6); }),
            "--codec-costs " + path + ": no row for codec 'topk'");
  EXPECT_EQ(test::error_message([&] { load_codec_cost(dir.file("none.csv"), "fp16", 1e6); }),
            "--codec-costs " + dir.file("none.csv") + ": no such file");
  const std::string bad = dir.file("bad.csv"), other = dir.file("other.csv");
  std::ofstream(bad) << "codec,elements,encode_seconds,decode_seconds\nfp16,1024,fast,0.1\n";
  EXPECT_EQ(test::error_message([&] { load_codec_cost(bad, "fp16", 1e6); }),
            "--codec-costs " + bad + ": line 2: 'fast' is not a positive number");
  std::ofstream(other) << "rate,configuration\n";
  EXPECT_NE(test::error_message([&] { load_codec_cost(other, "fp16", 1e6); }).find("no 'codec' column"),
            std::string::npos);
}

TEST(StepTimeModel, RejectsImpossibleInputs) {
  auto c = hand_case(ExchangeKind::RingAllreduce);
  c.parameters = 0;
  EXPECT_EQ(test::error_message([&] { predict_step(c, 2); }), "--parameters must be > 0 and at most 1e+15 (got 0)");
  c.parameters = 1e300;  // every figure the model computes stays finite
  EXPECT_EQ(test::error_message([&] { predict_step(c, 2); }),
            "--parameters must be > 0 and at most 1e+15 (got 1e+300)");
  c = hand_case(ExchangeKind::RingAllreduce);
  c.latency_s = std::numeric_limits<double>::infinity();
  EXPECT_EQ(test::error_message([&] { predict_step(c, 2); }), "--latency must be >= 0 and at most 1e6 s (got inf s)");
  c = hand_case(ExchangeKind::SparseAllgather);
  c.density = 2;
  EXPECT_EQ(test::error_message([&] { predict_step(c, 2); }), "--density must be in (0, 1] (got 2)");
  c = hand_case(ExchangeKind::RingAllreduce);
  c.cores_per_rank = 0;
  EXPECT_EQ(test::error_message([&] { predict_step(c, 2); }), "--cores-per-rank must be > 0 (got 0)");
  EXPECT_EQ(test::error_message([] { parse_exchange_kind("tree"); }),
            "--exchange: unknown exchange 'tree' (choose ring, hd, allgather, ps, ps-async, hierarchical or pipeline)");
  c = hand_case(ExchangeKind::Hierarchical);
  c.memory_bytes_s = 0;
  EXPECT_EQ(test::error_message([&] { predict_step(c, 2); }), "--memory-bandwidth must be > 0 and at most 1e6 GB/s (got 0 GB/s)");
}

TEST(Calibration, ComputeIsTheMeasuredStepLessTheModelledExchange) {
  test::ScratchDir dir;
  const std::string path = dir.file("run.json");
  std::ofstream(path) << R"({"run": {"parameters": 1000000, "workers": 4}, "plan": {"run": {"batch": 32}},
                             "summary": {"mean_step_ms": 80.3}})";
  const Calibration c = calibrate_from_report(path, hand_case(ExchangeKind::RingAllreduce));
  EXPECT_EQ(c.workers, 4u);
  EXPECT_EQ(c.batch, 32u);
  EXPECT_NEAR(c.compute_per_sample_s, (0.0803 - 0.0483) / 32, 1e-12);
  // The calibrated model gives the measured step back.
  auto m = hand_case(ExchangeKind::RingAllreduce);
  m.compute_per_sample_s = c.compute_per_sample_s;
  EXPECT_NEAR(predict_step(m, 4).step_s, 0.0803, 1e-12);
}

// A hierarchical run's report says how many threads a rank ran: its exchange is modelled with them.
TEST(Calibration, AHierarchicalRunIsModelledWithItsOwnThreadsPerRank) {
  test::ScratchDir dir;
  const std::string path = dir.file("run.json");
  std::ofstream(path) << R"({"run": {"parameters": 1000000, "workers": 8},
                             "plan": {"run": {"batch": 32, "local_workers": 2}}, "summary": {"mean_step_ms": 80}})";
  auto model = hand_case(ExchangeKind::Hierarchical);
  model.memory_bytes_s = 10e9;
  auto ran = model;
  ran.local_workers = 2;
  const Calibration c = calibrate_from_report(path, model);
  EXPECT_NEAR(c.compute_per_sample_s, (0.080 - exchange_seconds(ran, 8)) / 32, 1e-12);
}

TEST(Calibration, NamesTheReportWhenItCannotBeUsed) {
  test::ScratchDir dir;
  const std::string bad = dir.file("bad.json"), slow = dir.file("slow.json");
  std::ofstream(bad) << R"({"run": {"workers": 4}})";
  std::ofstream(slow) << R"({"run": {"parameters": 1000000, "workers": 4}, "plan": {"run": {"batch": 32}},
                             "summary": {"mean_step_ms": 10}})";
  const auto model = hand_case(ExchangeKind::RingAllreduce);
  EXPECT_NE(test::error_message([&] { calibrate_from_report(bad, model); }).find("--calibrate " + bad + ": not a ptrain run report"),
            std::string::npos);
  EXPECT_NE(test::error_message([&] { calibrate_from_report(slow, model); }).find("is not longer than the modelled exchange"),
            std::string::npos);
  EXPECT_EQ(test::error_message([&] { calibrate_from_report(dir.file("none.json"), model); }),
            "--calibrate " + dir.file("none.json") + ": no such file");
}

}  // namespace
}  // namespace ptrain
