// provenance.h: where a result came from. Every file a workbook program writes carries it: the
// --json object as its "provenance" key, the human report as its first line.
//
//   record_command_line(argc, argv);       // parse_command_line (cli.h) does this for every program
//   note_library("nccl", "2.28.3");        // a library the run used, before the report starts
//   nlohmann::json p = provenance();       // {"commit", "tree", "gpus", "driver", ..., "command"}
//   std::cout << provenance_line(p);       // "# provenance: commit 1a2b3c4d5e6f (clean), ..."
//
// The fields, the same as common/provenance.py writes for the Python scripts:
//   commit        the git commit the program was built from ("unknown" without git or CMake)
//   tree          "clean", or "modified" when tracked files outside */results/ and test-logs/ differed
//   gpus          [{"name", "uuid"}] of the devices this process sees (CUDA_VISIBLE_DEVICES applies)
//   driver        the NVIDIA kernel driver's version (580.159.04), else the CUDA driver API's
//   cuda_runtime  the libcudart this process loaded; cuda_toolkit: the nvcc that built it
//   libraries     {"nccl": "2.28.3"} where a run uses one (note_library)
//   host, run     the machine's host name; WORKBOOK_RUN, the regeneration that ran it (or null)
//   date          UTC, ISO 8601; command: the command line, paths under the workbook made relative
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace workbook {

void record_command_line(int argc, char** argv);
void note_library(const std::string& name, const std::string& version);

nlohmann::json provenance();
std::string provenance_line(const nlohmann::json& provenance);

}  // namespace workbook
