#include "inference/pipeline.hpp"

#include "checkpoints/checkpoints.hpp"
#include "run_folders/run_dir.hpp"

namespace anatomy::training {

template <class Model>
Pipeline<Model> load_pipeline(const std::string& dir, const std::string& task) {
  RunDir run{dir};
  run.read_run(task);
  Pipeline<Model> p;
  p.tokenizer = text::load_tokenizer(run.file("tokenizer"));
  {
    nn::init::SkipInitGuard skip;  // every parameter is loaded below
    p.model = std::make_shared<Model>(run.read_config());
  }
  checkpoints::load_weights(*p.model, run.weights(), run.read_config());
  p.model->eval();
  return p;
}

template Pipeline<models::TransformerForSequenceClassification> load_pipeline(
    const std::string& dir, const std::string& task);
template Pipeline<models::TransformerForCausalLM> load_pipeline(const std::string& dir,
                                                                const std::string& task);

}  // namespace anatomy::training
