#include "data/bleu.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "autograd/tensor.hpp"
#include "tokenizers/unicode.hpp"

namespace anatomy::data {

namespace {

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
    s.replace(pos, from.size(), to);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// 13a's first rule: these ASCII symbols become tokens of their own.
bool is_13a_symbol(unsigned char c) {
  return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
         (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

// re.sub for a two-character pattern: left to right, non-overlapping.
template <typename Match, typename Emit>
std::string sub2(const std::string& s, Match match, Emit emit) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (i + 1 < s.size() && match(s[i], s[i + 1])) {
      out += emit(s[i], s[i + 1]);
      i += 2;
    } else {
      out += s[i++];
    }
  }
  return out;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

using Ngrams = std::map<std::vector<std::string>, int64_t>;

Ngrams ngrams(const std::vector<std::string>& words, int max_order) {
  Ngrams out;
  for (int n = 1; n <= max_order; ++n)
    for (size_t i = 0; i + n <= words.size(); ++i)
      ++out[std::vector<std::string>(words.begin() + i, words.begin() + i + n)];
  return out;
}

std::vector<std::string> preprocess(std::string s, const BleuOptions& o) {
  if (o.lowercase) s = text::to_lower(s);
  if (o.tokenize == "13a") return split(tokenize_13a(s));
  if (o.tokenize == "none") return split(s);
  throw Error(fmt::format("bleu: unknown tokenizer '{}' (13a or none)", o.tokenize));
}

struct Stats {
  std::vector<double> correct, total;
  int64_t sys_len = 0, ref_len = 0;
};

void add_sentence(Stats& st, const std::string& hyp, const std::vector<std::string>& refs,
                  const BleuOptions& o) {
  const auto h = preprocess(hyp, o);
  Ngrams max_ref;
  int64_t closest = -1, closest_diff = 0;
  for (const auto& r : refs) {
    const auto words = preprocess(r, o);
    const auto len = static_cast<int64_t>(words.size());
    const int64_t diff = std::abs(len - static_cast<int64_t>(h.size()));
    if (closest < 0 || diff < closest_diff || (diff == closest_diff && len < closest)) {
      closest = len;
      closest_diff = diff;
    }
    for (const auto& [g, c] : ngrams(words, o.max_ngram_order))
      max_ref[g] = std::max(max_ref[g], c);
  }
  st.sys_len += static_cast<int64_t>(h.size());
  st.ref_len += std::max<int64_t>(closest, 0);
  for (const auto& [g, c] : ngrams(h, o.max_ngram_order)) {
    const size_t n = g.size() - 1;
    st.total[n] += static_cast<double>(c);
    auto it = max_ref.find(g);
    if (it != max_ref.end()) st.correct[n] += static_cast<double>(std::min(c, it->second));
  }
}

// sacreBLEU's BLEU.compute_bleu.
BleuScore compute(Stats st, const BleuOptions& o) {
  const int N = o.max_ngram_order;
  double smooth_value = o.smooth_value.value_or(o.smooth_method == "floor" ? 0.1 : 1.0);
  if (o.smooth_method != "exp" && o.smooth_method != "none" && o.smooth_method != "floor" &&
      o.smooth_method != "add-k")
    throw Error(
        fmt::format("bleu: unknown smooth_method '{}' (exp, none, floor, add-k)", o.smooth_method));
  BleuScore s;
  s.precisions.assign(N, 0.0);
  double smooth_mteval = 1.0;
  int eff_order = N;
  for (int n = 1; n <= N; ++n) {
    if (o.smooth_method == "add-k" && n > 1) {
      st.correct[n - 1] += smooth_value;
      st.total[n - 1] += smooth_value;
    }
    if (st.total[n - 1] == 0) break;
    if (o.effective_order) eff_order = n;
    if (st.correct[n - 1] == 0) {
      if (o.smooth_method == "exp") {
        smooth_mteval *= 2;
        s.precisions[n - 1] = 100.0 / (smooth_mteval * st.total[n - 1]);
      } else if (o.smooth_method == "floor") {
        s.precisions[n - 1] = 100.0 * smooth_value / st.total[n - 1];
      }
    } else {
      s.precisions[n - 1] = 100.0 * st.correct[n - 1] / st.total[n - 1];
    }
  }
  s.sys_len = st.sys_len;
  s.ref_len = st.ref_len;
  if (st.sys_len < st.ref_len)
    s.bp = st.sys_len > 0
               ? std::exp(1.0 - static_cast<double>(st.ref_len) / static_cast<double>(st.sys_len))
               : 0.0;
  else
    s.bp = 1.0;
  double log_sum = 0;
  for (int n = 0; n < eff_order; ++n)
    log_sum += s.precisions[n] == 0.0 ? -9999999999.0 : std::log(s.precisions[n]);
  s.score = s.bp * std::exp(log_sum / eff_order);
  s.counts = st.correct;
  s.totals = st.total;
  return s;
}

}  // namespace

std::string tokenize_13a(const std::string& input) {
  std::string line = input;
  replace_all(line, "<skipped>", "");
  replace_all(line, "-\n", "");
  replace_all(line, "\n", " ");
  if (line.find('&') != std::string::npos) {
    replace_all(line, "&quot;", "\"");
    replace_all(line, "&amp;", "&");
    replace_all(line, "&lt;", "<");
    replace_all(line, "&gt;", ">");
  }
  line = " " + line + " ";
  std::string spaced;
  for (char c : line) {
    if (is_13a_symbol(static_cast<unsigned char>(c)))
      spaced += std::string(" ") + c + " ";
    else
      spaced += c;
  }
  // Period and comma unless preceded by a digit; unless followed by a digit; dash after a digit.
  spaced = sub2(
      spaced, [](char a, char b) { return !is_digit(a) && (b == '.' || b == ','); },
      [](char a, char b) { return std::string(1, a) + " " + b + " "; });
  spaced = sub2(
      spaced, [](char a, char b) { return (a == '.' || a == ',') && !is_digit(b); },
      [](char a, char b) { return std::string(" ") + a + " " + b; });
  spaced = sub2(
      spaced, [](char a, char b) { return is_digit(a) && b == '-'; },
      [](char a, char b) { return std::string(1, a) + " " + b + " "; });
  std::string out;
  for (const auto& w : split(spaced)) out += (out.empty() ? "" : " ") + w;
  return out;
}

BleuScore corpus_bleu(const std::vector<std::string>& hyps,
                      const std::vector<std::vector<std::string>>& refs, const BleuOptions& o) {
  if (o.max_ngram_order < 1) throw Error("bleu: max_ngram_order must be >= 1");
  if (refs.empty()) throw Error("bleu: at least one reference stream is needed");
  for (size_t k = 0; k < refs.size(); ++k)
    if (refs[k].size() != hyps.size())
      throw Error(fmt::format("bleu: reference stream {} has {} lines but there are {} hypotheses",
                              k + 1, refs[k].size(), hyps.size()));
  Stats st{std::vector<double>(o.max_ngram_order, 0.0),
           std::vector<double>(o.max_ngram_order, 0.0)};
  for (size_t i = 0; i < hyps.size(); ++i) {
    std::vector<std::string> r;
    for (const auto& stream : refs) r.push_back(stream[i]);
    add_sentence(st, hyps[i], r, o);
  }
  return compute(st, o);
}

BleuScore sentence_bleu(const std::string& hyp, const std::vector<std::string>& refs,
                        BleuOptions o) {
  std::vector<std::vector<std::string>> streams;
  for (const auto& r : refs) streams.push_back({r});
  return corpus_bleu({hyp}, streams, o);
}

std::string BleuScore::format() const {
  std::string prec;
  for (size_t i = 0; i < precisions.size(); ++i)
    prec += fmt::format("{}{:.1f}", i ? "/" : "", precisions[i]);
  const double ratio = ref_len ? static_cast<double>(sys_len) / static_cast<double>(ref_len) : 0.0;
  return fmt::format("BLEU = {:.2f} {} (BP = {:.3f} ratio = {:.3f} hyp_len = {} ref_len = {})",
                     score, prec, bp, ratio, sys_len, ref_len);
}

}  // namespace anatomy::data
