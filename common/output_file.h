// output_file.h: the files a program's flags name, checked before any work and written with the
// system's reason when that fails.
//
//   require_output_file("--json", path, ".json");   // UsageError (exit 2) before the run
//   write_output_file("--json", path, text);         // std::runtime_error (exit 1) after it
#pragma once

#include <string>

namespace workbook {

// An output file a flag names (--json, --trace, --csv), checked before any work: a name ending in
// `extension` (so that a slip such as `--json README.md` cannot overwrite a source file), not a
// folder, in a folder that exists, not an existing file of another kind (CMakePresets.json: only a
// report, a trace or a CSV of the workbook's is replaced), and a file this process can write
// (tried without truncating one that exists, and removed again if the try created it). UsageError otherwise, e.g.
// "--trace build: is a folder; name the file to write (e.g. build/trace.json)".
void require_output_file(const std::string& flag, const std::string& path, const std::string& extension);
// Two output flags naming one file (--trace a.json --json a.json): UsageError, as one would
// overwrite the other. An empty path or "-" (stdout) never clashes.
void require_distinct_outputs(const std::string& flag_a, const std::string& path_a, const std::string& flag_b,
                              const std::string& path_b);
// Writes `text` to the file an output flag named; std::runtime_error with the system's reason
// ("cannot write --json file 'out.json': No space left on device") when any step fails.
void write_output_file(const std::string& flag, const std::string& path, const std::string& text);
// An input file a flag names, checked before any work: it exists, is a file and can be opened.
// UsageError otherwise, e.g. "--one-gpu-sweep sweep.json: no such file".
void require_input_file(const std::string& flag, const std::string& path);

}  // namespace workbook
