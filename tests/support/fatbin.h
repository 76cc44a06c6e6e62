// fatbin.h: what GPU code a built program carries, read from the program file itself.
//
// nvcc puts each translation unit's device code in a "fat binary" container, and the linker
// gathers the containers into the ELF section .nv_fatbin. Each container holds entries, one per
// target: machine code (a cubin) for one sm_XY, or PTX for one compute_XY that the driver can
// compile for newer GPUs. tests/test_build.cpp uses this to check that every chapter program
// holds code for every architecture the build promises.
#pragma once

#include <string>
#include <vector>

namespace workbook::test {

struct FatbinEntry {
  bool is_ptx = false;  // false: machine code (cubin)
  int arch = 0;         // 90 for sm_90 / compute_90
};

// One container: the device code of one translation unit.
using FatbinContainer = std::vector<FatbinEntry>;

// The containers of an ELF program, in file order. No .nv_fatbin section: an empty list (a
// program without device code). Throws std::runtime_error for a file that cannot be read or parsed.
std::vector<FatbinContainer> read_fatbin_containers(const std::string& elf_path);

// The same for the bytes of a .nv_fatbin section.
std::vector<FatbinContainer> parse_fatbin_section(const std::vector<unsigned char>& section);

}  // namespace workbook::test
