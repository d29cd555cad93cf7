#include "nn/container.hpp"

namespace anatomy::nn {

const std::shared_ptr<Module>& ModuleList::operator[](size_t i) const {
  if (i >= items_.size())
    throw Error(fmt::format("ModuleList: index {} is out of range (size {})", i, items_.size()));
  return items_[i];
}

}  // namespace anatomy::nn
