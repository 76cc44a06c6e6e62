// common_options.h: the options every chapter's programs share, as plain types, and CLI11's App
// declared, not defined. A lesson header that names them (its RunOptions, an add_..._options(CLI::App&)
// function) includes this instead of cli.h: CLI11's header is large, and nvcc would parse it once
// for every GPU architecture in every .cu file that includes the lesson header. The files that
// call CLI11 include cli.h.
#pragma once

#include <optional>
#include <string>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace workbook {

struct CommonOptions {
  int device = 0;                   // --device N, cuda or cuda:N
  std::optional<std::string> json;  // set by --json; "-" means stdout
  bool quick = false;               // small sizes and few repeats, for the tests
};

// --device: "N", "cuda" (device 0) or "cuda:N", as torch.device takes them; with CpuDevice::kAllowed
// also "cpu". Anything else (a sign, spaces, "gpu", "cuda:") is a UsageError naming the flag.
// Whether device N exists is asked later, of the runtime (use_device in gpu_probe.h).
enum class CpuDevice { kRefused, kAllowed };
struct DeviceChoice {
  bool cpu = false;
  int index = 0;
  std::string name() const { return cpu ? "cpu" : "cuda:" + std::to_string(index); }
};
DeviceChoice parse_device(const std::string& text, CpuDevice cpu = CpuDevice::kRefused);

}  // namespace workbook
