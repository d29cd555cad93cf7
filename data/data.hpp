// Everything of the data layer in one include.
#pragma once

#include "data/batching.hpp"
#include "data/bleu.hpp"
#include "data/corpus.hpp"
#include "data/pairs.hpp"
#include "data/tasks.hpp"
