// needs_gpu_main.cpp: the smallest program that keeps the workbook's exit-code contract; the
// tests run it with CUDA_VISIBLE_DEVICES="" to see the "no usable GPU" path end in exit 77.
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
