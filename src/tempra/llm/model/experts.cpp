// tempra/llm/model/experts.cpp: see experts.h.
#include "tempra/llm/model/experts.h"

namespace tempra::llm {

void ResidentExperts::add_layer(std::vector<Array> gate, std::vector<Array> up, std::vector<Array> down) {
  layers_.push_back(Layer{std::move(gate), std::move(up), std::move(down)});
}

ExpertMatrices ResidentExperts::get(int layer, int32_t expert) const {
  const Layer& l = layers_[size_t(layer)];
  return {&l.gate[size_t(expert)], &l.up[size_t(expert)], &l.down[size_t(expert)]};
}

}  // namespace tempra::llm
