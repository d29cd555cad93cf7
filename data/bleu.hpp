// BLEU exactly as sacreBLEU 2.x computes it: the 13a tokenizer (mteval-v13a), n-grams up to
// order 4 clipped by the references, brevity penalty against the closest reference length,
// and its smoothing methods (exp by default for corpus BLEU; none, floor, add-k).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace anatomy::data {

struct BleuOptions {
  std::string tokenize = "13a";  // or "none"
  bool lowercase = false;
  int max_ngram_order = 4;
  std::string smooth_method = "exp";   // "exp", "none", "floor", "add-k"
  std::optional<double> smooth_value;  // floor: 0.1, add-k: 1 by default
  bool effective_order = false;        // sentence BLEU: only orders with n-grams count
};

struct BleuScore {
  double score = 0, bp = 0;
  std::vector<double> counts, totals, precisions;
  int64_t sys_len = 0, ref_len = 0;
  // sacreBLEU's line: "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17
  // ref_len = 18)"
  std::string format() const;
};

// references[k][i] is the k-th reference of hypothesis i.
BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references,
                      const BleuOptions& options = {});
// sacreBLEU's sentence_bleu defaults: exp smoothing with effective order.
BleuScore sentence_bleu(const std::string& hypothesis, const std::vector<std::string>& references,
                        BleuOptions options = {.effective_order = true});

std::string tokenize_13a(const std::string& line);

}  // namespace anatomy::data
