// anatomy evaluate: BLEU and exact match of a trained model on a split of its data, or on a
// TSV corpus.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "data/data.hpp"
#include "training/training.hpp"

namespace anatomy::cli {

Runner add_evaluate_command(CLI::App& app) {
  struct Options {
    std::string checkpoint, split = "test", corpus, format = "text";
    int64_t beam = 1;
  };
  auto o = std::make_shared<Options>();
  auto* cmd =
      app.add_subcommand("evaluate", "BLEU and exact match on a held-out split or a corpus");
  cmd->add_option("--checkpoint", o->checkpoint, "a run folder from anatomy train")->required();
  cmd->add_option("--split", o->split, "train | valid | test (of the data the run was trained on)");
  cmd->add_option("--corpus", o->corpus, "evaluate on every pair of this TSV file instead");
  cmd->add_option("--format", o->format, "text | json")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--beam", o->beam, "beam size (1: greedy)")->check(CLI::PositiveNumber);
  return [o] {
    training::Translator tr = training::Translator::load(o->checkpoint);
    std::vector<data::Pair> pairs;
    if (!o->corpus.empty()) {
      pairs = data::read_tsv(o->corpus).pairs;
    } else {
      const training::RunDir run{o->checkpoint};
      const auto meta = run.read_run();
      const auto seed = run.field<uint64_t>(meta, "seed");
      const auto d = run.field<nlohmann::json>(meta, "data");
      if (d.contains("task")) {
        pairs = data::make_task(run.field<std::string>(d, "task"), seed).splits.split(o->split);
      } else {
        // Read and split exactly as training did.
        const std::string path = run.field<std::string>(d, "corpus");
        auto corpus = data::read_tsv(path, {.max_chars = d.value("max_chars", int64_t{0}),
                                            .skip_malformed = d.value("skip_malformed", false)});
        pairs = data::split_corpus(std::move(corpus.pairs), seed, path).split(o->split);
      }
    }
    std::vector<std::string> sources, refs;
    for (const auto& p : pairs) sources.push_back(p.source), refs.push_back(p.target);
    const auto hyps = tr.translate(sources, o->beam);
    int64_t exact = 0;
    for (size_t i = 0; i < hyps.size(); ++i)
      exact += hyps[i] == tr.target->decode(tr.target->encode(refs[i]));
    const auto bleu = data::corpus_bleu(hyps, {refs});
    const double em =
        100.0 * static_cast<double>(exact) / static_cast<double>(std::max<size_t>(1, hyps.size()));
    if (o->format == "json") {
      fmt::print(
          "{}\n",
          nlohmann::json{{"bleu", bleu.score}, {"exact_match", em}, {"sentences", hyps.size()}}
              .dump());
    } else {
      fmt::print("{}\nexact match = {:.2f}% ({} of {} sentences)\n", bleu.format(), em, exact,
                 hyps.size());
    }
    return 0;
  };
}

}  // namespace anatomy::cli
