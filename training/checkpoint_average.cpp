#include "training/checkpoint_average.hpp"

#include <fmt/format.h>

#include "checkpoints/checkpoints.hpp"
#include "inference/translation_data.hpp"
#include "run_folders/run_dir.hpp"
#include "training/trainer.hpp"

namespace anatomy::training {

nn::StateDict average_state_dicts(const std::vector<std::string>& files) {
  if (files.empty()) throw Error("average: no checkpoints to average");
  nn::StateDict sum;
  for (size_t f = 0; f < files.size(); ++f) {
    const auto tensors = load_safetensors(files[f]).tensors;
    checkpoints::check_finite(tensors, files[f]);
    if (f == 0) {
      for (const auto& [name, t] : tensors) {
        if (!t.is_floating_point())
          throw Error(fmt::format("average: {} holds '{}' of a non-float type", files[f], name));
        sum[name] = t.contiguous().clone();
      }
      continue;
    }
    if (tensors.size() != sum.size())
      throw Error(fmt::format("average: {} holds {} tensors, {} holds {}", files[f], tensors.size(),
                              files[0], sum.size()));
    for (const auto& [name, t] : tensors) {
      auto it = sum.find(name);
      if (it == sum.end() || it->second.shape() != t.shape() || !t.is_floating_point())
        throw Error(fmt::format("average: {}'s '{}' has no twin of its shape and type in {}",
                                files[f], name, files[0]));
      it->second.add_(t);
    }
  }
  for (auto& [name, t] : sum) t.mul_(1.0f / static_cast<float>(files.size()));
  return sum;
}

AverageResult average_translation_run(const std::string& run_dir, int64_t n) {
  if (n < 2)
    throw Error(fmt::format("average: the number of checkpoints must be >= 2 (got {})", n));
  RunDir run{run_dir};
  auto meta = run.read_run("translation");
  AverageResult r;
  r.files = kept_checkpoints(run);
  if (r.files.size() < 2)
    throw Error(fmt::format(
        "average: {} keeps {} checkpoint(s) in checkpoints/, and averaging needs 2 or more; "
        "train with --average N to keep the last N",
        run_dir, r.files.size()));
  if (r.files.size() > static_cast<size_t>(n)) r.files.erase(r.files.begin(), r.files.end() - n);

  Translator tr = Translator::load(run_dir);
  NoGradGuard no_grad;
  tr.model->load_state_dict(average_state_dicts(r.files));
  // The validation pairs, read and split as training read them.
  const auto options = meta.value("options", nlohmann::json::object());
  const auto d =
      read_translation_data(DataSpec::from_json(run.field<nlohmann::json>(meta, "data")),
                            run.field<uint64_t>(meta, "seed"), options.value("limit", int64_t{0}));
  const Encoded valid = encode(d.splits.valid, *tr.source, *tr.target);
  const int64_t max_tokens =
      meta.value("recipe", nlohmann::json::object()).value("max_tokens", int64_t{1536});
  r.averaged = validate(tr, valid, max_tokens);
  // As train_translation chose it: the run's --select, or the default for its data.
  r.select = options.value("select", std::string());
  if (r.select.empty()) r.select = d.is_task ? "exact_match" : "bleu";
  r.best = meta.value("best", Metrics::object());
  r.kept = r.best.empty() || better_by(r.select)(r.averaged, r.best);
  if (r.kept) {
    tr.model->save(run.file("best/model.safetensors"));
    Metrics best = r.averaged;
    best["averaged"] = static_cast<int64_t>(r.files.size());
    meta["best"] = best;
    run.write_run(meta);
  }
  return r;
}

}  // namespace anatomy::training
