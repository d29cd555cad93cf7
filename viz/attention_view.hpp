// Pictures of attention.
//
// write_attention_html: a self-contained page in the spirit of BertViz's head view (no network,
// no external scripts): the tokens in two columns, a line from each query token on the left to
// each key token on the right, as opaque as the attention weight; a layer and a head selector
// ("all" overlays the heads in their colours); hovering a token shows only its lines.
// heatmap_svg / terminal_heatmap: one [rows, cols] weight matrix as a grid of shades.
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
};

// Writes the page atomically; sections are selectable on it.
void write_attention_html(const std::string& path, const std::string& title,
                          const std::vector<AttentionSection>& sections);

std::string heatmap_svg(const Tensor& weights, const std::vector<std::string>& rows,
                        const std::vector<std::string>& cols, const std::string& title);

// Shaded blocks (" ░▒▓█") with row labels: readable in any terminal or log.
std::string terminal_heatmap(const Tensor& weights, const std::vector<std::string>& rows,
                             const std::vector<std::string>& cols);

}  // namespace anatomy::viz
