// tempra/audio/weight_reader.h: walks a `.nam` file's flat weight list in the file's order.
//
// parse_nam has checked the count against the config, so running out here is a bug of this
// library, reported as an Error rather than a read past the end.
#pragma once

#include <algorithm>
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
  // n values in order, then zeros up to `padded` (>= n; default n).
  template <class Vector>  // std::vector<float> or AlignedVector<float>
  void vector(int n, Vector& out, int padded = 0) {
    out.assign(size_t(std::max(n, padded)), 0.0f);
    for (int i = 0; i < n; ++i) out[size_t(i)] = next();
  }
  // A rows x cols matrix stored row-major in the file, kept transposed ([col][row], each
  // transposed row padded with zeros to `stride` >= rows; default rows): a 1x1 convolution's
  // [out][in] weights become [in][out], output channel innermost.
  void matrix_transposed(int rows, int cols, std::vector<float>& out, int stride = 0) {
    stride = std::max(stride, rows);
    out.assign(size_t(stride) * size_t(cols), 0.0f);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) out[size_t(c) * stride + r] = next();
  }
  void expect_end() const {
    check(at_ == weights_.size(), model_, ": ", weights_.size() - at_, " weights left over after ", at_);
  }

 private:
  std::span<const float> weights_;
  const char* model_;
  size_t at_ = 0;
};

}  // namespace tempra::audio
