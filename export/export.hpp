// export_to_pytorch: a run folder as a self-contained PyTorch package (anatomy export), so a run
// can continue on more machines or GPUs with torch.distributed and come back:
//   model.py            the chapter's classes in PyTorch, the book's style and parameter names
//   train.py            continues the run (DDP: torchrun --nproc_per_node N train.py ...)
//   safetensors_io.py   reads and writes the weights with nothing but torch
//   config.json, run.json, the tokenizers      as in the run folder
//   model.safetensors   the latest weights, per-head (book) attention layout
//   optimizer.safetensors  AdamW's moments by parameter name, and its step
//   data.safetensors    the training data as token ids (Python needs no tokenizer)
//   export.json         what the loop does: optimizer, schedule and its step, batching, ...
//   README.md           how to run it and bring it back
#pragma once

#include <filesystem>
#include <functional>
#include <string>

namespace anatomy::training {

void export_to_pytorch(const std::string& run_dir, const std::string& to);

// A language model run as GPT2LMHeadModel, a classifier with BERT's settings as
// BertForSequenceClassification: a folder (config.json, model.safetensors) that transformers'
// from_pretrained loads. Any other run is refused with the field that differs.
void export_to_hugging_face(const std::string& run_dir, const std::string& to);

// Writes the folder `to` (absent or empty) through `fill`, which writes into the folder it is
// given: beside `to` under a temporary name, renamed into place when complete, so that a failed
// or killed export leaves neither `to` nor a half folder that would block the retry. `who`
// starts the error message.
void write_folder_atomically(const std::string& to, const std::string& who,
                             const std::function<void(const std::filesystem::path&)>& fill);

}  // namespace anatomy::training
