// regression_cli.h: the flags of the regression problem, the same in chapters 04, 05 and 06.
//
//   workbook::regression::Config config;
//   workbook::regression::add_problem_options(app, config);  // --points --epochs --lr --noise --seed --print-every
//   if (auto code = workbook::parse_command_line(app, argc, argv)) return *code;
//   workbook::regression::validate(config);
#pragma once

#include "regression_problem.h"

#include <CLI/CLI.hpp>

namespace workbook::regression {

void add_problem_options(CLI::App& app, Config& config);

}  // namespace workbook::regression
