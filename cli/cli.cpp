#include "cli/cli.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <new>
#include <string_view>

#include "autograd/autograd.hpp"
#include "checkpoints/checkpoints.hpp"
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

namespace {

// The number of single-character insertions, deletions and substitutions that turn a into b.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// " did you mean X?" (or "X or Y") for the names close to `word`: within a third of its length,
// and at least two edits for short words; "" when none is.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& names) {
  const size_t limit = std::max<size_t>(2, word.size() / 3);
  size_t best = limit + 1;
  std::vector<std::string> closest;
  for (const auto& name : names) {
    const size_t d = edit_distance(word, name);
    if (d < best) closest.clear(), best = d;
    if (d == best && d <= limit) closest.push_back(name);
  }
  if (closest.empty()) return "";
  std::string list = closest[0];
  for (size_t i = 1; i < closest.size(); ++i)
    list += (i + 1 == closest.size() ? " or " : ", ") + closest[i];
  return fmt::format("; did you mean {}?", list);
}

std::vector<std::string> command_names(CLI::App& app) {
  std::vector<std::string> names;
  for (const auto* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  return names;
}

// What a parse error means for someone who mistyped: an unknown command or option named, with
// the closest names; "" when the error is of another kind (CLI11's own message then stands).
std::string explain_mistake(CLI::App& app, int argc, char** argv) {
  if (argc < 2) return "";
  const std::string first = argv[1];
  if (first.starts_with("-")) return "";
  CLI::App* sub = nullptr;
  for (auto* s : app.get_subcommands({}))
    if (s->get_name() == first) sub = s;
  if (!sub)
    return fmt::format("anatomy: unknown command '{}'{} ('anatomy help' lists the commands)", first,
                       did_you_mean(first, command_names(app)));
  std::vector<std::string> options{"--help"};
  for (const auto* opt : sub->get_options())
    for (const auto& name : opt->get_lnames()) options.push_back("--" + name);
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!arg.starts_with("--") || arg == "--") continue;
    const std::string name = arg.substr(0, arg.find('='));
    // std::find, not std::ranges::find: libc++ before 15 has no range algorithms.
    if (std::find(options.begin(), options.end(), name) == options.end())
      return fmt::format("anatomy {}: unknown option {}{} ('anatomy help {}' lists its options)",
                         first, name, did_you_mean(name, options), first);
  }
  return "";
}

using Commands = std::vector<std::pair<CLI::App*, anatomy::cli::Runner>>;

// Every command on `app`, each with the function that runs it.
Commands add_commands(CLI::App& app) {
  Commands commands;
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
  return commands;
}

// The options every command takes.
struct CommonOptions {
  std::string kernels;
  bool allow_nonfinite = false;
  double max_memory_gb = 0;
};

void add_common_options(const Commands& commands, CommonOptions& o) {
  for (const auto& [sub, run] : commands) {
    sub->add_option("--max-memory", o.max_memory_gb,
                    "GB a model may take (default: this machine's memory); a config that needs "
                    "more is refused before anything is allocated")
        ->check(anatomy::cli::in_range(0.001, 1e6));
    sub->add_flag("--allow-nonfinite", o.allow_nonfinite,
                  "load weights that hold NaN or infinite values (refused by default)");
    // Every command runs on the fast kernels or on the plain reference ops
    // (autograd/dispatch.hpp).
    sub->add_option("--kernels", o.kernels,
                    "reference: the plain ops of autograd/; fast: the kernels of kernels/ "
                    "(default: ANATOMY_KERNELS if set, else fast)")
        ->check(CLI::IsMember({"reference", "fast"}));
  }
}

// `anatomy help` lists the commands, `anatomy help COMMAND` shows one's options.
int print_help(CLI::App& app, int argc, char** argv) {
  if (argc == 2) {
    fmt::print("{}", app.help());
    return 0;
  }
  for (auto* sub : app.get_subcommands({}))
    if (sub->get_name() == argv[2]) {
      fmt::print("{}", sub->help());
      return 0;
    }
  fmt::print(stderr, "anatomy: unknown command '{}'{} ('anatomy help' lists the commands)\n",
             argv[2], did_you_mean(argv[2], command_names(app)));
  return 1;
}

// Runs the command that was parsed; every error becomes one line on standard error and exit
// code 1.
int run_parsed(const Commands& commands, const CommonOptions& o) {
  try {
    anatomy::checkpoints::allow_nonfinite(o.allow_nonfinite);
    if (o.max_memory_gb > 0)
      anatomy::models::TransformerConfig::set_memory_limit(o.max_memory_gb * 1024 * 1024 * 1024);
    if (!o.kernels.empty())
      anatomy::set_kernels(o.kernels);
    else
      anatomy::kernels();  // an unknown ANATOMY_KERNELS is refused here, before any work
    for (const auto& [sub, run] : commands)
      if (sub->parsed()) return run();
    // app.parse requires one command, and every command is in `commands`: reaching here would
    // mean a command was added without its runner, which must not pass as a success.
    throw anatomy::Error("no command ran (a command without its runner in cli.cpp)");
  } catch (const anatomy::Error& e) {
    fmt::print(stderr, "anatomy: {}\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::string command = "?";
    for (const auto& [sub, run] : commands)
      if (sub->parsed()) command = sub->get_name();
    fmt::print(stderr,
               "anatomy {}: out of memory (an allocation failed). The model, the batch or the "
               "beam is larger than the memory this process may use; make it smaller, or give "
               "it more memory\n",
               command);
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "anatomy: {}\n", e.what());
    return 1;
  }
}

}  // namespace

int anatomy::cli::main(int argc, char** argv) {
  // Line by line into a log or a pipe too (`anatomy train ... | tee log`), not in 4 kB blocks.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  CLI::App app{"anatomy: a Transformer built from scratch, to learn how it works"};
  app.name("anatomy");
  app.set_version_flag("--version", "anatomy " ANATOMY_VERSION);
  app.require_subcommand(1);
  const Commands commands = add_commands(app);
  CommonOptions common;
  add_common_options(commands, common);
  if (argc >= 2 && std::string_view(argv[1]) == "help") return print_help(app, argc, argv);
  if (argc == 1) {  // no command: what there is to run, as `anatomy help` shows it
    fmt::print(stderr, "{}", app.help());
    return 1;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const bool asked = dynamic_cast<const CLI::CallForHelp*>(&e) ||
                       dynamic_cast<const CLI::CallForAllHelp*>(&e) ||
                       dynamic_cast<const CLI::CallForVersion*>(&e);
    const std::string mistake = asked ? "" : explain_mistake(app, argc, argv);
    if (mistake.empty()) return app.exit(e);
    fmt::print(stderr, "{}\n", mistake);
    return e.get_exit_code();
  }
  return run_parsed(commands, common);
}
