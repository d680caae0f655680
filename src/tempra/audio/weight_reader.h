// tempra/audio/weight_reader.h: walks a `.nam` file's flat weight list in the file's order.
//
// parse_nam has checked the count against the config, so running out here is a bug of this
// library, reported as an Error rather than a read past the end.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "tempra/core/error.h"

namespace tempra::audio {

class WeightReader {
 public:
  WeightReader(std::span<const float> weights, const char* model) : weights_(weights), model_(model) {}

  float next() {
    check(at_ < weights_.size(), model_, ": the weights ran out after ", at_);
    return weights_[at_++];
  }
  // n values in order.
  void vector(int n, std::vector<float>& out) {
    out.resize(size_t(n));
    for (float& v : out) v = next();
  }
  // A rows x cols matrix stored row-major in the file, kept transposed ([col][row]): a 1x1
  // convolution's [out][in] weights become [in][out], output channel innermost.
  void matrix_transposed(int rows, int cols, std::vector<float>& out) {
    out.assign(size_t(rows) * size_t(cols), 0.0f);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) out[size_t(c) * rows + r] = next();
  }
  // A rows x cols matrix kept as the file has it, row-major.
  void matrix(int rows, int cols, std::vector<float>& out) { vector(rows * cols, out); }
  void expect_end() const {
    check(at_ == weights_.size(), model_, ": ", weights_.size() - at_, " weights left over after ", at_);
  }

 private:
  std::span<const float> weights_;
  const char* model_;
  size_t at_ = 0;
};

}  // namespace tempra::audio
