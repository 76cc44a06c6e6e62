// check_mailbox.cu: the checker of exercise 06 mailbox (the contract: mailbox.h).
//
// A mailbox is only memory, so the first checks run on one GPU with three mailboxes on it (a
// world of 3 ranks, each on its own stream), where every word can be looked at from the host:
// 1. publish, rank 1, exchanges 1 and 2: exactly its slot (index 1) of set s & 1 of ranks 0's and
//    2's mailboxes holds word_of(sum k, s), and nothing else anywhere changed.
// 2. gather, rank 2, exchange 3: it must still wait while its slots hold exchange 1's words, and
//    while only rank 0's have come; once both have come it must finish, with the totals added in
//    rank order (the values are chosen so that another order gives other bits) and the counter 3.
// 3. round trips: 8 exchanges of all three ranks at once, the last rank late each time; then, with
//    two GPUs that reach each other's memory, 8 more between them (a mailbox on each GPU, peer
//    access on; NVLink on the machines of this workbook). Every total right, the
//    same bits on every rank.
// 4. The verdict times an exchange (publish, then gather, on every rank) against the lesson's.
// A wait that never ends is stopped, and named, after a few seconds (Checker::give_up). No
// compute-sanitizer pass: the kernels meet through each other's stores, which it cannot pair.
#include "mailbox.h"

#include "bench/exchange_alone.h"  // launch_one_shot_publish, launch_one_shot_gather: the lesson's halves

#include "cuda_check.h"
#include "device_buffer.h"
#include "exercise.h"
#include "format.h"
#include "globaltimer.cuh"
#include "program.h"
#include "splitmix64.h"
#include "stream.h"
#include "support/peer_access.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace workbook::multi_gpu::exercise {
namespace {

using workbook::exercise::Checker;
using workbook::exercise::finishes_within;

unsigned long long word_of_host(float sum, unsigned s) {
  unsigned bits = 0;
  std::memcpy(&bits, &sum, sizeof(bits));
  return static_cast<unsigned long long>(s) << 32 | bits;
}

float sum_of(unsigned long long word) {
  const auto bits = static_cast<unsigned>(word);
  float sum = 0.0f;
  std::memcpy(&sum, &bits, sizeof(sum));
  return sum;
}

constexpr int kExchanges = 8;  // of each round trip, and of each timed round

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

__global__ void spin_for(unsigned long long ns) {
  const unsigned long long start = global_timer_ns();
  while (global_timer_ns() - start < ns) __nanosleep(1000);
}

// One rank: its mailbox, stream, sums and totals, on its GPU.
struct Rank {
  int device = 0;
  std::unique_ptr<Stream> stream;
  std::unique_ptr<OneShotMailbox> box;
  DeviceBuffer<float> sums, totals;  // 3 floats an exchange
};

std::vector<Rank> make_world(const std::vector<int>& devices, int exchanges) {
  const int world = static_cast<int>(devices.size());
  std::vector<Rank> ranks(devices.size());
  std::vector<MailboxSlot*> boxes;
  for (int r = 0; r < world; ++r) {
    Rank& k = ranks[r];
    k.device = devices[r];
    CUDA_CHECK(cudaSetDevice(k.device));
    k.stream = std::make_unique<Stream>();
    k.box = std::make_unique<OneShotMailbox>(world, r, /*timeout_s=*/30.0);
    k.sums = DeviceBuffer<float>(3 * static_cast<std::size_t>(exchanges));
    k.totals = DeviceBuffer<float>(3 * static_cast<std::size_t>(exchanges));
    boxes.push_back(k.box->local());
  }
  for (Rank& k : ranks) k.box->connect(boxes);
  return ranks;
}

std::vector<MailboxSlot> read_box(const Rank& k) {
  std::vector<MailboxSlot> slots(2 * static_cast<std::size_t>(k.box->world()));
  CUDA_CHECK(cudaSetDevice(k.device));
  CUDA_CHECK(cudaMemcpy(slots.data(), k.box->local(), slots.size() * sizeof(MailboxSlot), cudaMemcpyDeviceToHost));
  return slots;
}

// Empty mailboxes, and `done` exchanges counted on every rank (the next one is done + 1).
void reset(std::vector<Rank>& ranks, unsigned done) {
  for (Rank& k : ranks) {
    CUDA_CHECK(cudaSetDevice(k.device));
    CUDA_CHECK(cudaMemset(k.box->local(), 0, 2 * k.box->world() * sizeof(MailboxSlot)));
    const unsigned counters[2] = {done, 0};
    CUDA_CHECK(cudaMemcpy(k.box->view().counters, counters, sizeof(counters), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaDeviceSynchronize());  // in place before the ranks' non-blocking streams read them
  }
}

void put_sums(Rank& k, const float (&sums)[3]) {
  CUDA_CHECK(cudaSetDevice(k.device));
  CUDA_CHECK(cudaMemcpy(k.sums.data(), sums, sizeof(sums), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaDeviceSynchronize());
}

// A peer's three words of exchange s written into rank k's mailbox from the host, on a stream of
// their own (the gather spinning on k's stream must see them arrive).
void deliver(Rank& k, int peer, unsigned s, const float (&sums)[3], Stream& side) {
  MailboxSlot slot{};
  for (int j = 0; j < 3; ++j) slot.word[j] = word_of_host(sums[j], s);
  MailboxSlot* at = k.box->local() + static_cast<int>(s & 1u) * k.box->world() + peer;
  CUDA_CHECK(cudaSetDevice(k.device));
  CUDA_CHECK(cudaMemcpyAsync(at, &slot, sizeof(slot), cudaMemcpyHostToDevice, side.get()));
  side.synchronize();
}

bool busy(const Rank& k) {
  CUDA_CHECK(cudaSetDevice(k.device));
  const cudaError_t status = cudaStreamQuery(k.stream->get());
  if (status != cudaSuccess && status != cudaErrorNotReady) CUDA_CHECK(status);
  return status == cudaErrorNotReady;
}

// 1. Rank 1 publishes exchange s: what landed where, against the one slot it owns in each peer's box.
int check_publish(const Checker& checker, std::vector<Rank>& ranks, unsigned s) {
  const float mine[3] = {1.5f * s, -2.25f, 0.125f * s};
  reset(ranks, s - 1);
  put_sums(ranks[1], mine);
  launch_publish(ranks[1].sums.data(), *ranks[1].box, ranks[1].stream->get());
  if (!finishes_within(ranks[1].stream->get(), 5.0)) {
    checker.give_up(format("publish of exchange %u never finished", s), "publish only stores: it waits for nothing");
  }
  const int world = 3, set = static_cast<int>(s & 1u);
  for (int r = 0; r < world; ++r) {
    const std::vector<MailboxSlot> box = read_box(ranks[r]);
    for (int i = 0; i < 2 * world; ++i) {
      for (int k = 0; k < 3; ++k) {
        const unsigned long long got = box[i].word[k];
        const bool owned = r != 1 && i == set * world + 1;
        const std::string where = format("word %d of slot %d of set %d of rank %d's mailbox", k, i % world, i / world, r);
        if (!owned && got == 0) continue;
        if (r == 1) {
          return checker.wrong("rank 1 wrote " + where + ", its own mailbox",
                               "a rank never writes its own mailbox: it adds its own sums from `sums`");
        }
        if (!owned && i / world != set) {
          return checker.wrong(format("exchange %u's words landed in set %d", s, i / world),
                               format("exchange s uses set s & 1 (set %d here), so that a fast rank can write "
                                      "exchange s + 1 while a slow one still reads s", set));
        }
        if (!owned) {
          return checker.wrong(format("rank 1's words landed in slot %d of rank %d's mailbox", i % world, r),
                               "a writer fills the slot of its own rank (v.rank) in every peer's mailbox");
        }
        if (got == 0) {
          return checker.wrong("nothing arrived in " + where,
                               "store into word k of slot v.rank of set s & 1 of v.mailboxes[peer], for every peer");
        }
        if (static_cast<unsigned>(got >> 32) != s) {
          return checker.wrong(format("%s has %u in its high half, not the exchange's number %u", where.c_str(),
                                      static_cast<unsigned>(got >> 32), s),
                               "word_of(sums[k], s): the high half says which exchange the sum belongs to");
        }
        if (got != word_of_host(mine[k], s)) {
          return checker.wrong(format("%s carries %g where sum %d is %g", where.c_str(), sum_of(got), k, mine[k]),
                               "word k carries sums[k]: lane l handles sum l % 3 of rank l / 3");
        }
      }
    }
  }
  return 0;
}

// 2. Rank 2 gathers exchange 3: it waits for exactly exchange 3's words, then adds in rank order.
int check_gather(const Checker& checker, std::vector<Rank>& ranks, Stream& side) {
  // Rank order gives 0 for sums 0 and 1; its own sums first, or the ranks backwards, give 1.
  const float sums[3][3] = {{1e8f, 1.0f, 0.5f}, {1.0f, 1e8f, 0.25f}, {-1e8f, -1e8f, 2.0f}};
  const float stale[3] = {7.0f, 7.0f, 7.0f};
  Rank& me = ranks[2];
  reset(ranks, 2);
  put_sums(me, sums[2]);
  deliver(me, 0, 1, stale, side);  // exchange 1's words, in the set exchange 3 uses
  deliver(me, 1, 1, stale, side);
  launch_gather(me.sums.data(), me.totals.data(), *me.box, me.stream->get());
  sleep_ms(50);
  if (!busy(me)) {
    return checker.wrong("the gather of exchange 3 went ahead while its slots held exchange 1's words",
                         "an older exchange's word is not zero: wait until every peer's word has s in its high half");
  }
  deliver(me, 0, 3, sums[0], side);
  sleep_ms(20);
  if (!busy(me)) {
    return checker.wrong("the gather of exchange 3 went ahead with rank 1's words still missing",
                         "wait for every peer: the warp goes on only when every lane's word is ready (__all_sync)");
  }
  deliver(me, 1, 3, sums[1], side);
  if (!finishes_within(me.stream->get(), 5.0)) {
    checker.give_up("the gather never finished, though ranks 0 and 1 had written exchange 3's words into slots 0 "
                    "and 1 of set 1 of rank 2's mailbox",
                    "gather waits on its own mailbox (v.mine): slot `peer` of set s & 1, until the high half is s");
  }
  float got[3];
  CUDA_CHECK(cudaSetDevice(me.device));
  CUDA_CHECK(cudaMemcpy(got, me.totals.data(), sizeof(got), cudaMemcpyDeviceToHost));
  for (int k = 0; k < 3; ++k) {
    const float want = (sums[0][k] + sums[1][k]) + sums[2][k];
    if (got[k] == want) continue;
    const bool reordered = got[k] == (sums[2][k] + sums[0][k]) + sums[1][k] || got[k] == (sums[2][k] + sums[1][k]) + sums[0][k];
    return checker.wrong(format("total %d of exchange 3 is %g where rank order (r0 + r1) + r2 gives %g", k, got[k], want),
                         reordered ? "add in rank order 0..N-1 on every rank: its own sums first, or the ranks "
                                     "backwards, give other bits, and the replicas drift apart"
                                   : "total k = rank 0's sum k + rank 1's + rank 2's, in that order");
  }
  unsigned counters[2] = {};
  CUDA_CHECK(cudaMemcpy(counters, me.box->view().counters, sizeof(counters), cudaMemcpyDeviceToHost));
  if (counters[0] != 3) {
    return checker.wrong(format("after exchange 3 the exchanges-done counter says %u", counters[0]),
                         "thread 0 calls one_shot_done(v, s) once the totals are written: the next exchange is s + 1");
  }
  return 0;
}

float value(int exchange, int rank, int k) {
  const std::uint64_t h = splitmix64_of(static_cast<std::uint64_t>(exchange * 131 + rank * 7 + k));
  return static_cast<float>(static_cast<double>(h >> 40) / static_cast<double>(1ull << 24) * 4.0 - 2.0);
}

// Queues `exchanges` exchanges on every rank (the last rank 1 ms late each time), from exchange 1.
template <class Publish, class Gather>
void queue_exchanges(std::vector<Rank>& ranks, int exchanges, bool late, Publish publish, Gather gather) {
  for (int e = 0; e < exchanges; ++e) {
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      Rank& k = ranks[r];
      CUDA_CHECK(cudaSetDevice(k.device));
      if (late && r + 1 == ranks.size()) {
        spin_for<<<1, 1, 0, k.stream->get()>>>(1'000'000ULL);
        CUDA_CHECK_LAUNCH();
      }
      publish(k.sums.data() + 3 * e, *k.box, k.stream->get());
      gather(k.sums.data() + 3 * e, k.totals.data() + 3 * e, *k.box, k.stream->get());
    }
  }
}

// 3. Round trips: every total right, the same bits on every rank.
int check_round_trips(const Checker& checker, std::vector<Rank>& ranks, int exchanges, const std::string& world_text) {
  const int world = static_cast<int>(ranks.size());
  reset(ranks, 0);
  for (int r = 0; r < world; ++r) {
    std::vector<float> host(3 * static_cast<std::size_t>(exchanges));
    for (int e = 0; e < exchanges; ++e) for (int k = 0; k < 3; ++k) host[3 * e + k] = value(e, r, k);
    CUDA_CHECK(cudaSetDevice(ranks[r].device));
    CUDA_CHECK(cudaMemcpy(ranks[r].sums.data(), host.data(), ranks[r].sums.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(ranks[r].totals.data(), 0, ranks[r].totals.bytes()));
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  queue_exchanges(ranks, exchanges, /*late=*/true, launch_publish, launch_gather);
  for (Rank& k : ranks) {
    if (!finishes_within(k.stream->get(), 5.0)) {
      checker.give_up("the exchanges of " + world_text + " stopped: a rank waited for ever",
                      "every rank publishes exchange s into set s & 1 of every peer, and waits for s in its own");
    }
  }
  for (int r = 0; r < world; ++r) {
    std::vector<float> got(3 * static_cast<std::size_t>(exchanges));
    CUDA_CHECK(cudaSetDevice(ranks[r].device));
    CUDA_CHECK(cudaMemcpy(got.data(), ranks[r].totals.data(), ranks[r].totals.bytes(), cudaMemcpyDeviceToHost));
    for (int e = 0; e < exchanges; ++e) {
      for (int k = 0; k < 3; ++k) {
        float want = value(e, 0, k);
        for (int p = 1; p < world; ++p) want += value(e, p, k);
        if (got[3 * e + k] == want) continue;
        return checker.wrong(format("%s: rank %d's total %d of exchange %d is %g where %g was expected",
                                    world_text.c_str(), r, k, e + 1, got[3 * e + k], want),
                             "each exchange's words in set s & 1, each read when its high half is s, added in rank order");
      }
    }
  }
  return 0;
}

// 4. One exchange of every rank, publish then gather: kExchanges of them back to back, timed
// between two events on rank 0's stream (8 rounds, the first 2 untimed), per exchange.
template <class Publish, class Gather>
Stats time_exchange(std::vector<Rank>& ranks, Publish publish, Gather gather) {
  std::vector<double> us;
  for (int i = 0; i < 8; ++i) {
    reset(ranks, 0);
    CUDA_CHECK(cudaSetDevice(ranks[0].device));  // the events are rank 0's GPU's, as the stream they time
    Event start(EventTiming::kEnabled), stop(EventTiming::kEnabled);
    start.record(ranks[0].stream->get());
    for (std::size_t r = 1; r < ranks.size(); ++r) {
      CUDA_CHECK(cudaSetDevice(ranks[r].device));
      CUDA_CHECK(cudaStreamWaitEvent(ranks[r].stream->get(), start.get(), 0));
    }
    queue_exchanges(ranks, kExchanges, /*late=*/false, publish, gather);
    CUDA_CHECK(cudaSetDevice(ranks[0].device));
    stop.record(ranks[0].stream->get());
    for (Rank& k : ranks) {
      CUDA_CHECK(cudaSetDevice(k.device));
      k.stream->synchronize();
    }
    if (i >= 2) us.push_back(1e3 * elapsed_ms(start, stop) / kExchanges);
  }
  return summarize(us);
}

int run(int argc, char** argv) {
  Checker checker("06", "mailbox");
  if (auto code = checker.parse(argc, argv)) return *code;
  // The debug preset's sync after each launch (cuda_check.h) off: the checker's own kernels hold
  // the stream back while the attempt queues, and a sync would wait them out first.
  const UnsyncedLaunches queue_behind_the_checker;
  const workbook::exercise::Deadline guard(120.0, "the check did not end within 120 s",
                                           "a publish or a gather that never ends");
  const int gpu = checker.device();
  std::vector<Rank> three = make_world({gpu, gpu, gpu}, kExchanges);
  Stream side;
  for (const unsigned s : {1u, 2u}) {
    if (const int verdict = check_publish(checker, three, s)) return verdict;
  }
  if (const int verdict = check_gather(checker, three, side)) return verdict;
  if (const int verdict = check_round_trips(checker, three, kExchanges, "three ranks on one GPU")) return verdict;

  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  if (count < 2) {
    const Stats attempt = time_exchange(three, launch_publish, launch_gather);
    const Stats lesson = time_exchange(three, launch_one_shot_publish, launch_one_shot_gather);
    return checker.correct(attempt, lesson, "the chapter's one_shot_publish and one_shot_gather (three ranks on one "
                                            "GPU; the NVLink round trip needs two GPUs)");
  }
  const int other = gpu == 0 ? 1 : 0;
  int reach = 0, back = 0;
  CUDA_CHECK(cudaDeviceCanAccessPeer(&reach, gpu, other));
  CUDA_CHECK(cudaDeviceCanAccessPeer(&back, other, gpu));
  if (reach == 0 || back == 0) {
    const Stats attempt = time_exchange(three, launch_publish, launch_gather);
    const Stats lesson = time_exchange(three, launch_one_shot_publish, launch_one_shot_gather);
    return checker.correct(attempt, lesson, format("the chapter's one_shot_publish and one_shot_gather (three ranks "
                                                   "on one GPU; GPUs %d and %d cannot reach each other's memory)",
                                                   gpu, other));
  }
  const PeerAccess peers({gpu, other});
  std::vector<Rank> two = make_world({gpu, other}, kExchanges);
  if (const int verdict = check_round_trips(checker, two, kExchanges, "two GPUs, peer to peer")) return verdict;
  const Stats attempt = time_exchange(two, launch_publish, launch_gather);
  const Stats lesson = time_exchange(two, launch_one_shot_publish, launch_one_shot_gather);
  return checker.correct(attempt, lesson, "the chapter's one_shot_publish and one_shot_gather, for an exchange "
                                          "between two GPUs");
}

}  // namespace
}  // namespace workbook::multi_gpu::exercise

int main(int argc, char** argv) {
  return workbook::guarded_main(workbook::exercise::checker_name(),
                                [&] { return workbook::multi_gpu::exercise::run(argc, argv); });
}
