// Pictures of attention.
//
// write_attention_html: one self-contained page (no network, no external scripts) with BertViz's
// three views of every section:
//   head view   the tokens in two columns, a line from each query (left) to each key (right) as
//               opaque as the weight; a layer selector, one coloured square per head (it opens on
//               head 0; click: show or hide a head; double-click: that head alone; a button shows
//               every head), hovering a token shows
//               only its lines and leaving restores them; for a sentence pair, a filter to the
//               attention from sentence A to B, B to A, ...
//   model view  every layer x head as a thumbnail; a click enlarges it.
//   neuron view for one layer, head and query token: the query vector q, each key vector k,
//               q x k elementwise, q . k / sqrt(d) and its softmax over the keys.
// heatmap_svg: one [rows, cols] matrix as coloured cells sized to fit a laptop screen, with a
// colour bar: white at 0, blue below and red above for values of both signs (position
// encodings, biases), white to dark blue for one sign (attention weights).
// terminal_heatmap: the same as shaded blocks, column labels written downwards.
#pragma once

#include <string>
#include <vector>

#include "autograd/tensor.hpp"

namespace anatomy::viz {

// One kind of attention: queries over `left` tokens, keys over `right` tokens, and per layer a
// [heads, len(left), len(right)] tensor of weights (batch dimension removed).
struct AttentionSection {
  std::string name;  // "encoder self-attention", "encoder-decoder attention", ...
  std::vector<std::string> left, right;
  std::vector<Tensor> layers;
  // A BERT pair ([CLS] A [SEP] B [SEP], one input): where sentence B starts; -1 for one input.
  int64_t sentence_b_start = -1;
  // A decoder's rows: the token each query position predicts (the next one); empty otherwise.
  std::vector<std::string> predicts;
  // A decoder's self-attention: query i sees keys 0..i only (the neuron view leaves the rest out).
  bool causal = false;
  // The neuron view's vectors, per layer [heads, len(left), D] and [heads, len(right), D]
  // (Attention::last_queries_keys without the batch dimension); empty: no neuron view.
  std::vector<Tensor> queries, keys;
};

// Writes the page atomically; sections are selectable on it. `note`, when given, is shown under
// the title (what the reader should know first, e.g. that the weights are untrained).
void write_attention_html(const std::string& path, const std::string& title,
                          const std::vector<AttentionSection>& sections,
                          const std::string& note = "");

// The note of a page drawn from untrained weights: why its attention looks uniform.
inline const char* kUntrainedNote =
    "These weights are untrained (random): every query spreads its attention almost evenly over "
    "the keys, so the lines look alike and uniform. A trained model's heads concentrate on a few "
    "keys each; see a pretrained BERT with anatomy attention --model-dir DIR.";

std::string heatmap_svg(const Tensor& weights, const std::vector<std::string>& rows,
                        const std::vector<std::string>& cols, const std::string& title);

// Shaded blocks (" ░▒▓█") with row labels, and column labels one character per line below:
// readable in any terminal or log.
std::string terminal_heatmap(const Tensor& weights, const std::vector<std::string>& rows,
                             const std::vector<std::string>& cols);

}  // namespace anatomy::viz
