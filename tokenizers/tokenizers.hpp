// Everything of the tokenizers layer in one include.
#pragma once

#include "tokenizers/bert_tokenizer.hpp"
#include "tokenizers/bpe_merges.hpp"
#include "tokenizers/bpe_tokenizer.hpp"
#include "tokenizers/char_tokenizer.hpp"
#include "tokenizers/hugging_face_tokenizer.hpp"
#include "tokenizers/tokenizer.hpp"
#include "tokenizers/truncation.hpp"
#include "tokenizers/unicode.hpp"
#include "tokenizers/vocabulary.hpp"
#include "tokenizers/word_tokenizer.hpp"
#include "tokenizers/wordpiece.hpp"
