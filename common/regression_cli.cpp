// regression_cli.cpp: the regression problem's flags.
#include "regression_cli.h"

#include "cli.h"

namespace workbook::regression {

void add_problem_options(CLI::App& app, Config& config) {
  add_size_option(app, "--points", config.points, "number of points N, e.g. 5000000 or 5M (X = i * 2e-6, first 80% train)");
  app.add_option("--epochs", config.epochs, "full-batch gradient-descent epochs (1 to 1000000)")->type_name("E");
  app.add_option("--lr", config.lr, "SGD learning rate")->type_name("LR");
  app.add_option("--noise", config.noise, "standard deviation of Gaussian noise on y (cuRAND)")->type_name("SIGMA");
  add_seed_option(app, config.seed, "cuRAND seed of the noise");
  app.add_option("--print-every", config.print_every, "show the loss every this many epochs")->type_name("K");
}

void refuse_idle_seed(const CLI::App& app, const Config& config, bool shuffled, bool has_shuffle) {
  if (app.count("--seed") == 0 || config.noise > 0.0 || shuffled) return;
  throw UsageError(has_shuffle ? "--seed seeds --noise and --shuffle: without either it changes nothing"
                               : "--seed seeds --noise: without it it changes nothing");
}

nlohmann::json settings_json(const Config& config) {
  const Split split = split_of(config.points);
  return {{"points", config.points}, {"train_points", split.train}, {"test_points", split.test},
          {"epochs", config.epochs}, {"lr", config.lr},
          {"noise", config.noise},   {"seed", config.seed},
          {"print_every", config.print_every}};
}

}  // namespace workbook::regression
