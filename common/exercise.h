// exercise.h: what every exercise checker shares: the "not attempted yet" skip, the flags, the
// compute-sanitizer pass, timing an attempt against the chapter's own code, and the verdict line.
//
//   int run(int argc, char** argv) {
//     workbook::exercise::Checker checker("04", "gradient");
//     if (auto code = checker.parse(argc, argv)) return *code;  // 77 while the TODO is there
//     for (n : sizes) if (wrong) return checker.wrong("at n = 1, dL/db is 0 where 0.929 was expected",
//                                                     "the loop never adds the last element: ...");
//     if (auto code = checker.sanitize(hints)) return *code;    // racecheck, memcheck of --sanitizer-pass
//     return checker.correct(attempt_us, lesson_us);            // the speed verdict
//   }
//
// One verdict line ends every check, on stdout, and is also the exit code:
//   correct; 1.70x slower than the chapter's kernel (41.2 us against 24.2 us on NVIDIA H200)   0
//   wrong: <what went wrong>; hint: <the likely mistake>                                        1
//   not attempted yet: <file> still holds its TODO(exercise): line                             77
// The checker re-runs itself under compute-sanitizer with --sanitizer-pass, which runs only the
// small correctness sizes, so that racecheck and memcheck see the attempt's kernels.
#pragma once

#include "event_timer.h"
#include "stats.h"

#include <cuda_runtime_api.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

namespace workbook::exercise {

// The attempt this checker was built from (each checker program gets generated definitions:
// cmake/WorkbookExercise.cmake): its absolute path, read by the checker, and its path from the
// workbook's root, the one the checker's lines show (as check-exercise.sh shows it); and the
// checker program's own name (check_forward, check_forward_tail, ...), for its error lines.
const char* attempt_file();
const char* attempt_in_workbook();
const char* checker_name();

// The marker a skeleton holds until the reader has written the exercise: the start of the one
// comment line to delete (with the colon, so that the header's "delete the TODO(exercise) line"
// is not itself a marker; scripts/check-exercise.sh looks for the same text).
inline constexpr const char* kTodoMarker = "TODO(exercise):";

// What the sanitizer findings mean, in the words of this exercise.
struct SanitizerHints {
  std::string race;    // racecheck reported a hazard on shared memory
  std::string memory;  // memcheck reported an access out of bounds or a misaligned one
};

class Checker {
 public:
  // `chapter` and `name` as the reader types them: scripts/check-exercise.sh 04 gradient.
  Checker(std::string chapter, std::string name);

  // Flags: --device N, --sanitizer-pass (the small sizes only, for compute-sanitizer),
  // --no-sanitizer. Returns an exit code to return now (--help, bad usage, or 77 while the
  // attempt still holds its TODO marker), else nullopt, with the device chosen and current.
  std::optional<int> parse(int argc, char** argv);

  bool sanitizer_pass() const { return sanitizer_pass_; }
  int device() const { return device_; }

  // Prints "wrong: <what>; hint: <hint>" and returns 1.
  int wrong(const std::string& what, const std::string& hint) const;

  // Unless this is the sanitizer pass or --no-sanitizer was given: re-runs this program with
  // --sanitizer-pass under racecheck, then memcheck. Returns 1 (after the verdict line) on the
  // first finding, nullopt when both are clean or compute-sanitizer is not installed (said once).
  std::optional<int> sanitize(const SanitizerHints& hints) const;

  // An exercise that needs `count` GPUs: nullopt with that many, else one line and 77 (skip).
  std::optional<int> need_gpus(int count) const;

  // Prints "wrong: <what>; hint: <hint>" and ends the process at once, for GPU work that never
  // finished: a normal exit would wait for a kernel that spins forever; the driver stops it.
  [[noreturn]] static void give_up(const std::string& what, const std::string& hint);

  // Prints "correct; ..." comparing the attempt's time with the chapter's, and returns 0.
  int correct(const Stats& attempt_us, const Stats& lesson_us, const std::string& lesson_what) const;
  // Prints "correct; <detail>" and returns 0: for an exercise whose speed is not the point.
  int correct(const std::string& detail) const;

 private:
  std::string chapter_, name_, attempt_file_, attempt_shown_;
  int device_ = 0;
  bool sanitizer_pass_ = false;
  bool no_sanitizer_ = false;
};

// The median, min and max in microseconds of 20 calls of `work` on `stream`, after 3 warm-up
// calls, each between two CUDA events (common/event_timer.h).
template <class Work>
Stats time_us(cudaStream_t stream, Work&& work) {
  Stats t = time_on_stream(stream, Repeats{3, 20}, std::forward<Work>(work));
  t.median *= 1e3;
  t.min *= 1e3;
  t.max *= 1e3;
  t.mean *= 1e3;
  return t;
}

// For a part of a check that can hang (a collective or a call that never returns): while this
// object lives, a watchdog thread waits `seconds`, then gives up (Checker::give_up) with `what`
// and `hint`. Its destructor calls the watchdog off.
//
//   { const Deadline guard(20.0, "the all-reduce did not return within 20 s", "...");
//     attempt(...); }                                   // past here, no watchdog
class Deadline {
 public:
  Deadline(double seconds, std::string what, std::string hint);
  ~Deadline();
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;

 private:
  struct State;
  std::shared_ptr<State> state_;
  std::thread watchdog_;
};

// Polls `stream` until its work is done (true) or `seconds` have passed (false): a wait that
// cannot hang, for work the attempt may never finish.
bool finishes_within(cudaStream_t stream, double seconds);

// Floats compared as an exercise does: |got - want| <= abs + rel * |want|.
bool close(double got, double want, double rel, double abs = 0.0);

}  // namespace workbook::exercise
