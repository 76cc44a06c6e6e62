// regression_cli.h: the flags of the regression problem, the same in chapters 04, 05 and 06.
//
//   workbook::regression::Config config;
//   workbook::regression::add_problem_options(app, config);  // --points --epochs --lr --noise --seed --print-every
//   if (auto code = workbook::parse_command_line(app, argc, argv)) return *code;
//   workbook::regression::validate(config);
//   report.json().update(workbook::regression::settings_json(config));  // the run's settings, same keys
#pragma once

#include "regression_problem.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace workbook::regression {

void add_problem_options(CLI::App& app, Config& config);

// The problem's settings under the keys every chapter's JSON uses (the plot and compare scripts
// read them): points, train_points, test_points, epochs, lr, noise, seed, print_every.
// --seed changes the data only through --noise (and, where a program has it, the batch order of
// --shuffle): given without them it would change nothing, so it is refused (UsageError).
void refuse_idle_seed(const CLI::App& app, const Config& config, bool shuffled = false, bool has_shuffle = false);

nlohmann::json settings_json(const Config& config);

}  // namespace workbook::regression
