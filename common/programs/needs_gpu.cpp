// needs_gpu.cpp: the smallest program that keeps the workbook's exit-code contract: exit 0
// when device 0 is usable, 77 with the reason when there is no GPU. The compute-sanitizer tests
// run it first (a sanitizer on a machine without a driver fails instead of skipping), and
// test_common runs it with CUDA_VISIBLE_DEVICES="" to see the no-GPU path end in exit 77.
#include "gpu_probe.h"
#include "program.h"

#include <iostream>
#include <string>

int main(int argc, char** argv) {
  return workbook::guarded_main("workbook_needs_gpu", [argc, argv] {
    if (argc > 1) {
      const std::string arg = argv[1];
      if (argc == 2 && (arg == "--help" || arg == "-h")) {
        std::cout << "workbook_needs_gpu: exit 0 when device 0 is usable, 77 with the reason when not; no arguments\n";
        return workbook::kExitOk;
      }
      throw workbook::UsageError("workbook_needs_gpu takes no arguments, got '" + arg + "'");
    }
    workbook::use_device(0);
    std::cout << "PASS\n";
    return workbook::kExitOk;
  });
}
