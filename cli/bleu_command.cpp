// anatomy bleu: corpus BLEU of a hypothesis file against reference files, as sacreBLEU.
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "data/bleu.hpp"
#include "io/input_file.hpp"

namespace anatomy::cli {

std::vector<std::string> read_lines(std::istream& in);

Runner add_bleu_command(CLI::App& app) {
  struct Options {
    std::string format = "text", tokenize = "13a";
    bool lowercase = false;
    std::vector<std::string> files;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "bleu", "Corpus BLEU exactly as sacreBLEU: bleu HYP_FILE REF_FILE [REF_FILE...]");
  cmd->add_option("--format", o->format, "text | json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->add_option("--tokenize", o->tokenize, "13a | none")
      ->check(CLI::IsMember({"13a", "none"}))
      ->capture_default_str();
  cmd->add_flag("--lowercase", o->lowercase, "compare lower-cased text");
  cmd->add_option("files", o->files, "the hypotheses, then one or more references")
      ->required()
      ->expected(2, -1);
  return [o] {
    std::vector<std::vector<std::string>> streams;
    for (const auto& path : o->files) {
      std::ifstream f = open_input("bleu", path);
      streams.push_back(read_lines(f));
    }
    const auto hyps = streams[0];
    streams.erase(streams.begin());
    for (size_t k = 0; k < streams.size(); ++k)
      if (streams[k].size() != hyps.size())
        throw Error(fmt::format("bleu: {} has {} lines but {} has {}", o->files[k + 1],
                                streams[k].size(), o->files[0], hyps.size()));
    const auto s =
        data::corpus_bleu(hyps, streams, {.tokenize = o->tokenize, .lowercase = o->lowercase});
    if (o->format == "json")
      fmt::print("{}\n", nlohmann::json{{"score", s.score},
                                        {"counts", s.counts},
                                        {"totals", s.totals},
                                        {"precisions", s.precisions},
                                        {"bp", s.bp},
                                        {"sys_len", s.sys_len},
                                        {"ref_len", s.ref_len}}
                             .dump());
    else
      fmt::print("{}\n", s.format());
    return 0;
  };
}

}  // namespace anatomy::cli
