// program.h: the one place where a workbook program turns exceptions into exit codes.
//
//   int main(int argc, char** argv) {
//     return workbook::guarded_main("transfer", [&] { return run(argc, argv); });
//   }
//
// Helpers never call exit(): they throw, and this catches once, prints one line to stderr and
// returns the exit code of exit_codes.h.
#pragma once

#include "cuda_check.h"
#include "exit_codes.h"

#include <exception>
#include <iostream>

namespace workbook {

template <class Body>
int guarded_main(const char* program, Body&& body) noexcept {
  try {
    return body();
  } catch (const UsageError& e) {
    std::cerr << "error: " << e.what() << " (see " << program << " --help)\n";
    return kExitUsage;
  } catch (const NoGpuError& e) {
    std::cerr << program << " needs a CUDA GPU: " << e.what() << "\n";
    return kExitNoGpu;
  } catch (const CudaError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitFailure;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitFailure;
  } catch (...) {
    std::cerr << "error: unknown exception\n";
    return kExitFailure;
  }
}

}  // namespace workbook
