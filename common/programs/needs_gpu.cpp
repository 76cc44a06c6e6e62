// needs_gpu.cpp: the smallest program that keeps the workbook's exit-code contract: exit 0
// when device 0 is usable, 77 with the reason when there is no GPU. The compute-sanitizer tests
// run it first (a sanitizer on a machine without a driver fails instead of skipping), and
// test_common runs it with CUDA_VISIBLE_DEVICES="" to see the no-GPU path end in exit 77.
#include "gpu_probe.h"
#include "program.h"

#include <iostream>

int main() {
  return workbook::guarded_main("needs_gpu", [] {
    workbook::use_device(0);
    std::cout << "PASS\n";
    return workbook::kExitOk;
  });
}
