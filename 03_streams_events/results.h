// results.h: how chapter 03 reports each result, in the lesson and the bench: its printed lines
// and its JSON, under the keys the tests, benchmark.sh and compare_pytorch.py read (the same keys
// pytorch_streams.py writes).
#pragma once

#include "streams_events.h"

#include "compare.h"
#include "report.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>

namespace workbook::streams_events {

// The ordering check's result: elements a kernel read before their copy had landed.
struct OrderingCheck {
  bool waits_dropped = false;
  int producer_delay_us = 0;
  std::size_t checked_elements = 0;
  std::size_t stale_elements = 0;
};

// "device 0: <name>, 3 copy engine(s), concurrent kernels: yes" and the JSON "device" and
// "async_engine_count"; the copy engines decide the stages-alone bound (overlap_bound.h).
CopyEngines report_device(int device, workbook::Report& report);
// The workload's lines and the JSON "workload" (with "calibration" when there was one).
void report_workload(const Batch& b, const std::optional<Calibration>& calibration, workbook::Report& report);

// Each result's lines and its JSON (key in quotes). The verdicts (report.check) stay with the checks.
void report_reference_check(const workbook::Comparison& c, workbook::Report& report);  // "reference_check"
// "ordering_check"; `few`: the checked chunks, as the run left them; `want`: the serial result.
void report_ordering(const OrderingCheck& o, const Batch& few, const float* want, workbook::Report& report);
void report_asynchrony(const Asynchrony& a, long long kernel_ns, workbook::Report& report);  // "asynchrony"
// The stages alone, serial, and the two bounds with their arithmetic: "stages", "serial_ms", "bound".
void report_stages(const Stages& t, CopyEngines engines, int chunks, workbook::Report& report);
void report_waits(const Waits& w, workbook::Report& report);  // "waits"
// "default_stream" (each case's start offset a timing of its one run); checks that the legacy
// default stream waited for the blocking stream.
void report_default_stream(const std::vector<DefaultStreamCase>& cases, long long kernel_ns, workbook::Report& report);

}  // namespace workbook::streams_events
