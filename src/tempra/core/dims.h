// tempra/core/dims.h: a small inline array of extents or strides (rank <= 8).
//
// Shapes, strides and index vectors live inline in every tensor, so a view costs no allocation.
// Strides count elements, not bytes; a zero stride is a broadcast axis.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>

#include "tempra/core/error.h"

namespace tempra {

inline constexpr int kMaxRank = 8;

class Dims {
 public:
  constexpr Dims() = default;
  Dims(std::initializer_list<int64_t> values) { assign(values.begin(), values.end()); }
  template <class It>
  Dims(It first, It last) {
    assign(first, last);
  }
  static Dims filled(int rank, int64_t value) {
    Dims d;
    d.resize(rank, value);
    return d;
  }

  int size() const { return rank_; }
  bool empty() const { return rank_ == 0; }
  int64_t& operator[](int i) { return values_[static_cast<size_t>(i)]; }
  int64_t operator[](int i) const { return values_[static_cast<size_t>(i)]; }
  int64_t* begin() { return values_.data(); }
  int64_t* end() { return values_.data() + rank_; }
  const int64_t* begin() const { return values_.data(); }
  const int64_t* end() const { return values_.data() + rank_; }
  int64_t back() const { return values_[static_cast<size_t>(rank_ - 1)]; }

  void push_back(int64_t v) {
    check(rank_ < kMaxRank, "dims", "rank would exceed ", kMaxRank);
    values_[static_cast<size_t>(rank_++)] = v;
  }
  void insert(int pos, int64_t v) {
    check(rank_ < kMaxRank, "dims", "rank would exceed ", kMaxRank);
    for (int i = rank_; i > pos; --i) values_[static_cast<size_t>(i)] = values_[static_cast<size_t>(i - 1)];
    values_[static_cast<size_t>(pos)] = v;
    ++rank_;
  }
  void erase(int pos) {
    for (int i = pos; i + 1 < rank_; ++i) values_[static_cast<size_t>(i)] = values_[static_cast<size_t>(i + 1)];
    --rank_;
  }
  void resize(int rank, int64_t fill = 0) {
    check(rank >= 0 && rank <= kMaxRank, "dims", "rank ", rank, " is outside [0, ", kMaxRank, "]");
    for (int i = rank_; i < rank; ++i) values_[static_cast<size_t>(i)] = fill;
    rank_ = rank;
  }

  // Product of all extents (1 for rank 0).
  int64_t product() const {
    int64_t p = 1;
    for (int64_t v : *this) p *= v;
    return p;
  }
  friend bool operator==(const Dims& a, const Dims& b) {
    return a.rank_ == b.rank_ && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  template <class It>
  void assign(It first, It last) {
    rank_ = 0;
    for (; first != last; ++first) push_back(static_cast<int64_t>(*first));
  }
  std::array<int64_t, kMaxRank> values_{};
  int rank_ = 0;
};

// Row-major (C order) strides for a shape.
inline Dims contiguous_strides(const Dims& shape) {
  Dims strides = Dims::filled(shape.size(), 1);
  for (int i = shape.size() - 2; i >= 0; --i) strides[i] = strides[i + 1] * std::max<int64_t>(shape[i + 1], 1);
  return strides;
}

// "[2, 3, 4]": the form every error message uses.
inline std::string to_string(const Dims& d) {
  std::string s = "[";
  for (int i = 0; i < d.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(d[i]);
  }
  return s + "]";
}
inline std::ostream& operator<<(std::ostream& out, const Dims& d) { return out << to_string(d); }

// Resolves a possibly negative axis index against a rank, or throws naming the op.
inline int normalize_axis(int axis, int rank, const char* op) {
  int a = axis < 0 ? axis + rank : axis;
  check(a >= 0 && a < rank, op, "axis ", axis, " is out of range for rank ", rank);
  return a;
}

}  // namespace tempra
