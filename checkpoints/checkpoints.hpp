// Checkpoint layouts: how a file's tensor names map onto the chapter's classes. The book's
// per-head attention and the fused one convert into each other (state_dict_layout.hpp), and a
// Hugging Face BERT checkpoint loads into the book's encoder (bert_checkpoint.hpp). The file
// format itself, safetensors, is in io/.
#pragma once

#include "checkpoints/bert_checkpoint.hpp"
#include "checkpoints/gpt2_checkpoint.hpp"
#include "checkpoints/state_dict_layout.hpp"
