// test_build.cpp: what the build put into the chapter programs. The README promises a list of
// GPU architectures; a change that drops one from the build (or from a program) fails here, on a
// machine without a GPU too, because the check reads the program files, not a GPU.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fatbin.h"

using workbook::test::FatbinContainer;
using workbook::test::parse_fatbin_section;
using workbook::test::read_fatbin_containers;

namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, separator);) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

// CMake's architecture list ("75-real,90"): machine code for each entry but "-virtual" ones, PTX
// for each entry but "-real" ones.
struct Architectures {
  std::set<int> machine_code;
  std::set<int> ptx;
};

Architectures from_cmake_list(const std::string& list) {
  Architectures a;
  for (const std::string& entry : split(list, ',')) {
    const int arch = std::stoi(entry);
    if (entry.find("-virtual") == std::string::npos) a.machine_code.insert(arch);
    if (entry.find("-real") == std::string::npos) a.ptx.insert(arch);
  }
  return a;
}

// Flattens the README's text, for the promises below (a sentence may wrap anywhere).
std::string readme_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return std::regex_replace(text.str(), std::regex("\\s+"), " ");
}

int to_arch(const std::string& cc) { return static_cast<int>(std::stod(cc) * 10.0 + 0.5); }

std::set<int> archs_in(const std::string& listed) {
  std::set<int> found;
  const std::regex number("[0-9]+\\.[0-9]");
  for (auto it = std::sregex_iterator(listed.begin(), listed.end(), number); it != std::sregex_iterator(); ++it) {
    found.insert(to_arch(it->str()));
  }
  return found;
}

// The README's promise for the all-gpus preset: "built for compute capabilities 7.5, 8.0, ... and
// 9.0, plus PTX of 9.0".
Architectures all_gpus_from_readme(const std::string& path) {
  const std::string flat = readme_text(path);
  std::smatch m;
  const std::regex promise("built for compute capabilities ([0-9., and]+), plus PTX of ([0-9.]+)");
  if (!std::regex_search(flat, m, promise)) return {};
  return {archs_in(m[1]), {to_arch(m[2])}};
}

// The README's promise for a build without a GPU: "PTX for compute capabilities 7.5 and 9.0 only".
Architectures default_from_readme(const std::string& path) {
  const std::string flat = readme_text(path);
  std::smatch m;
  const std::regex promise("PTX for compute capabilities ([0-9., and]+) only");
  if (!std::regex_search(flat, m, promise)) return {};
  return {{}, archs_in(m[1])};
}

bool holds(const FatbinContainer& container, int arch, bool ptx) {
  return std::any_of(container.begin(), container.end(),
                     [&](const workbook::test::FatbinEntry& e) { return e.arch == arch && e.is_ptx == ptx; });
}

}  // namespace

TEST_CASE("the fatbin reader lists each container's machine code and PTX") {
  // One container: a 16-byte header, then a cubin entry for sm_75 and a PTX entry for
  // compute_90, each a 64-byte header followed by an 8-byte payload.
  std::vector<unsigned char> section(16 + 2 * (64 + 8), 0);
  auto put = [&](std::size_t at, auto value) { std::memcpy(section.data() + at, &value, sizeof(value)); };
  put(0, std::uint32_t{0xBA55ED50u});
  put(6, std::uint16_t{16});
  put(8, std::uint64_t{2 * (64 + 8)});
  for (int i = 0; i < 2; ++i) {
    const std::size_t entry = 16 + static_cast<std::size_t>(i) * (64 + 8);
    put(entry, std::uint16_t(i == 0 ? 2 : 1));
    put(entry + 4, std::uint32_t{64});
    put(entry + 8, std::uint64_t{8});
    put(entry + 28, std::uint32_t(i == 0 ? 75 : 90));
  }
  const auto containers = parse_fatbin_section(section);
  REQUIRE(containers.size() == 1);
  REQUIRE(containers[0].size() == 2);
  CHECK((!containers[0][0].is_ptx && containers[0][0].arch == 75));
  CHECK((containers[0][1].is_ptx && containers[0][1].arch == 90));

  put(16 + 4, std::uint32_t{0});  // an entry of no size would never move on: refused
  CHECK_THROWS(parse_fatbin_section(section));
  put(16 + 4, std::uint32_t{64});
  put(16 + 8, std::uint64_t{1000});  // an entry past its container's end: refused
  CHECK_THROWS(parse_fatbin_section(section));
  put(16 + 8, std::uint64_t{8});
  REQUIRE(parse_fatbin_section(section).size() == 1);

  section[0] = 0;  // no container magic: refused, not misread
  CHECK_THROWS(parse_fatbin_section(section));
  CHECK(parse_fatbin_section({}).empty());
}

TEST_CASE("the default architectures are the ones the README promises") {
  const Architectures promised = default_from_readme(WORKBOOK_README);
  INFO("README.md must say: without a GPU the build holds PTX for compute capabilities 7.5 and 9.0 only");
  REQUIRE(!promised.ptx.empty());
  const Architectures built_by_default = from_cmake_list(WORKBOOK_DEFAULT_CUDA_ARCHITECTURES);
  CHECK(built_by_default.machine_code.empty());
  CHECK(built_by_default.ptx == promised.ptx);
}

TEST_CASE("the all-gpus preset's architectures are the ones the README promises") {
  const Architectures promised = all_gpus_from_readme(WORKBOOK_README);
  INFO("README.md must say: the all-gpus preset is built for compute capabilities 7.5, ... and 9.0, plus PTX of 9.0");
  REQUIRE(!promised.machine_code.empty());
  const Architectures preset = from_cmake_list(WORKBOOK_ALL_GPUS_CUDA_ARCHITECTURES);
  CHECK(preset.machine_code == promised.machine_code);
  CHECK(preset.ptx == promised.ptx);
}

TEST_CASE("every chapter program holds code for each architecture of this build") {
  const std::string chosen = WORKBOOK_CUDA_ARCHITECTURES;
  if (chosen == "native" || chosen.rfind("all", 0) == 0) {
    SKIP("this build folder builds for CMAKE_CUDA_ARCHITECTURES=" + chosen + ", which names no list to check");
  }
  const Architectures wanted = from_cmake_list(chosen);
  for (const std::string& program : split(WORKBOOK_GPU_PROGRAMS, ',')) {
    CAPTURE(program);
    const auto containers = read_fatbin_containers(program);
    REQUIRE(!containers.empty());
    // Every translation unit with device code must carry every target: a kernel missing for one
    // GPU fails at its launch on that GPU (cudaErrorNoKernelImageForDevice), not at start-up.
    for (std::size_t c = 0; c < containers.size(); ++c) {
      CAPTURE(c);
      for (int arch : wanted.machine_code) {
        CAPTURE(arch);
        CHECK(holds(containers[c], arch, false));
      }
      for (int arch : wanted.ptx) {
        CAPTURE(arch);
        CHECK(holds(containers[c], arch, true));
      }
    }
  }
}
