#include "io/print.hpp"

#include <cmath>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"

namespace anatomy {

PrintOptions& print_options() {
  static PrintOptions options;
  return options;
}

namespace {

// The elements that will be shown: everything, or the edge items of each dim when summarizing.
void collect_shown(const Tensor& t, bool summarize, std::vector<double>& out) {
  const auto& o = print_options();
  if (t.dim() == 0) {
    out.push_back(t.item<double>());
    return;
  }
  const int64_t n = t.size(0);
  auto visit = [&](int64_t i) {
    Tensor row = t.detach().select(0, i);
    if (row.dim() == 0)
      out.push_back(row.item<double>());
    else
      collect_shown(row, summarize, out);
  };
  if (summarize && n > 2 * o.edgeitems) {
    for (int64_t i = 0; i < o.edgeitems; ++i) visit(i);
    for (int64_t i = n - o.edgeitems; i < n; ++i) visit(i);
  } else {
    for (int64_t i = 0; i < n; ++i) visit(i);
  }
}

// PyTorch's _Formatter: picks integer, fixed or scientific mode and one width for all values.
class Formatter {
 public:
  Formatter(const std::vector<double>& values, bool floating) : floating_(floating) {
    const int p = print_options().precision;
    if (!floating_) {
      for (double v : values)
        width_ = std::max(width_, fmt::format("{}", static_cast<int64_t>(v)).size());
      return;
    }
    std::vector<double> finite;
    for (double v : values)
      if (std::isfinite(v) && v != 0.0) finite.push_back(v);
    if (finite.empty()) {
      for (double v : values) width_ = std::max(width_, format(v).size());
      return;
    }
    double lo = std::abs(finite[0]), hi = lo;
    for (double v : finite) {
      lo = std::min(lo, std::abs(v));
      hi = std::max(hi, std::abs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    if (int_mode_) {
      sci_mode_ = hi / lo > 1000.0 || hi > 1e8;
    } else {
      sci_mode_ = hi / lo > 1000.0 || hi > 1e8 || lo < 1e-4;
    }
    for (double v : finite) {
      std::string s = sci_mode_   ? fmt::format("{:.{}e}", v, p)
                      : int_mode_ ? fmt::format("{:.0f}", v) + "."
                                  : fmt::format("{:.{}f}", v, p);
      width_ = std::max(width_, s.size());
    }
  }

  std::string format(double v) const {
    const int p = print_options().precision;
    std::string s;
    if (!floating_) {
      s = fmt::format("{}", static_cast<int64_t>(v));
    } else if (std::isnan(v)) {
      s = "nan";
    } else if (std::isinf(v)) {
      s = v > 0 ? "inf" : "-inf";
    } else if (sci_mode_) {
      s = fmt::format("{:.{}e}", v, p);
    } else if (int_mode_) {
      s = fmt::format("{:.0f}", v) + ".";
    } else {
      s = fmt::format("{:.{}f}", v, p);
    }
    return std::string(width_ > s.size() ? width_ - s.size() : 0, ' ') + s;
  }
  size_t width() const { return width_; }

 private:
  bool floating_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  size_t width_ = 1;
};

std::string vector_str(const Tensor& t, int64_t indent, bool summarize, const Formatter& f) {
  const auto& o = print_options();
  const int64_t element_length = static_cast<int64_t>(f.width()) + 2;
  const int64_t per_line = std::max<int64_t>(1, (o.linewidth - indent) / element_length);
  std::vector<std::string> data;
  const int64_t n = t.size(0);
  auto value = [&](int64_t i) { return f.format(t.detach().select(0, i).item<double>()); };
  if (summarize && n > 2 * o.edgeitems) {
    for (int64_t i = 0; i < o.edgeitems; ++i) data.push_back(value(i));
    data.push_back(" ...");
    for (int64_t i = n - o.edgeitems; i < n; ++i) data.push_back(value(i));
  } else {
    for (int64_t i = 0; i < n; ++i) data.push_back(value(i));
  }
  std::string s = "[";
  for (size_t i = 0; i < data.size(); ++i) {
    if (i > 0)
      s += static_cast<int64_t>(i) % per_line == 0 ? ",\n" + std::string(indent + 1, ' ') : ", ";
    s += data[i];
  }
  return s + "]";
}

std::string tensor_str(const Tensor& t, int64_t indent, bool summarize, const Formatter& f) {
  if (t.dim() == 0) return f.format(t.item<double>());
  if (t.dim() == 1) return vector_str(t, indent, summarize, f);
  const auto& o = print_options();
  std::vector<std::string> slices;
  const int64_t n = t.size(0);
  auto sub = [&](int64_t i) {
    return tensor_str(t.detach().select(0, i), indent + 1, summarize, f);
  };
  if (summarize && n > 2 * o.edgeitems) {
    for (int64_t i = 0; i < o.edgeitems; ++i) slices.push_back(sub(i));
    slices.push_back("...");
    for (int64_t i = n - o.edgeitems; i < n; ++i) slices.push_back(sub(i));
  } else {
    for (int64_t i = 0; i < n; ++i) slices.push_back(sub(i));
  }
  std::string sep = ",";
  sep.append(static_cast<size_t>(t.dim() - 1), '\n');
  sep.append(static_cast<size_t>(indent + 1), ' ');
  std::string s = "[";
  for (size_t i = 0; i < slices.size(); ++i) {
    if (i) s += sep;
    s += slices[i];
  }
  return s + "]";
}

}  // namespace

std::string to_string(const Tensor& t) {
  if (!t.defined()) return "tensor(undefined)";
  const std::string prefix = "tensor(";
  const int64_t indent = static_cast<int64_t>(prefix.size());
  std::vector<std::string> suffixes;
  std::string body;
  if (t.numel() == 0) {
    body = "[]";
    const std::string dims = t.shape().str();
    if (t.dim() != 1) suffixes.push_back("size=(" + dims.substr(1, dims.size() - 2) + ")");
  } else {
    const bool summarize = t.numel() > print_options().threshold;
    std::vector<double> shown;
    collect_shown(t, summarize, shown);
    Formatter f(shown, t.dtype() == Dtype::Float32);
    body = tensor_str(t, indent, summarize, f);
  }
  if (t.requires_grad()) {
    if (t.grad_fn())
      suffixes.push_back("grad_fn=<" + t.grad_fn()->name + ">");
    else
      suffixes.push_back("requires_grad=True");
  }
  // PyTorch's _add_suffixes: a suffix goes on a new line when it would pass the line width.
  std::string s = prefix + body;
  const auto nl = s.rfind('\n');
  int64_t last_line = static_cast<int64_t>(s.size()) -
                      (nl == std::string::npos ? -1 : static_cast<int64_t>(nl)) + 1;
  for (const auto& suffix : suffixes) {
    const auto len = static_cast<int64_t>(suffix.size());
    if (last_line + len + 2 > print_options().linewidth) {
      s += ",\n" + std::string(indent, ' ') + suffix;
      last_line = indent + len;
    } else {
      s += ", " + suffix;
      last_line += len + 2;
    }
  }
  return s + ")";
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << to_string(t); }
std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << to_string(s); }

}  // namespace anatomy
