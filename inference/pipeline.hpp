// Pipeline: what TextClassifier and TextGenerator hold, as Hugging Face's pipelines do: a run
// folder's tokenizer and its trained model, loaded for inference.
#pragma once

#include <memory>
#include <string>

#include "models/models.hpp"
#include "tokenizers/tokenizers.hpp"

namespace anatomy::training {

template <class Model>
struct Pipeline {
  std::shared_ptr<text::Tokenizer> tokenizer;
  std::shared_ptr<Model> model;
};

// The tokenizer and trained weights of the run folder `dir`, whose run.json must name `task`
// (RunDir::read_run refuses another), with the model in eval mode. Defined for the two models
// the pipelines hold.
template <class Model>
Pipeline<Model> load_pipeline(const std::string& dir, const std::string& task);

}  // namespace anatomy::training
