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
    SearchOptions search;
  };
  auto o = std::make_shared<Options>();
  auto* cmd =
      app.add_subcommand("evaluate", "BLEU and exact match on a held-out split or a corpus");
  cmd->add_option("--checkpoint", o->checkpoint, "a run folder from anatomy train")->required();
  cmd->add_option("--split", o->split, "train | valid | test (of the data the run was trained on)")
      ->capture_default_str();
  cmd->add_option("--corpus", o->corpus, "evaluate on every pair of this TSV file instead");
  cmd->add_option("--format", o->format, "text | json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  o->search.add_to(*cmd);
  return [o] {
    training::Translator tr = training::Translator::load(o->checkpoint);
    const training::RunDir run{o->checkpoint};
    const auto meta = run.read_run();
    const auto spec = training::DataSpec::from_json(run.field<nlohmann::json>(meta, "data"));
    std::vector<data::Pair> pairs;
    if (!o->corpus.empty()) {
      // A file laid out like the run's corpus: a run trained --reverse reads it reversed too.
      pairs = data::read_tsv(o->corpus).pairs;
      if (spec.reverse)
        for (auto& p : pairs) std::swap(p.source, p.target);
    } else {
      // Read and split exactly as training did.
      pairs = training::read_translation_data(
                  spec, run.field<uint64_t>(meta, "seed"),
                  meta.value("options", nlohmann::json::object()).value("limit", int64_t{0}))
                  .splits.split(o->split);
    }
    std::vector<std::string> sources, refs;
    for (const auto& p : pairs) sources.push_back(p.source), refs.push_back(p.target);
    const int64_t beam = o->search.beam_for(tr);
    const float penalty = o->search.length_penalty_for(tr);
    const auto hyps = tr.translate(sources, beam, penalty);
    int64_t exact = 0;
    for (size_t i = 0; i < hyps.size(); ++i)
      exact += hyps[i] == tr.target->decode(tr.target->encode(refs[i]));
    const auto bleu = data::corpus_bleu(hyps, {refs});
    const double em =
        100.0 * static_cast<double>(exact) / static_cast<double>(std::max<size_t>(1, hyps.size()));
    // What was scored: the run's split by name, or the file given.
    const std::string scored =
        o->corpus.empty() ? fmt::format("{} split", o->split) : fmt::format("{}", o->corpus);
    if (o->format == "json") {
      nlohmann::json j{{"bleu", bleu.score},
                       {"exact_match", em},
                       {"sentences", hyps.size()},
                       {"beam", beam},
                       {"length_penalty", penalty}};
      if (o->corpus.empty())
        j["split"] = o->split;
      else
        j["corpus"] = o->corpus;
      fmt::print("{}\n", j.dump());
    } else {
      fmt::print("{} ({} sentences, {}):\n{}\nexact match = {:.2f}% ({} of {})\n", scored,
                 hyps.size(), beam > 1 ? fmt::format("beam {}", beam) : std::string("greedy"),
                 bleu.format(), em, exact, hyps.size());
    }
    return 0;
  };
}

}  // namespace anatomy::cli
