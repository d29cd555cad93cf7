#include "cli/cli.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

#include "autograd/autograd.hpp"
#include "cli/commands.hpp"

CLI::Validator anatomy::cli::in_range(double min, double max) {
  const std::string range = fmt::format("[{:g}, {:g}]", min, max);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double v = 0;
        size_t used = 0;
        try {
          v = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != text.size() || !std::isfinite(v) || v < min || v > max)
          return fmt::format("must be a number in {} (got '{}')", range, text);
        return "";
      },
      "in " + range);
}

int anatomy::cli::main(int argc, char** argv) {
  // Line by line into a log or a pipe too (`anatomy train ... | tee log`), not in 4 kB blocks.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  CLI::App app{"anatomy: a Transformer built from scratch, to learn how it works"};
  app.set_version_flag("--version", "anatomy " ANATOMY_VERSION);
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, anatomy::cli::Runner>> commands;
  auto add = [&](anatomy::cli::Runner (*adder)(CLI::App&)) {
    const size_t before = app.get_subcommands({}).size();
    auto runner = adder(app);
    commands.push_back({app.get_subcommands({})[before], runner});
  };
  add(anatomy::cli::add_train_command);
  add(anatomy::cli::add_config_command);
  add(anatomy::cli::add_export_command);
  add(anatomy::cli::add_average_command);
  add(anatomy::cli::add_translate_command);
  add(anatomy::cli::add_evaluate_command);
  add(anatomy::cli::add_generate_command);
  add(anatomy::cli::add_attention_command);
  add(anatomy::cli::add_bleu_command);
  add(anatomy::cli::add_tokenize_command);
  add(anatomy::cli::add_run_command);
  // Every command runs on the fast kernels or on the plain reference ops (autograd/dispatch.hpp).
  std::string kernels;
  for (auto& [sub, run] : commands)
    sub->add_option("--kernels", kernels,
                    "reference: the plain ops of autograd/; fast: the kernels of kernels/ "
                    "(default: ANATOMY_KERNELS if set, else fast)")
        ->check(CLI::IsMember({"reference", "fast"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (!kernels.empty())
      anatomy::set_kernels(kernels);
    else
      anatomy::kernels();  // an unknown ANATOMY_KERNELS is refused here, before any work
    for (auto& [sub, run] : commands)
      if (sub->parsed()) return run();
  } catch (const anatomy::Error& e) {
    fmt::print(stderr, "anatomy: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "anatomy: {}\n", e.what());
    return 1;
  }
  return 0;
}
