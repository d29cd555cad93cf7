// Training checkpoints: model, optimizer, schedule, random generator and step in one
// safetensors file, so a resumed run continues exactly as the uninterrupted one would.
//
// Keys: "model.<dotted name>", "optimizer.<key>", "scheduler.step", "rng", "step"; any extra
// strings go to the file's __metadata__. Loading checks every part before applying any.
#pragma once

#include <map>
#include <string>

#include "nn/lr_scheduler.hpp"
#include "nn/module.hpp"
#include "nn/optimizer.hpp"

namespace anatomy::nn {

struct Checkpoint {
  int64_t step = 0;
  std::map<std::string, std::string> metadata;
};

void save_checkpoint(const std::string& path, const Module& model, const Optimizer& optimizer,
                     const LRScheduler* scheduler, int64_t step,
                     const std::map<std::string, std::string>& metadata = {});

Checkpoint load_checkpoint(const std::string& path, Module& model, Optimizer& optimizer,
                           LRScheduler* scheduler);

}  // namespace anatomy::nn
