#include "export/export.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "checkpoints/checkpoints.hpp"
#include "inference/translation_data.hpp"
#include "io/input_file.hpp"
#include "models/models.hpp"
#include "run_folders/run_dir.hpp"
#include "training/trainer.hpp"

namespace anatomy::training {

// The Python files of export/pytorch/, embedded as strings by export/CMakeLists.txt.
extern const char* const kExportModelPy;
extern const char* const kExportTrainPy;
extern const char* const kExportSafetensorsPy;
extern const char* const kExportReadme;

namespace fs = std::filesystem;

namespace {

// Flat ids and their row offsets: [ids of row 0, ids of row 1, ...], [0, n0, n0 + n1, ...].
void add_rows(nn::StateDict& out, const std::string& name,
              const std::vector<std::vector<int64_t>>& rows) {
  std::vector<int64_t> flat, offsets{0};
  for (const auto& r : rows) {
    flat.insert(flat.end(), r.begin(), r.end());
    offsets.push_back(static_cast<int64_t>(flat.size()));
  }
  out[name + "_ids"] = from_vector(flat, {static_cast<int64_t>(flat.size())});
  out[name + "_offsets"] = from_vector(offsets, {static_cast<int64_t>(offsets.size())});
}

// Refuses, before anything is read or written, a run that the exported package cannot continue:
// another kind of run, one without a recipe, parts the export does not cover, a destination
// in use, no training state. Returns the training state's path.
std::string check_exportable(const RunDir& run, const nlohmann::json& meta,
                             const models::TransformerConfig& config, const std::string& to) {
  const std::string kind = meta.value("kind", "");
  if (kind != "translation" && kind != "lm")
    throw Error(fmt::format("export: {} holds a {} run; translation and lm runs can be exported",
                            run.path, kind.empty() ? "?" : kind));
  if (!meta.contains("recipe"))
    throw Error(
        fmt::format("export: {}'s run.json has no 'recipe' (it was trained by an older "
                    "anatomy); train it again to export it",
                    run.path));
  for (const auto& [field, value, supported] :
       {std::tuple{"norm_type", config.norm_type, "layer_norm"},
        std::tuple{"ffn_type", config.ffn_type, "feed_forward"},
        std::tuple{"position_embedding_type", config.position_embedding_type,
                   "absolute or sinusoidal"}})
    if (std::string(supported).find(value) == std::string::npos)
      throw Error(fmt::format(
          "export: {} '{}' is not one the export covers (it covers {}; docs/limitations.md)", field,
          value, supported));
  if (fs::exists(to) && !fs::is_empty(to))
    throw Error(fmt::format("export: {} exists and is not empty; choose another --to", to));
  const std::string training_state = run.file("last/training.safetensors");
  if (!fs::exists(training_state))
    throw Error(
        fmt::format("export: {} has no last/training.safetensors to continue from", run.path));
  return training_state;
}

// The run's model with the training state's weights.
std::shared_ptr<nn::Module> load_model(const std::string& kind,
                                       const models::TransformerConfig& config,
                                       const SafetensorsFile& file,
                                       const std::string& training_state) {
  std::shared_ptr<nn::Module> model;
  if (kind == "translation")
    model = std::make_shared<models::Seq2SeqTransformer>(config);
  else
    model = std::make_shared<models::TransformerForCausalLM>(config);
  for (const std::string key : {"optimizer.step", "step"})
    if (!file.tensors.count(key) || file.tensors.at(key).numel() != 1)
      throw Error(
          fmt::format("export: {} has no scalar '{}': not a training state", training_state, key));
  nn::StateDict weights;
  for (const auto& [k, t] : file.tensors)
    if (k.starts_with("model.")) weights[k.substr(6)] = t;
  checkpoints::check_finite(weights, training_state);
  model->load_state_dict(weights);
  return model;
}

// AdamW's moments by the book's parameter names ("exp_avg.<name>", "exp_avg_sq.<name>") and its
// step, as train.py loads them.
nn::StateDict book_optimizer_state(nn::Module& model, const SafetensorsFile& file,
                                   const std::string& training_state, int64_t H) {
  // The optimizer's state must be one --resume would load into this model: AdamW's buffers, for
  // parameters the model has, each of its parameter's shape (train.py would fail on it later,
  // in PyTorch's words).
  nn::StateDict optimizer_state;
  for (const auto& [k, t] : file.tensors)
    if (k.starts_with("optimizer.")) optimizer_state[k.substr(10)] = t;
  try {
    nn::AdamW(model.parameters(), {}).check_state_dict(optimizer_state);
  } catch (const Error& e) {
    throw Error(fmt::format("export: {} holds an optimizer state this model cannot take: {}",
                            training_state, e.what()));
  }
  // The optimizer's state is indexed like model.parameters(): name it like them, then convert
  // the fused attention rows exactly as the weights are.
  nn::StateDict exp_avg, exp_avg_sq;
  const auto named = model.named_parameters();
  for (size_t i = 0; i < named.size(); ++i) {
    const std::string prefix = fmt::format("optimizer.state.{}.", i);
    if (file.tensors.count(prefix + "exp_avg") && file.tensors.count(prefix + "exp_avg_sq")) {
      exp_avg[named[i].first] = file.tensors.at(prefix + "exp_avg");
      exp_avg_sq[named[i].first] = file.tensors.at(prefix + "exp_avg_sq");
    }
  }
  nn::StateDict optimizer;
  for (const auto& [k, t] : checkpoints::to_book_layout(exp_avg, H)) optimizer["exp_avg." + k] = t;
  for (const auto& [k, t] : checkpoints::to_book_layout(exp_avg_sq, H))
    optimizer["exp_avg_sq." + k] = t;
  optimizer["step"] = file.tensors.at("optimizer.step");
  return optimizer;
}

// The training data as token ids, so that Python needs no tokenizer: a translation run's
// training pairs read as training read them, or the first nine tenths of a language model's text.
nn::StateDict training_data_as_ids(const RunDir& run, const nlohmann::json& meta,
                                   const std::string& kind,
                                   const models::TransformerConfig& config) {
  nn::StateDict data;
  if (kind == "translation") {
    const auto td = read_translation_data(
        DataSpec::from_json(run.field<nlohmann::json>(meta, "data")),
        run.field<uint64_t>(meta, "seed"),
        meta.value("options", nlohmann::json::object()).value("limit", int64_t{0}));
    auto source = text::load_tokenizer(run.file("source_tokenizer"));
    auto target = text::load_tokenizer(run.file("target_tokenizer"));
    Encoded train = encode(td.splits.train, *source, *target);
    drop_too_long(train, config.max_position_embeddings);
    add_rows(data, "source", train.src);
    add_rows(data, "target", train.tgt);
  } else {
    const std::string path = run.field<std::string>(meta, "text");
    std::ifstream f = open_input("export", path, "the run's text");
    const std::string text((std::istreambuf_iterator<char>(f)), {});
    const auto ids = text::load_tokenizer(run.file("tokenizer"))->encode(text);
    const std::vector<int64_t> train(ids.begin(),
                                     ids.begin() + static_cast<int64_t>(ids.size() * 9 / 10));
    data["ids"] = from_vector(train, {static_cast<int64_t>(train.size())});
  }
  return data;
}

// export.json: what the loop does (the run's recipe) and where it stands (epoch, schedule step).
nlohmann::json loop_info(const RunDir& run, const nlohmann::json& meta, const std::string& kind,
                         const SafetensorsFile& file, const std::string& training_state) {
  nlohmann::json info = run.field<nlohmann::json>(meta, "recipe");
  info["kind"] = kind;
  info["seed"] = meta["seed"];
  const int64_t step = file.tensors.at("step").item<int64_t>();
  info["epoch"] = read_position({step, file.metadata}, training_state).epoch;
  info["schedule"]["step"] =
      file.tensors.count("scheduler.step") && file.tensors.at("scheduler.step").numel() == 1
          ? file.tensors.at("scheduler.step").item<int64_t>()
          : step;
  return info;
}

}  // namespace

void export_to_pytorch(const std::string& run_dir, const std::string& to) {
  RunDir run{run_dir};
  const auto meta = run.read_run();
  const auto config = run.read_config();
  const std::string training_state = check_exportable(run, meta, config, to);
  const std::string kind = meta.value("kind", "");
  const auto file = load_safetensors(training_state);
  const int64_t H = config.num_attention_heads;
  const auto model = load_model(kind, config, file, training_state);
  const nn::StateDict optimizer = book_optimizer_state(*model, file, training_state, H);
  const nn::StateDict data = training_data_as_ids(run, meta, kind, config);
  const nlohmann::json info = loop_info(run, meta, kind, file, training_state);

  write_folder_atomically(to, "export", [&](const fs::path& dir) {
    const auto out = [&](const std::string& name) { return (dir / name).string(); };
    write_file_atomically(out("model.py"), kExportModelPy);
    write_file_atomically(out("train.py"), kExportTrainPy);
    write_file_atomically(out("safetensors_io.py"), kExportSafetensorsPy);
    write_file_atomically(out("README.md"), kExportReadme);
    write_file_atomically(out("export.json"), info.dump(2) + "\n");
    save_safetensors(out("model.safetensors"), checkpoints::to_book_layout(model->state_dict(), H));
    save_safetensors(out("optimizer.safetensors"), optimizer);
    save_safetensors(out("data.safetensors"), data);
    for (const auto& entry : fs::directory_iterator(run_dir)) {
      const std::string name = entry.path().filename().string();
      if (name == "config.json" || name == "run.json" ||
          name.find("tokenizer") != std::string::npos)
        fs::copy_file(entry.path(), out(name), fs::copy_options::overwrite_existing);
    }
  });
}

void write_folder_atomically(const std::string& to, const std::string& who,
                             const std::function<void(const fs::path&)>& fill) {
  const fs::path target = fs::absolute(to);
  const fs::path partial =
      target.parent_path() / fmt::format(".{}.partial-{}", target.filename().string(), getpid());
  remove_stale_leftovers(target.parent_path().string(),
                         fmt::format(".{}.partial-", target.filename().string()));
  std::error_code ec;
  fs::remove_all(partial, ec);
  fs::create_directories(partial, ec);
  if (ec)
    throw Error(fmt::format("{}: cannot create {} ({})", who, partial.string(), ec.message()));
  try {
    fill(partial);
    if (fs::exists(target)) fs::remove(target);  // empty: the caller checked
    fs::rename(partial, target);
  } catch (const std::exception& e) {
    fs::remove_all(partial, ec);
    throw Error(fmt::format("{}: cannot write {} ({}); nothing was left there", who, to, e.what()));
  }
}

}  // namespace anatomy::training
