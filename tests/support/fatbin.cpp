// fatbin.cpp: a reader for the .nv_fatbin section of an ELF64 program (see fatbin.h).
//
// The layout, as nvcc 12 and 13 write it (little-endian):
//   container header, 16 bytes: u32 magic 0xBA55ED50, u16 version, u16 header size,
//                               u64 size of the entries that follow
//   entry header:               u16 kind (1 PTX, 2 cubin), u16 version, u32 header size,
//                               u64 payload size, ..., u32 architecture at byte 28
// Containers follow each other, each starting on an 8-byte boundary.
#include "fatbin.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace workbook::test {
namespace {

constexpr std::uint32_t kContainerMagic = 0xBA55ED50u;
constexpr std::uint16_t kKindPtx = 1;
constexpr std::uint16_t kKindCubin = 2;

template <typename T>
T read_at(const std::vector<unsigned char>& bytes, std::size_t offset) {
  if (offset + sizeof(T) > bytes.size()) throw std::runtime_error("fatbin: read past the end of the data");
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The bytes of the named section of an ELF64 little-endian file; empty when it has none.
std::vector<unsigned char> elf_section(const std::vector<unsigned char>& elf, const std::string& wanted) {
  if (elf.size() < 64 || std::memcmp(elf.data(), "\x7f" "ELF", 4) != 0 || elf[4] != 2 || elf[5] != 1) {
    throw std::runtime_error("not an ELF64 little-endian file");
  }
  const auto section_headers = read_at<std::uint64_t>(elf, 0x28);
  const auto header_size = read_at<std::uint16_t>(elf, 0x3A);
  const auto count = read_at<std::uint16_t>(elf, 0x3C);
  const auto names_index = read_at<std::uint16_t>(elf, 0x3E);
  auto header = [&](std::size_t i) { return section_headers + i * header_size; };
  const auto names_offset = read_at<std::uint64_t>(elf, header(names_index) + 0x18);
  for (std::size_t i = 0; i < count; ++i) {
    const auto name_offset = names_offset + read_at<std::uint32_t>(elf, header(i));
    if (name_offset >= elf.size()) throw std::runtime_error("ELF section name outside the file");
    const char* name = reinterpret_cast<const char*>(elf.data() + name_offset);
    if (wanted != std::string(name, strnlen(name, elf.size() - name_offset))) continue;
    const auto offset = read_at<std::uint64_t>(elf, header(i) + 0x18);
    const auto size = read_at<std::uint64_t>(elf, header(i) + 0x20);
    if (offset > elf.size() || size > elf.size() - offset) throw std::runtime_error(wanted + " outside the file");
    return {elf.begin() + static_cast<std::ptrdiff_t>(offset), elf.begin() + static_cast<std::ptrdiff_t>(offset + size)};
  }
  return {};
}

}  // namespace

std::vector<FatbinContainer> parse_fatbin_section(const std::vector<unsigned char>& section) {
  std::vector<FatbinContainer> containers;
  std::size_t offset = 0;
  while (offset + 16 <= section.size()) {
    if (read_at<std::uint32_t>(section, offset) != kContainerMagic) {
      throw std::runtime_error("fatbin: no container header at byte " + std::to_string(offset));
    }
    const auto header_size = read_at<std::uint16_t>(section, offset + 6);
    const auto entries_size = read_at<std::uint64_t>(section, offset + 8);
    const std::size_t end = offset + header_size + entries_size;
    if (end > section.size()) throw std::runtime_error("fatbin: a container runs past the section");
    FatbinContainer container;
    for (std::size_t entry = offset + header_size; entry < end;) {
      const auto kind = read_at<std::uint16_t>(section, entry);
      const auto entry_header_size = read_at<std::uint32_t>(section, entry + 4);
      const auto payload_size = read_at<std::uint64_t>(section, entry + 8);
      if (kind != kKindPtx && kind != kKindCubin) {
        throw std::runtime_error("fatbin: unknown entry kind " + std::to_string(kind));
      }
      // The header must hold the architecture field, and the entry must end inside its
      // container (a size of 0 would also never move on).
      const std::size_t room = end - entry;
      if (entry_header_size < 32 || entry_header_size > room || payload_size > room - entry_header_size) {
        throw std::runtime_error("fatbin: an entry at byte " + std::to_string(entry) + " does not fit its container");
      }
      container.push_back({kind == kKindPtx, static_cast<int>(read_at<std::uint32_t>(section, entry + 28))});
      entry += entry_header_size + payload_size;
    }
    containers.push_back(container);
    offset = (end + 7) / 8 * 8;  // the next container starts on an 8-byte boundary
  }
  return containers;
}

std::vector<FatbinContainer> read_fatbin_containers(const std::string& elf_path) {
  return parse_fatbin_section(elf_section(read_file(elf_path), ".nv_fatbin"));
}

}  // namespace workbook::test
