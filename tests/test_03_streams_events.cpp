// test_03_streams_events.cpp: chapter 03 (streams, events, overlap, the cost of waiting).
//
// cpu:     the ideal-bound and efficiency arithmetic and the calibration target, the CPU twin, and
//          flag validation of the lesson and the bench (bad flags exit 2 before any CUDA call;
//          without a GPU both exit 77).
// gpu:     every schedule gives the serial result bit for bit; --drop-wait is caught (FAIL, exit 1)
//          while the normal run passes; a launch returns before the GPU is done; the calibration
//          targets both copies at once; the bench's --trace output.
// pytorch: pytorch_streams.py --quick runs and writes the same JSON fields.
#include "overlap_bound.h"
#include "streams_events.h"

#include "device_buffer.h"
#include "gpu_support.h"
#include "program_checks.h"
#include "run_program.h"

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

using Catch::Approx;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;
using namespace workbook::streams_events;
using namespace workbook::testing;

// ---------------------------------------------------------------- cpu

TEST_CASE("ideal bound: the busiest stage with a copy engine per direction") {
  SECTION("three equal stages overlap into a third of the time") {
    const StageTimes t{2.0, 2.0, 2.0};
    CHECK(ideal_time_ms(t, CopyEngines::kOnePerDirection) == 2.0);
    CHECK(ideal_speedup(t, CopyEngines::kOnePerDirection) == Approx(3.0));
  }
  SECTION("a dominant stage caps the speedup") {
    const StageTimes t{1.0, 4.0, 1.0};
    CHECK(ideal_speedup(t, CopyEngines::kOnePerDirection) == Approx(1.5));
  }
  SECTION("one shared copy engine makes both copies one stage") {
    const StageTimes t{2.0, 2.0, 2.0};
    CHECK(ideal_time_ms(t, CopyEngines::kOneShared) == 4.0);
    CHECK(ideal_speedup(t, CopyEngines::kOneShared) == Approx(1.5));
    CHECK(ideal_speedup(StageTimes{1.0, 5.0, 1.0}, CopyEngines::kOneShared) == Approx(7.0 / 5.0));
  }
  SECTION("the engine count decides which bound applies") {
    CHECK(copy_engines_from_count(0) == CopyEngines::kOneShared);
    CHECK(copy_engines_from_count(1) == CopyEngines::kOneShared);
    CHECK(copy_engines_from_count(2) == CopyEngines::kOnePerDirection);
    CHECK(copy_engines_from_count(3) == CopyEngines::kOnePerDirection);
  }
  SECTION("zero times give zero, not a division by zero") {
    CHECK(ideal_speedup(StageTimes{}, CopyEngines::kOnePerDirection) == 0.0);
    CHECK(overlap_efficiency(2.0, 0.0) == 0.0);
  }
}

TEST_CASE("duplex bound: both copies measured at once replace the copies' alone times") {
  SECTION("a perfect full-duplex link: the same as the stages-alone bound") {
    const StageTimes t{2.0, 2.0, 2.0, 2.0};
    CHECK(duplex_time_ms(t) == 2.0);
    CHECK(duplex_speedup(t) == Approx(ideal_speedup(t, CopyEngines::kOnePerDirection)));
  }
  SECTION("a link that slows when both directions run: the copies set the bound") {
    const StageTimes t{5.0, 5.0, 5.0, 5.5};  // the H200 run: about 10% slower together
    CHECK(duplex_time_ms(t) == 5.5);
    CHECK(duplex_speedup(t) == Approx(15.0 / 5.5));
    CHECK(duplex_speedup(t) < ideal_speedup(t, CopyEngines::kOnePerDirection));
  }
  SECTION("copies that serialise completely: the one-engine bound") {
    const StageTimes t{2.0, 3.0, 2.0, 4.0};
    CHECK(duplex_speedup(t) == Approx(ideal_speedup(t, CopyEngines::kOneShared)));
  }
  SECTION("compute above the copies hides the link's contention") {
    const StageTimes t{5.0, 10.0, 5.0, 5.5};
    CHECK(duplex_speedup(t) == Approx(2.0));
  }
  SECTION("not measured (0): never below a copy alone") {
    CHECK(duplex_time_ms(StageTimes{3.0, 1.0, 2.0}) == 3.0);
  }
}

TEST_CASE("calibration target: the copies' floor, so that the stages-alone bound can be reached") {
  SECTION("the floor is both copies at once, never below either copy alone") {
    CHECK(copy_floor_ms(StageTimes{5.0, 0.0, 4.9, 5.5}) == 5.5);
    CHECK(copy_floor_ms(StageTimes{5.0, 0.0, 4.9, 0.0}) == 5.0);  // not measured
    CHECK(copy_floor_ms(StageTimes{5.0, 9.0, 4.9, 5.5}) == 5.5);  // compute plays no part
  }
  SECTION("compute as long as the slower copy alone: the stages-alone bound promises too much") {
    const StageTimes t{5.0, 5.0, 4.98, 5.56};  // the H200: copies 10% slower when both run
    CHECK(ideal_speedup(t, CopyEngines::kOnePerDirection) > 1.1 * duplex_speedup(t));
  }
  SECTION("compute as long as both copies at once: the two bounds are the same") {
    StageTimes t{5.0, 0.0, 4.98, 5.56};
    t.compute_ms = copy_floor_ms(t);
    CHECK(ideal_speedup(t, CopyEngines::kOnePerDirection) == Approx(duplex_speedup(t)));
    CHECK(ideal_time_ms(t, CopyEngines::kOnePerDirection) == t.compute_ms);
  }
}

TEST_CASE("pipeline floor: fill and drain cost (sum - max) / chunks") {
  const StageTimes t{3.0, 3.0, 3.0};
  CHECK(pipeline_floor_ms(t, 1) == Approx(9.0));            // one chunk cannot overlap at all
  CHECK(pipeline_floor_ms(t, 3) == Approx(3.0 + 6.0 / 3));  // 3 chunks: 5 slots of 1 ms
  CHECK(pipeline_floor_ms(t, 64) == Approx(3.0 + 6.0 / 64));
  CHECK(pipeline_floor_ms(t, 0) == 0.0);
  CHECK(pipeline_floor_ms(StageTimes{3.0, 3.0, 3.0, 4.0}, 5) == Approx(4.0 + 5.0 / 5));
}

TEST_CASE("overlap efficiency is achieved speedup over ideal speedup") {
  const StageTimes t{1.0, 1.0, 1.0};
  const double ideal = ideal_speedup(t, CopyEngines::kOnePerDirection);
  CHECK(overlap_efficiency(3.0, ideal) == Approx(1.0));
  CHECK(overlap_efficiency(2.7, ideal) == Approx(0.9));
  CHECK(overlap_efficiency(1.0, ideal) == Approx(1.0 / 3.0));
}

TEST_CASE("transform_cpu: y <- decay * y + x, one rounding per step") {
  const float x = 0.75f;
  CHECK(transform_cpu(x, 0) == x);
  CHECK(transform_cpu(x, 1) == std::fma(x, kDecay, x));
  CHECK(transform_cpu(x, 2) == std::fma(std::fma(x, kDecay, x), kDecay, x));
  // The fixed point is x / (1 - decay): after many steps the chain approaches it.
  CHECK(transform_cpu(x, 20000) == Approx(x / (1.0 - kDecay)).epsilon(1e-3));
  std::vector<float> in{-1.0f, 0.0f, 0.5f}, out(3);
  transform_cpu(in.data(), out.data(), in.size(), 10);
  for (std::size_t i = 0; i < in.size(); ++i) CHECK(out[i] == transform_cpu(in[i], 10));
}

TEST_CASE("flags: bad values exit 2 with a one-line reason, before any CUDA call") {
  const auto [args, message] = GENERATE(table<std::vector<std::string>, std::string>({
      {{"--streams", "1,0"}, "--streams must be at least 1, got 0"},
      {{"--streams", "65"}, "--streams must be at most 64, got 65"},
      {{"--chunks", "0"}, "--chunks must be at least 1, got 0"},
      {{"--chunk-elements", "0"}, "--chunk-elements must be at least 1, got 0"},
      {{"--iterations", "-1"}, "--iterations must be at least 0, got -1"},
      {{"--repeats", "0"}, "--repeats must be at least 1, got 0"},
      {{"--producer-delay-us", "0"}, "--producer-delay-us must be at least 1, got 0"},
      {{"--chunks", "4096", "--chunk-elements", "1000000"}, "must be at most"},
      {{"--streams", "two"}, "--streams: 'two' is not a whole number"},
      {{"--streams", "1,,2"}, "--streams: '1,,2' has an empty item"},
      {{"--streams", ",1"}, "--streams: ',1' has an empty item"},
      {{"--streams", "1,"}, "--streams: '1,' has an empty item"},
      {{"--streams", ""}, "--streams needs a value, and '' is none"},
      {{"--iterations", ""}, "--iterations needs a value, and '' is none"},
      {{"--chunks="}, "--chunks needs a value, and '' is none"},
      {{"--streams", "2K"}, "--streams: '2K' is not a whole number"},
      {{"--chunk-elements", "1X"}, "--chunk-elements: '1X' is not a size"},
      {{"--chunk-elements", "1G"}, "--chunk-elements must be at most 268435456, got 1000000000"},
      {{"--trace", "t.json"}, "--trace"},  // the trace is the bench's (streams_events_bench)
      {{"--device", "cuda:x"}, "--device must be N, cuda or cuda:N"},
      {{"--no-such-flag"}, "--no-such-flag"},
  }));
  check_one_line(with_args({WORKBOOK_PROGRAM}, args), 2, ContainsSubstring(message));
}

TEST_CASE("bench flags: bad values exit 2 with a one-line reason, before any CUDA call") {
  const auto [args, message] = GENERATE(table<std::vector<std::string>, std::string>({
      {{"--trace-streams", "0"}, "--trace-streams must be at least 1, got 0"},
      {{"--trace-streams", "65"}, "--trace-streams must be at most 64, got 65"},
      {{"--trace", ""}, "--trace needs a value, and '' is none"},
      {{"--trace", "/no/such/folder/t.json"}, "--trace /no/such/folder/t.json: the folder '/no/such/folder' does not exist"},
      {{"--trace", "."}, "--trace .: is a folder; name the file to write"},
      {{"--json", "."}, "--json .: is a folder; name the file to write"},
      {{"--chunks", "0"}, "--chunks must be at least 1, got 0"},
      {{"--chunk-elements", "1X"}, "--chunk-elements: '1X' is not a size"},
      {{"--iterations", "-1"}, "--iterations must be at least 0, got -1"},
      {{"--streams", "2"}, "--streams"},  // the lesson's table of K, not the bench's
      {{"--device", "cuda:x"}, "--device must be N, cuda or cuda:N"},
  }));
  check_one_line(with_args({WORKBOOK_BENCH_PROGRAM}, args), 2, ContainsSubstring(message));
}

TEST_CASE("flags: K and M sizes and every device form are accepted; without a GPU that is exit 77") {
  const auto args = GENERATE(as<std::vector<std::string>>{}, std::vector<std::string>{"--chunk-elements", "64K"},
                             std::vector<std::string>{"--chunk-elements", "1M", "--chunks", "8"},
                             std::vector<std::string>{"--streams", "1,2", "--device", "cuda:0"},
                             std::vector<std::string>{"--device", "cuda"}, std::vector<std::string>{"--device", "3"});
  check_no_gpu(with_args({WORKBOOK_PROGRAM, "--quick"}, args), "streams_events");
}

TEST_CASE("bench flags: without a GPU the bench exits 77 with one line") {
  check_no_gpu({WORKBOOK_BENCH_PROGRAM, "--quick", "--trace-streams", "3", "--chunk-elements", "64K"},
               "streams_events_bench");
}

TEST_CASE("flags: --help exits 0 and names the chapter's flags") {
  const ProgramResult r = run_program({WORKBOOK_PROGRAM, "--help"});
  CHECK(r.exit_code == 0);
  for (const char* flag :
       {"--streams", "--chunks", "--iterations", "--drop-wait", "--producer-delay-us", "--quick", "--json"}) {
    CHECK_THAT(r.out, ContainsSubstring(flag));
  }
  const ProgramResult bench = run_program({WORKBOOK_BENCH_PROGRAM, "--help"});
  CHECK(bench.exit_code == 0);
  for (const char* flag : {"--trace", "--trace-streams", "--chunks", "--iterations", "--quick", "--json"}) {
    CHECK_THAT(bench.out, ContainsSubstring(flag));
  }
}

// ---------------------------------------------------------------- gpu

namespace {

struct GpuBatch {
  workbook::PinnedBuffer<float> h_in, h_out;
  workbook::DeviceBuffer<float> d_in, d_out;
  Batch batch;
  GpuBatch(int chunks, std::size_t chunk_elements, int iterations)
      : h_in(chunks * chunk_elements), h_out(chunks * chunk_elements), d_in(chunks * chunk_elements),
        d_out(chunks * chunk_elements),
        batch{h_in.data(), h_out.data(), d_in.data(), d_out.data(), chunk_elements, chunks, iterations} {
    for (std::size_t i = 0; i < h_in.size(); ++i) h_in.data()[i] = std::sin(0.001f * static_cast<float>(i));
    std::memset(h_out.data(), 0xFF, h_out.bytes());  // NaN: an unwritten element cannot pass
  }
};

}  // namespace

TEST_CASE("every K gives the CPU twin's result bit for bit", "[gpu]") {
  require_gpus(1);
  const int streams = GENERATE(1, 2, 3, 5, 8);
  const int chunks = GENERATE(1, 7, 16);
  const std::size_t chunk_elements = GENERATE(1, 255, 1000);
  CAPTURE(streams, chunks, chunk_elements);
  GpuBatch g(chunks, chunk_elements, 50);
  MultiStreamPipeline pipeline(streams);
  pipeline.enqueue(g.batch);
  CUDA_CHECK(cudaStreamSynchronize(pipeline.origin()));
  std::size_t differ = 0;
  for (std::size_t i = 0; i < g.h_in.size(); ++i) {
    const float want = transform_cpu(g.h_in.data()[i], 50);
    differ += std::memcmp(&g.h_out.data()[i], &want, sizeof(float)) != 0;
  }
  CHECK(differ == 0);
}

TEST_CASE("the article's two streams, event-ordered, match the CPU twin", "[gpu]") {
  require_gpus(1);
  GpuBatch g(6, 4097, 30);
  TwoStreamPipeline article(6);
  article.enqueue(g.batch, Ordering::kEventWait, 200'000);  // a late producer must not matter
  CUDA_CHECK(cudaStreamSynchronize(article.compute()));
  for (std::size_t i = 0; i < g.h_in.size(); i += 97) {
    CAPTURE(i);
    CHECK(g.h_out.data()[i] == transform_cpu(g.h_in.data()[i], 30));
  }
}

TEST_CASE("the program: identical results for every K, ordering check clean, PASS", "[gpu]") {
  const std::string json = temp_path("streams.json");
  const ProgramResult r = run_program({WORKBOOK_PROGRAM, "--quick", "--streams", "1,2,3,4,8", "--json", json});
  skip_if_no_gpu(r);
  INFO(r.out << r.err);
  require_pass(r);
  for (const char* step : {"== 1. every schedule checked", "== 2. the stream is a queue", "== 3. the stages",
                           "== 4. K streams", "== 5. waiting", "== 6. the default stream"}) {
    CHECK_THAT(r.out, ContainsSubstring(step));
  }
  const nlohmann::json j = read_json(json);
  CHECK(j["device"].is_string());
  CHECK(j["quick"] == true);
  CHECK(j["streams"] == std::vector<int>{1, 2, 3, 4, 8});
  CHECK(j["repeats"] == 3);
  REQUIRE(j["pipeline"].size() == 5);
  for (const auto& p : j["pipeline"]) {
    CAPTURE(p["streams"]);
    CHECK(p["bit_identical"] == true);
    CHECK(p["time_ms"]["median"].get<double>() > 0.0);
    CHECK(p["time_ms"]["runs"] == 3);  // one shape for every measured time
  }
  CHECK(j["two_stream"]["time_ms"]["runs"] == 3);
  CHECK(j["serial_ms"]["runs"] == 3);
  for (const char* stage : {"h2d_ms", "compute_ms", "d2h_ms", "copies_both_directions_ms"}) {
    CAPTURE(stage);
    CHECK(j["stages"][stage]["runs"] == 3);
  }
  CHECK(j["two_stream"]["bit_identical"] == true);
  CHECK(j["ordering_check"]["stale_elements"] == 0);
  CHECK(j["ordering_check"]["waits_dropped"] == false);
  CHECK(j["reference_check"]["mismatches"] == 0);
  std::remove(json.c_str());
}

TEST_CASE("drop-wait flag: the missing cudaStreamWaitEvent is caught (FAIL, exit 1)", "[gpu]") {
  const std::string json = temp_path("drop.json");
  const ProgramResult r = run_program({WORKBOOK_PROGRAM, "--quick", "--drop-wait", "--json", json});
  skip_if_no_gpu(r);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(last_line(r.out), StartsWith("FAIL: "));
  CHECK_THAT(r.out, ContainsSubstring("read before their copy landed"));
  const nlohmann::json j = read_json(json);
  CHECK(j["ordering_check"]["waits_dropped"] == true);
  // The late producer makes the race show every time (on an idle GPU, in every checked element;
  // other processes time-slicing the GPU can shorten the producer's head start, so ask for some).
  CHECK(j["ordering_check"]["stale_elements"].get<std::size_t>() > 0);
  CHECK(j["passed"] == false);
  std::remove(json.c_str());
}

TEST_CASE("asynchrony: the launch returns before the GPU is done, the read waits", "[gpu]") {
  const std::string json = temp_path("async.json");
  const ProgramResult r = run_program({WORKBOOK_PROGRAM, "--quick", "--json", json});
  skip_if_no_gpu(r);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = read_json(json);
  const nlohmann::json& a = j["asynchrony"];
  // An event query right after the launch said "not ready" in every round: the structural proof
  // that the launch returned first. How long the launch, the read and each kind of wait took is
  // a speed, judged by benchmark.sh on a quiet GPU; here only that each was measured.
  CHECK(a["returned_before_done"] == true);
  for (const char* field : {"launch_us", "kernel_ms", "read_blocked_ms"}) {
    CAPTURE(field);
    CHECK(a[field]["min"].get<double>() <= a[field]["median"].get<double>());
    CHECK(a[field]["median"].get<double>() <= a[field]["max"].get<double>());
    CHECK(a[field]["runs"] == 2);  // --quick: two timed rounds
  }
  const nlohmann::json& methods = j["waits"]["methods"];
  REQUIRE(methods.size() == 4);
  CHECK(methods[0]["call"] == "cudaDeviceSynchronize");
  CHECK(methods[3]["call"] == "cudaStreamWaitEvent(C, a_done)");
  for (const auto& m : methods) {  // each wait measured: a spread, as above
    CHECK(m["blocked_us"]["min"].get<double>() <= m["blocked_us"]["median"].get<double>());
    CHECK(m["blocked_us"]["median"].get<double>() <= m["blocked_us"]["max"].get<double>());
    CHECK(m["blocked_us"]["runs"] == 2);
  }
  // The default stream: a kernel on the legacy default stream waits for a blocking stream's
  // kernel (a guarantee, stamped by the GPU's clock); whether the other cases overlap depends on
  // free SMs, so only that each was run.
  const nlohmann::json& cases = j["default_stream"];
  REQUIRE(cases.size() == 4);
  CHECK(cases[0]["waited"] == true);
  CHECK(cases[0]["b_start_after_a_start_us"]["median"].get<double>() > 0.0);
  CHECK(cases[0]["b_start_after_a_start_us"]["runs"] == 1);  // one run of each case
  std::remove(json.c_str());
}

TEST_CASE("calibration: compute is matched to both copies at once, not to the slower copy", "[gpu]") {
  const std::string json = temp_path("calibrated.json");
  const ProgramResult r = run_program({WORKBOOK_PROGRAM, "--quick", "--iterations", "0", "--json", json});
  skip_if_no_gpu(r);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, ContainsSubstring("calibrated: as long as both copies at once"));
  const nlohmann::json all = read_json(json);
  const nlohmann::json& w = all["workload"];
  CHECK(w["iterations_calibrated"] == true);
  const nlohmann::json& c = w["calibration"];
  // How close the compute stage, measured afterwards, comes to the target is a speed (a neighbour
  // shifts either side): benchmark.sh judges it. Here: both copies at once were measured, and the
  // target is the copies' floor, the longest of the three copy times (a target of the slower copy
  // alone ignores the first) ...
  const double together = c["copies_together_ms"]["median"].get<double>();
  CHECK(together > 0.0);
  CHECK(c["h2d_ms"]["runs"] == 3);  // --quick: 3 timed repeats
  CHECK(c["target_ms"].get<double>() ==
        Catch::Approx(std::max({together, c["h2d_ms"]["median"].get<double>(), c["d2h_ms"]["median"].get<double>()}))
            .epsilon(1e-12));
  // ... and iterations_for never gives fewer multiply-adds for a longer target (it is a line of
  // positive slope, or kHigh for both when the measured slope is not positive).
  CHECK(w["iterations"].get<int>() >= c["iterations_for_slower_copy"].get<int>());
  std::remove(json.c_str());
}

TEST_CASE("bench trace flag: one event per operation and one track per stream", "[gpu]") {
  const std::string trace = temp_path("trace.json");
  const std::string json = temp_path("bench.json");
  const ProgramResult r = run_program(
      {WORKBOOK_BENCH_PROGRAM, "--quick", "--chunks", "5", "--trace", trace, "--trace-streams", "3", "--json", json});
  skip_if_no_gpu(r);
  INFO(r.out << r.err);
  require_pass(r);
  const nlohmann::json summary = read_json(json);
  CHECK(summary["trace"]["operations"] == 2 * 3 * 5);
  REQUIRE(summary["tracks"].size() == 5);
  for (const auto& track : summary["tracks"]) CHECK(track["busy_ms"].get<double>() > 0.0);
  std::remove(json.c_str());
  const nlohmann::json t = read_json(trace);
  std::size_t complete = 0;
  std::set<int> tracks_used, tracks_named;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "X") {
      ++complete;
      tracks_used.insert(e["tid"].get<int>());
      CHECK(e["dur"].get<double>() >= 0.0);
      CHECK(e["ts"].get<double>() >= 0.0);
    }
    if (e["ph"] == "M" && e["name"] == "thread_name") tracks_named.insert(e["tid"].get<int>());
  }
  CHECK(complete == 2 * 3 * 5);                           // 3 ops per chunk, K=3 run + article's run
  CHECK(tracks_named == std::set<int>{0, 1, 2, 3, 4});     // 3 streams + compute + transfer
  CHECK(tracks_used == tracks_named);
  std::remove(trace.c_str());
}

// ---------------------------------------------------------------- pytorch

TEST_CASE("pytorch_streams.py --quick runs and writes the C++ program's JSON fields", "[pytorch]") {
  require_torch_cuda(WORKBOOK_PYTHON);
  const std::string json = temp_path("torch.json");
  const ProgramResult r =
      run_program({WORKBOOK_PYTHON, std::string(WORKBOOK_CHAPTER_DIR) + "/pytorch_streams.py", "--quick", "--json", json});
  INFO(r.out << r.err);
  require_pass(r);
  const nlohmann::json pt = read_json(json);
  CHECK(pt["passed"] == true);
  for (const auto& p : pt["pipeline"]) CHECK(p["bit_identical"] == true);
  CHECK(pt["asynchrony"]["returned_before_done"] == true);
  CHECK(pt["quick"] == true);
  CHECK(pt["serial_ms"]["runs"] == pt["repeats"]);
  CHECK(pt["default_stream"][0]["b_start_after_a_start_us"]["runs"] == 1);

  const std::string cpp_json = temp_path("cpp.json");
  const ProgramResult c = run_program({WORKBOOK_PROGRAM, "--quick", "--json", cpp_json});
  if (c.exit_code == 0) {  // same fields, so that one plot or table reads both
    const nlohmann::json cpp = read_json(cpp_json);
    for (const auto& field : cpp.items()) {
      CAPTURE(field.key());
      if (field.key() != "program") CHECK(pt.contains(field.key()));
    }
    std::remove(cpp_json.c_str());
  }
  std::remove(json.c_str());
}
