// Tests for the zero-copy views of tempra::Array (tempra/core/array.h).
//
// Every view is checked three ways: it shares the parent's storage and allocates nothing (the
// pool's acquire count does not move), its data pointer sits at the expected element offset,
// and at() reads the expected parent element at every index.
#include <gtest/gtest.h>

#include "support/errors.h"

#include <array>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "tempra/core/array.h"
#include "tempra/core/tensor_ref.h"
#include "tempra/ops/creation.h"

namespace {

using tempra::Array;
using tempra::Dims;
using tempra::DType;
using tempra::ExecContext;
using tempra::ExecOptions;

// A contiguous f32 array holding 0, 1, 2, ... in row-major order, so the value of an element
// is its flat offset in the parent.
Array iota(ExecContext& ctx, const Dims& shape) {
  std::vector<float> v(static_cast<size_t>(shape.product()));
  std::iota(v.begin(), v.end(), 0.0f);
  return Array::from_values<float>(ctx, shape, std::span<const float>(v));
}

// at() takes an initializer_list; this spells it for a runtime index of rank <= 4.
double at_index(const Array& a, const std::vector<int64_t>& i) {
  switch (i.size()) {
    case 0: return a.at({});
    case 1: return a.at({i[0]});
    case 2: return a.at({i[0], i[1]});
    case 3: return a.at({i[0], i[1], i[2]});
    case 4: return a.at({i[0], i[1], i[2], i[3]});
    default: ADD_FAILURE() << "rank too high for at_index"; return 0;
  }
}

// Checks every element of `view` against expected(index), walking all indices in row-major order.
void expect_elements(const Array& view, const std::function<double(const std::vector<int64_t>&)>& expected) {
  std::vector<int64_t> idx(static_cast<size_t>(view.rank()), 0);
  for (int64_t flat = 0; flat < view.numel(); ++flat) {
    int64_t rest = flat;
    for (int d = view.rank() - 1; d >= 0; --d) {
      idx[static_cast<size_t>(d)] = rest % view.shape()[d];
      rest /= view.shape()[d];
    }
    ASSERT_EQ(at_index(view, idx), expected(idx)) << "flat index " << flat << " of view " << view.shape();
  }
}

// Byte distance of a view's first element from its parent's.
std::ptrdiff_t byte_offset(const Array& view, const Array& parent) {
  return static_cast<const char*>(view.raw_data()) - static_cast<const char*>(parent.raw_data());
}

using tempra::testing::error_message;

#define EXPECT_ERROR_CONTAINS(stmt, ...)                                                   \
  do {                                                                                     \
    const std::string msg_ = error_message([&] { (void)(stmt); });                        \
    for (const char* part_ : {__VA_ARGS__})                                                \
      EXPECT_NE(msg_.find(part_), std::string::npos) << "message: " << msg_ << "\nwanted: " << part_; \
  } while (0)

class CoreArrayView : public ::testing::Test {
 protected:
  ExecContext ctx{ExecOptions{.threads = 1}};
  int64_t allocations() const { return ctx.pool()->stats().hits + ctx.pool()->stats().misses; }
};

TEST_F(CoreArrayView, FreshArrayIsContiguousRowMajor) {
  const Array a = iota(ctx, {2, 3, 4});
  EXPECT_TRUE(a.defined());
  EXPECT_EQ(a.shape(), (Dims{2, 3, 4}));
  EXPECT_EQ(a.strides(), (Dims{12, 4, 1}));
  EXPECT_EQ(a.offset(), 0);
  EXPECT_EQ(a.numel(), 24);
  EXPECT_EQ(a.nbytes(), 96u);
  EXPECT_EQ(a.dim(-1), 4);
  EXPECT_TRUE(a.is_contiguous());
  expect_elements(a, [](const auto& i) { return double(i[0] * 12 + i[1] * 4 + i[2]); });
  EXPECT_FALSE(Array().defined());
}

TEST_F(CoreArrayView, ViewsShareStorageAndAllocateNothing) {
  const Array a = iota(ctx, {4, 6});
  const int64_t before = allocations();
  const Array views[] = {a.slice(1, 1, 5, 2), a.narrow(0, 1, 2), a.select(0, 3), a.transpose(0, 1),
                         a.permute({1, 0}),   a.reshape({2, 12}), a.reshape({24}), a.unsqueeze(0),
                         a.broadcast_to({3, 4, 6}), a.unsqueeze(1).squeeze(1)};
  for (const Array& v : views) {
    EXPECT_TRUE(v.shares_storage_with(a)) << v.shape();
    EXPECT_EQ(v.storage().get(), a.storage().get());
  }
  EXPECT_EQ(allocations(), before) << "a view acquired a buffer";
  EXPECT_EQ(ctx.pool()->outstanding(), 1);
  // Data pointers sit at the view's element offset in the same buffer.
  EXPECT_EQ(byte_offset(a.slice(1, 1, 5, 2), a), 1 * 4);
  EXPECT_EQ(byte_offset(a.narrow(0, 1, 2), a), 6 * 4);
  EXPECT_EQ(byte_offset(a.select(0, 3), a), 18 * 4);
  EXPECT_EQ(byte_offset(a.select(1, 5), a), 5 * 4);
  EXPECT_EQ(byte_offset(a.transpose(0, 1), a), 0);
  EXPECT_EQ(byte_offset(a.narrow(0, 2, 2).reshape({12}), a), 12 * 4);
  // Writes through a view are seen by the parent: it is the same memory.
  a.select(0, 2).data<float>()[1] = -7.0f;
  EXPECT_EQ(a.at({2, 1}), -7.0);
}

TEST_F(CoreArrayView, SliceWithStepNarrowAndNegativeAxis) {
  const Array a = iota(ctx, {10});
  const Array s = a.slice(0, 1, 8, 3);  // 1, 4, 7
  EXPECT_EQ(s.shape(), (Dims{3}));
  EXPECT_EQ(s.strides(), (Dims{3}));
  EXPECT_EQ(s.offset(), 1);
  expect_elements(s, [](const auto& i) { return double(1 + 3 * i[0]); });
  EXPECT_EQ(a.slice(0, 1, 7, 3).shape(), (Dims{2}));  // 1, 4: stop is exclusive
  EXPECT_EQ(a.slice(0, 5, 5).numel(), 0);              // empty is fine
  // Slice of a slice composes offsets and strides.
  const Array ss = s.slice(0, 1, 3);  // 4, 7
  expect_elements(ss, [](const auto& i) { return double(4 + 3 * i[0]); });

  const Array m = iota(ctx, {4, 5});
  const Array n = m.narrow(-1, 1, 3);  // columns 1..3
  EXPECT_EQ(n.shape(), (Dims{4, 3}));
  EXPECT_EQ(n.strides(), (Dims{5, 1}));
  expect_elements(n, [](const auto& i) { return double(i[0] * 5 + i[1] + 1); });
  const Array rows = m.slice(0, 0, 4, 2);  // rows 0, 2
  expect_elements(rows, [](const auto& i) { return double(i[0] * 10 + i[1]); });
}

TEST_F(CoreArrayView, SelectDropsTheAxis) {
  const Array a = iota(ctx, {2, 3, 4});
  const Array s1 = a.select(1, 2);
  EXPECT_EQ(s1.shape(), (Dims{2, 4}));
  expect_elements(s1, [](const auto& i) { return double(i[0] * 12 + 2 * 4 + i[1]); });
  const Array s2 = a.select(-1, 3);
  EXPECT_EQ(s2.shape(), (Dims{2, 3}));
  expect_elements(s2, [](const auto& i) { return double(i[0] * 12 + i[1] * 4 + 3); });
  const Array scalar = a.select(0, 1).select(0, 2).select(0, 3);
  EXPECT_EQ(scalar.rank(), 0);
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.at({}), 12 + 8 + 3);
}

TEST_F(CoreArrayView, PermuteAndTranspose) {
  const Array a = iota(ctx, {2, 3, 4});
  const Array p = a.permute({2, 0, 1});
  EXPECT_EQ(p.shape(), (Dims{4, 2, 3}));
  EXPECT_EQ(p.strides(), (Dims{1, 12, 4}));
  expect_elements(p, [](const auto& i) { return double(i[1] * 12 + i[2] * 4 + i[0]); });
  const Array t = a.transpose(0, -1);
  EXPECT_EQ(t.shape(), (Dims{4, 3, 2}));
  expect_elements(t, [](const auto& i) { return double(i[2] * 12 + i[1] * 4 + i[0]); });
  EXPECT_EQ(a.permute({-1, -2, -3}).shape(), (Dims{4, 3, 2}));
  // Transposing twice is the identity.
  const Array tt = t.transpose(0, 2);
  EXPECT_EQ(tt.strides(), a.strides());
  EXPECT_TRUE(tt.is_contiguous());
}

TEST_F(CoreArrayView, ReshapeOfContiguousArrayAndInferredExtent) {
  const Array a = iota(ctx, {2, 3, 4});
  const Array r = a.reshape({4, 6});
  EXPECT_EQ(r.strides(), (Dims{6, 1}));
  expect_elements(r, [](const auto& i) { return double(i[0] * 6 + i[1]); });
  EXPECT_EQ(a.reshape({-1}).shape(), (Dims{24}));
  EXPECT_EQ(a.reshape({3, -1}).shape(), (Dims{3, 8}));
  EXPECT_EQ(a.reshape({-1, 2, 3}).shape(), (Dims{4, 2, 3}));
  EXPECT_EQ(a.reshape({1, 24, 1}).shape(), (Dims{1, 24, 1}));
  // A contiguous view with an offset reshapes too, and keeps its offset.
  const Array rows = iota(ctx, {4, 3}).narrow(0, 1, 2);  // elements 3..8
  ASSERT_TRUE(rows.is_contiguous());
  const Array flat = rows.reshape({-1});
  EXPECT_EQ(flat.shape(), (Dims{6}));
  expect_elements(flat, [](const auto& i) { return double(3 + i[0]); });
  // Rank 0 <-> rank 1.
  const Array one = iota(ctx, {1});
  EXPECT_EQ(one.reshape({}).rank(), 0);
  EXPECT_EQ(one.reshape({}).at({}), 0.0);
}

TEST_F(CoreArrayView, ReshapeErrors) {
  const Array a = iota(ctx, {2, 3, 4});
  EXPECT_ERROR_CONTAINS(a.transpose(0, 1).reshape({24}), "[reshape]", "contiguous", "[3, 2, 4]");
  EXPECT_ERROR_CONTAINS(a.slice(2, 0, 4, 2).reshape({12}), "[reshape]", "contiguous");
  EXPECT_ERROR_CONTAINS(a.reshape({5, 5}), "[reshape]", "[2, 3, 4]", "[5, 5]");
  EXPECT_ERROR_CONTAINS(a.reshape({-1, -1}), "[reshape]", "-1");
  EXPECT_ERROR_CONTAINS(a.reshape({5, -1}), "[reshape]", "-1");
  EXPECT_ERROR_CONTAINS(a.reshape({-2, -12}), "[reshape]");
  EXPECT_ERROR_CONTAINS(Array().reshape({1}), "[reshape]", "empty");
}

TEST_F(CoreArrayView, BroadcastToUsesZeroStrides) {
  const Array a = iota(ctx, {3, 1});
  const Array b = a.broadcast_to({2, 3, 4});
  EXPECT_EQ(b.shape(), (Dims{2, 3, 4}));
  EXPECT_EQ(b.strides(), (Dims{0, 1, 0}));
  EXPECT_FALSE(b.is_contiguous());
  expect_elements(b, [](const auto& i) { return double(i[1]); });
  EXPECT_EQ(b.numel(), 24);
  // Same shape keeps the strides; a unit axis can stretch to 0.
  EXPECT_EQ(a.broadcast_to({3, 1}).strides(), a.strides());
  EXPECT_EQ(a.broadcast_to({3, 0}).numel(), 0);
  // A broadcast view cannot be reshaped (it is not contiguous) but can be copied.
  EXPECT_ERROR_CONTAINS(b.reshape({24}), "[reshape]", "contiguous");
  const std::vector<float> v = tempra::to_vector<float>(ctx, b);
  ASSERT_EQ(v.size(), 24u);
  for (size_t k = 0; k < v.size(); ++k) EXPECT_EQ(v[k], float(k / 4 % 3)) << k;
}

TEST_F(CoreArrayView, BroadcastToErrors) {
  const Array a = iota(ctx, {3, 2});
  EXPECT_ERROR_CONTAINS(a.broadcast_to({3, 3}), "[broadcast_to]", "[3, 2]", "[3, 3]");
  EXPECT_ERROR_CONTAINS(a.broadcast_to({2}), "[broadcast_to]", "[3, 2]");  // lower rank
  EXPECT_ERROR_CONTAINS(a.broadcast_to({2, 1, 2}), "[broadcast_to]");      // trailing axes must align
  // A negative target extent is not a shape: no Array may hold one.
  EXPECT_ERROR_CONTAINS(iota(ctx, {1}).broadcast_to({-1}), "[broadcast_to]");
  EXPECT_ERROR_CONTAINS(a.broadcast_to({-2, 3, 2}), "[broadcast_to]");
}

TEST_F(CoreArrayView, SqueezeAndUnsqueeze) {
  const Array a = iota(ctx, {2, 1, 3});
  const Array s = a.squeeze(1);
  EXPECT_EQ(s.shape(), (Dims{2, 3}));
  expect_elements(s, [](const auto& i) { return double(i[0] * 3 + i[1]); });
  EXPECT_EQ(a.squeeze(-2).shape(), (Dims{2, 3}));
  EXPECT_ERROR_CONTAINS(a.squeeze(0), "[squeeze]", "[2, 1, 3]");
  EXPECT_ERROR_CONTAINS(a.squeeze(3), "[squeeze]");

  const Array b = iota(ctx, {2, 3});
  EXPECT_EQ(b.unsqueeze(0).shape(), (Dims{1, 2, 3}));
  EXPECT_EQ(b.unsqueeze(1).shape(), (Dims{2, 1, 3}));
  EXPECT_EQ(b.unsqueeze(2).shape(), (Dims{2, 3, 1}));
  EXPECT_EQ(b.unsqueeze(-1).shape(), (Dims{2, 3, 1}));
  for (int axis = 0; axis <= 2; ++axis) {
    const Array u = b.unsqueeze(axis);
    EXPECT_TRUE(u.is_contiguous()) << axis;
    EXPECT_EQ(u.squeeze(axis).strides(), b.strides()) << axis;
    EXPECT_EQ(u.reshape({6}).at({4}), 4.0) << axis;
  }
  expect_elements(b.unsqueeze(1), [](const auto& i) { return double(i[0] * 3 + i[2]); });
  EXPECT_ERROR_CONTAINS(b.unsqueeze(3), "[unsqueeze]");
  EXPECT_ERROR_CONTAINS(b.unsqueeze(-4), "[unsqueeze]");
}

TEST_F(CoreArrayView, IsContiguousTrueAndFalseCases) {
  const Array a = iota(ctx, {4, 5});
  EXPECT_TRUE(a.is_contiguous());
  EXPECT_TRUE(a.narrow(0, 1, 2).is_contiguous());   // whole rows
  EXPECT_FALSE(a.narrow(1, 1, 2).is_contiguous());  // part of each row
  EXPECT_TRUE(a.select(0, 2).is_contiguous());      // one row
  EXPECT_FALSE(a.select(1, 2).is_contiguous());     // one column
  EXPECT_FALSE(a.transpose(0, 1).is_contiguous());
  EXPECT_FALSE(a.slice(0, 0, 4, 2).is_contiguous());
  EXPECT_FALSE(a.broadcast_to({2, 4, 5}).is_contiguous());
  EXPECT_TRUE(a.unsqueeze(0).is_contiguous());
  EXPECT_TRUE(a.select(0, 0).select(0, 0).is_contiguous());  // rank 0
  // Unit axes' strides do not matter: a [1, n] transpose is still contiguous.
  const Array row = iota(ctx, {1, 5});
  EXPECT_TRUE(row.transpose(0, 1).is_contiguous());
  EXPECT_FALSE(a.slice(1, 2, 3, 7).is_contiguous());  // [4, 1] with row stride 5: not dense
  EXPECT_TRUE(iota(ctx, {6}).slice(0, 1, 2, 4).is_contiguous());  // one element
}

TEST_F(CoreArrayView, ViewOutlivesItsParentAndKeepsStorageAlive) {
  Array view;
  {
    const Array parent = iota(ctx, {3, 4});
    view = parent.transpose(0, 1).slice(0, 1, 4, 2);  // columns 1 and 3
    EXPECT_EQ(view.storage().use_count(), 2);
  }
  EXPECT_EQ(view.storage().use_count(), 1);
  EXPECT_EQ(ctx.pool()->outstanding(), 1) << "the parent's buffer must stay out while the view lives";
  EXPECT_EQ(view.shape(), (Dims{2, 3}));
  expect_elements(view, [](const auto& i) { return double(i[1] * 4 + 1 + 2 * i[0]); });
  const std::vector<float> v = tempra::to_vector<float>(ctx, view);
  EXPECT_EQ(v, (std::vector<float>{1, 5, 9, 3, 7, 11}));
  view = Array();
  EXPECT_EQ(ctx.pool()->outstanding(), 0) << "the last view's death must return the buffer";
}

TEST_F(CoreArrayView, ContiguousAndCopyOfStridedViewGiveRowMajorOrder) {
  const Array a = iota(ctx, {2, 3});
  const Array t = a.transpose(0, 1);  // [[0, 3], [1, 4], [2, 5]]
  const Array c = tempra::contiguous(ctx, t);
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FALSE(c.shares_storage_with(a));
  EXPECT_EQ(c.shape(), (Dims{3, 2}));
  const float* p = c.data<float>();
  EXPECT_EQ(std::vector<float>(p, p + 6), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  const Array d = tempra::copy(ctx, a.slice(1, 0, 3, 2));  // columns 0 and 2
  EXPECT_TRUE(d.is_contiguous());
  EXPECT_FALSE(d.shares_storage_with(a));
  EXPECT_EQ(tempra::to_vector<float>(ctx, d), (std::vector<float>{0, 2, 3, 5}));
  // contiguous() of an already-contiguous array is the array itself; copy() never is.
  EXPECT_TRUE(tempra::contiguous(ctx, a).shares_storage_with(a));
  EXPECT_FALSE(tempra::copy(ctx, a).shares_storage_with(a));
  // The copy is independent of its source.
  const Array e = tempra::copy(ctx, a);
  a.data<float>()[0] = 42.0f;
  EXPECT_EQ(e.at({0, 0}), 0.0);
}

TEST_F(CoreArrayView, AtChecksIndexAndTypedDataChecksDtype) {
  const Array a = iota(ctx, {2, 3});
  EXPECT_ERROR_CONTAINS(a.at({2, 0}), "[at]", "[2, 3]");
  EXPECT_ERROR_CONTAINS(a.at({0, -1}), "[at]");
  EXPECT_ERROR_CONTAINS(a.at({0}), "[at]");
  EXPECT_ERROR_CONTAINS(a.data<double>(), "[data]", "f32", "f64");
  EXPECT_ERROR_CONTAINS(Array().raw_data(), "[data]", "empty");
  EXPECT_ERROR_CONTAINS(a.dim(2), "[dim]");
  // at() converts other dtypes to double.
  const Array i = Array::from_values<int32_t>(ctx, {2}, {-3, 7});
  EXPECT_EQ(i.at({0}), -3.0);
  const Array h = Array::from_values<tempra::f16_t>(ctx, {1}, {tempra::to_f16(1.5f)});
  EXPECT_EQ(h.at({0}), 1.5);
  const Array z = Array::zeros(ctx, {3}, DType::i64);
  EXPECT_EQ(z.at({2}), 0.0);
  EXPECT_ERROR_CONTAINS(Array::from_values<float>(ctx, {2, 2}, {1.0f, 2.0f}), "[from_values]", "[2, 2]");
  EXPECT_ERROR_CONTAINS(Array::empty(ctx, {2, -1}, DType::f32), "[empty]");
}

TEST_F(CoreArrayView, ViewErrorsNameTheView) {
  const Array a = iota(ctx, {2, 3});
  EXPECT_ERROR_CONTAINS(a.slice(1, 0, 4), "[slice]", "[2, 3]");
  EXPECT_ERROR_CONTAINS(a.slice(1, 2, 1), "[slice]");
  EXPECT_ERROR_CONTAINS(a.slice(1, -1, 2), "[slice]");
  EXPECT_ERROR_CONTAINS(a.slice(1, 0, 2, 0), "[slice]", "step");
  EXPECT_ERROR_CONTAINS(a.slice(2, 0, 1), "[slice]", "axis");
  EXPECT_ERROR_CONTAINS(a.narrow(0, 1, 2), "[slice]");
  EXPECT_ERROR_CONTAINS(a.select(0, 2), "[select]", "[2, 3]");
  EXPECT_ERROR_CONTAINS(a.select(-3, 0), "[select]");
  EXPECT_ERROR_CONTAINS(a.permute({0, 0}), "[permute]", "repeats");
  EXPECT_ERROR_CONTAINS(a.permute({0}), "[permute]", "[2, 3]");
  EXPECT_ERROR_CONTAINS(a.permute({0, 2}), "[permute]");
  EXPECT_ERROR_CONTAINS(a.transpose(0, 2), "[transpose]");
  EXPECT_ERROR_CONTAINS(Array().slice(0, 0, 0), "[slice]", "empty");
  EXPECT_ERROR_CONTAINS(Array().broadcast_to({1}), "[broadcast_to]", "empty");
  // Views of block-quantized arrays are refused, naming the view...
  const DType q = tempra::register_dtype({"test_view_q8", tempra::DTypeKind::block_quantized, 32, 34});
  const Array qa = Array::empty(ctx, {2, 32}, q);
  EXPECT_EQ(qa.nbytes(), 68u);
  EXPECT_ERROR_CONTAINS(qa.transpose(0, 1), "[permute]", "block-quantized");
  EXPECT_ERROR_CONTAINS(qa.select(1, 0), "[select]", "test_view_q8");
  // Except the outermost axis of a contiguous array, whose entries are whole blocks (one
  // expert's matrix of a stacked MoE tensor): row 1 starts one block (34 bytes) in.
  const Array row = qa.select(0, 1);
  EXPECT_EQ(row.shape(), (Dims{32}));
  EXPECT_EQ(static_cast<const char*>(row.raw_data()) - static_cast<const char*>(qa.raw_data()), 34);
  EXPECT_ERROR_CONTAINS(qa.select(0, 2), "[select]", "out of range");
}

TEST_F(CoreArrayView, ZeroSizedArraysFillViewAndCopyWithoutCrashing) {
  // An empty outer axis used to reach `index % 0` in for_each_row (SIGFPE) through full().
  const Array a = tempra::full(ctx, {0, 3}, 1.0);
  EXPECT_EQ(a.numel(), 0);
  EXPECT_EQ(tempra::full(ctx, {2, 0, 3}, 1.0, DType::i32).numel(), 0);
  EXPECT_EQ(tempra::full(ctx, {3, 0}, 1.0).numel(), 0);
  const Array t = a.transpose(0, 1);
  EXPECT_EQ(t.shape(), (Dims{3, 0}));
  EXPECT_TRUE(tempra::to_vector<float>(ctx, t).empty());
  EXPECT_EQ(tempra::copy(ctx, t).numel(), 0);
  EXPECT_EQ(a.reshape({3, -1, 5}).numel(), 0);
  EXPECT_EQ(iota(ctx, {4, 3}).slice(0, 2, 2).numel(), 0);
}

// for_each_row (tensor_ref.h) is the strided walk every elementwise kernel sits on.
TEST(CoreTensorRef, ForEachRowVisitsRowsInOrderWithEachOperandsOffsets) {
  const Dims shape{2, 3, 4};
  const Dims a_strides{12, 4, 1}, b_strides{1, 2, 6}, c_strides{0, 5, 1};  // c broadcasts axis 0
  for (auto [first, last] : {std::pair<int64_t, int64_t>{0, 6}, {2, 5}, {5, 6}, {3, 3}, {0, 1}}) {
    SCOPED_TRACE(std::to_string(first) + ".." + std::to_string(last));
    std::vector<int64_t> rows;
    tempra::for_each_row<3>(shape, {&a_strides, &b_strides, &c_strides}, first, last,
                            [&](int64_t row, const std::array<int64_t, 3>& off) {
                              rows.push_back(row);
                              const int64_t i = row / 3, j = row % 3;
                              EXPECT_EQ(off[0], i * 12 + j * 4) << row;
                              EXPECT_EQ(off[1], i * 1 + j * 2) << row;
                              EXPECT_EQ(off[2], j * 5) << row;
                            });
    std::vector<int64_t> want;
    for (int64_t r = first; r < last; ++r) want.push_back(r);
    EXPECT_EQ(rows, want);
  }
  EXPECT_EQ(tempra::row_count(shape), 6);
  EXPECT_EQ(tempra::row_count({}), 1);
  EXPECT_EQ(tempra::row_count({7}), 1);
}

TEST(CoreTensorRef, ForEachRowOnRankZeroOneAndEmptyShapes) {
  int calls = 0;
  const Dims none{}, one{1};
  // Rank 0 and rank 1 have exactly one row, at offset 0.
  tempra::for_each_row<1>(Dims{}, {&none}, 0, 1, [&](int64_t row, auto off) {
    ++calls;
    EXPECT_EQ(row, 0);
    EXPECT_EQ(off[0], 0);
  });
  tempra::for_each_row<1>(Dims{5}, {&one}, 0, 1, [&](int64_t, auto) { ++calls; });
  EXPECT_EQ(calls, 2);
  // Empty ranges and shapes with an empty outer axis visit nothing (and must not divide by 0).
  const Dims s2{3, 1}, s3{9, 3, 1};
  tempra::for_each_row<1>(Dims{0, 3}, {&s2}, 0, tempra::row_count({0, 3}), [&](int64_t, auto) { ++calls; });
  tempra::for_each_row<1>(Dims{2, 0, 3}, {&s3}, 0, 0, [&](int64_t, auto) { ++calls; });
  tempra::for_each_row<1>(Dims{5}, {&one}, 0, 0, [&](int64_t, auto) { ++calls; });
  EXPECT_EQ(calls, 2);
}

TEST(CoreBroadcastShapes, NumpyRules) {
  using tempra::broadcast_shapes;
  EXPECT_EQ(broadcast_shapes({2, 1, 4}, {3, 1}, "op"), (Dims{2, 3, 4}));
  EXPECT_EQ(broadcast_shapes({5}, {}, "op"), (Dims{5}));
  EXPECT_EQ(broadcast_shapes({}, {}, "op"), (Dims{}));
  EXPECT_EQ(broadcast_shapes({1}, {0}, "op"), (Dims{0}));
  EXPECT_EQ(broadcast_shapes({4, 1}, {1, 4}, "op"), (Dims{4, 4}));
  EXPECT_EQ(broadcast_shapes({7, 2, 3}, {7, 2, 3}, "op"), (Dims{7, 2, 3}));
  EXPECT_EQ(broadcast_shapes({1, 1}, {6}, "op"), (Dims{1, 6}));
  // Symmetric.
  EXPECT_EQ(broadcast_shapes({3, 1}, {2, 1, 4}, "op"), (Dims{2, 3, 4}));
}

TEST(CoreBroadcastShapes, MismatchThrowsNamingOpAndBothShapes) {
  EXPECT_ERROR_CONTAINS(tempra::broadcast_shapes({2, 3}, {4, 3}, "add"), "[add]", "[2, 3]", "[4, 3]");
  EXPECT_ERROR_CONTAINS(tempra::broadcast_shapes({3}, {2, 4}, "mul"), "[mul]", "[3]", "[2, 4]");
  EXPECT_ERROR_CONTAINS(tempra::broadcast_shapes({0}, {2}, "sub"), "[sub]");
}

}  // namespace
