// test_06_one_shot.cpp: the hand-written exchange of by_hand (one_shot_exchange.h), its kernels
// alone. The untagged case checks the one line a wait that gave up becomes; the [gpu] case runs
// publish and gather on one GPU: a local mailbox, two mailboxes as two ranks, a rank that never
// publishes, the host's abort flag.
#include "bench/exchange_alone.h"  // the one-shot exchange in two halves
#include "cuda_check.h"
#include "device_buffer.h"
#include "one_shot_exchange.h"
#include "stream.h"
#include "support/exchange.h"
#include "test_06.h"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

TEST_CASE("exchange: a one-shot wait that gave up is one line naming the rank and the epoch") {
  ExchangeSignals s;
  CHECK_FALSE(exchange_failure(s, 20, 30.0));  // code 0: all is well
  s.code = kExchangeTimedOut;
  s.rank = 1;
  s.sequence = 26;  // exchange 26 = epoch 5 of run 1 (run 0 is the warm-up) with 20 epochs a run
  const auto line = exchange_failure(s, 20, 20.0);
  REQUIRE(line);
  CHECK(*line == "the one-shot exchange gave up after 20 s waiting for rank 1's sums of epoch 5 (run 1): "
                 "rank 1 died or hangs");
  CHECK(line->find('\n') == std::string::npos);
  s.code = kExchangeAborted;
  s.rank = 3;
  s.sequence = 1;
  CHECK(exchange_failure(s, 20, 20.0) ==
        "the one-shot exchange was stopped by the host while waiting for rank 3's sums of epoch 0 (run 0)");
  // Outside training (the bench's exchanges alone) there are no epochs: the exchange is named.
  s.sequence = 7;
  CHECK(exchange_failure(s, 0, 20.0) ==
        "the one-shot exchange was stopped by the host while waiting for rank 3's sums of exchange 7");
}

TEST_CASE("one-shot kernels on one GPU: two mailboxes add in rank order; a missing rank is named; abort ends a wait",
          "[gpu]") {
  require_gpus(1);
  CUDA_CHECK(cudaSetDevice(0));
  Stream stream;
  const cudaStream_t st = stream.get();
  auto upload = [&](std::vector<float> v) {
    DeviceBuffer<float> d(v.size());
    CUDA_CHECK(cudaMemcpy(d.data(), v.data(), d.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaDeviceSynchronize());  // landed before the kernels on the non-blocking stream read it
    return d;
  };
  auto download = [&](const DeviceBuffer<float>& d) {
    std::vector<float> v(d.size());
    CUDA_CHECK(cudaMemcpy(v.data(), d.data(), d.bytes(), cudaMemcpyDeviceToHost));
    return v;
  };
  // Rank 0 of two, alone (rank 1 never publishes): its sums published, its gather waiting for rank 1's.
  auto start_waiting_alone = [&](OneShotMailbox& a, const OneShotMailbox& b, const DeviceBuffer<float>& in,
                                 DeviceBuffer<float>& out) {
    a.connect({a.local(), b.local()});
    launch_one_shot_publish(in.data(), a, st);
    launch_one_shot_gather(in.data(), out.data(), a, st);
  };

  SECTION("one rank: the gathered sums are its own (it publishes to nobody, waits for nobody)") {
    OneShotMailbox box(1, 0, 5.0);
    const DeviceBuffer<float> in = upload({1.5f, -2.0f, 3.25f});
    DeviceBuffer<float> out = upload({0, 0, 0});
    for (int i = 0; i < 3; ++i) {  // both parity sets, and back
      launch_one_shot_publish(in.data(), box, st);
      launch_one_shot_gather(in.data(), out.data(), box, st);
    }
    stream.synchronize();
    CHECK(download(out) == std::vector<float>{1.5f, -2.0f, 3.25f});
    CHECK_FALSE(box.failure(1));
  }
  SECTION("two ranks on one GPU: both get rank 0's sums plus rank 1's, exchange after exchange") {
    OneShotMailbox a(2, 0, 5.0), b(2, 1, 5.0);
    a.connect({a.local(), b.local()});
    b.connect({a.local(), b.local()});
    const DeviceBuffer<float> in0 = upload({1e8f, 2.0f, 3.0f}), in1 = upload({1.0f, 20.0f, 30.0f});
    DeviceBuffer<float> out0 = upload({0, 0, 0}), out1 = upload({0, 0, 0});
    for (int i = 0; i < 5; ++i) {  // one stream: each gather finds both slots already written
      launch_one_shot_publish(in0.data(), a, st);
      launch_one_shot_publish(in1.data(), b, st);
      launch_one_shot_gather(in0.data(), out0.data(), a, st);
      launch_one_shot_gather(in1.data(), out1.data(), b, st);
    }
    stream.synchronize();
    const std::vector<float> want = {1e8f + 1.0f, 22.0f, 33.0f};  // rank 0's + rank 1's, in float
    CHECK(download(out0) == want);
    CHECK(download(out1) == want);
    CHECK_FALSE(a.failure(1));
    CHECK_FALSE(b.failure(1));
  }
  SECTION("rank 1 never publishes: rank 0's wait gives up after its timeout, naming rank 1, and stays given up") {
    OneShotMailbox a(2, 0, 0.2), b(2, 1, 0.2);
    const DeviceBuffer<float> in = upload({1, 2, 3});
    DeviceBuffer<float> out = upload({0, 0, 0});
    start_waiting_alone(a, b, in, out);
    const double seconds = seconds_of([&] { stream.synchronize(); });
    CHECK(seconds < 30.0);  // a liveness bound, not a speed: it ended by itself
    const auto line = a.failure(10);
    REQUIRE(line);
    CHECK_THAT(*line, ContainsSubstring("gave up after 0.2 s waiting for rank 1's sums of epoch 0 (run 0)"));
    launch_one_shot_gather(in.data(), out.data(), a, st);  // sticky: returns at once, the record unchanged
    stream.synchronize();
    CHECK(a.failure(10) == line);
    CHECK(download(out) == std::vector<float>{0, 0, 0});
  }
  SECTION("the host's abort flag ends a wait long before its timeout") {
    OneShotMailbox a(2, 0, 120.0), b(2, 1, 120.0);
    const DeviceBuffer<float> in = upload({1, 2, 3});
    DeviceBuffer<float> out = upload({0, 0, 0});
    start_waiting_alone(a, b, in, out);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK(cudaStreamQuery(st) == cudaErrorNotReady);  // still waiting for rank 1
    a.abort();
    const double seconds = seconds_of([&] { stream.synchronize(); });
    CHECK(seconds < 30.0);  // far below the 120 s timeout
    const auto line = a.failure(10);
    REQUIRE(line);
    CHECK_THAT(*line, ContainsSubstring("stopped by the host while waiting for rank 1"));
  }
}
