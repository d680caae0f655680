// tests/typed/typed_grad_test.cpp: gradients keep their axes. One SGD step of a tiny named-axis
// MLP: the gradient of a Tensor<h1, in> parameter is a Tensor<h1, in> (static_assert), its values
// equal those of the same model written on untyped arrays, and the step lowers the loss.
#include <gtest/gtest.h>

#include <type_traits>

#include "tempra/typed/ops.h"

namespace {

TEMPRA_AXES(batch, in, h1, cls);

using tempra::Array;
using tempra::ExecContext;
using tempra::Tensor;

struct Model {
  Tensor<h1, in> w1;
  Tensor<h1> b1;
  Tensor<cls, h1> w2;
  Tensor<cls> b2;
};

Tensor<batch, cls> forward(ExecContext& ctx, const Model& m, const Tensor<batch, in>& x) {
  auto a1 = tempra::tanh(ctx, tempra::add(ctx, x.dot<in>(ctx, m.w1), m.b1));
  return tempra::add(ctx, a1.dot<h1>(ctx, m.w2), m.b2);
}

// Mean over the batch of the squared error summed over classes: a scalar Tensor<>.
Tensor<> loss_of(ExecContext& ctx, const Model& m, const Tensor<batch, in>& x, const Tensor<batch, cls>& target) {
  return tempra::mean<batch>(ctx,
                             tempra::sum<cls>(ctx, tempra::square(ctx, tempra::sub(ctx, forward(ctx, m, x), target))));
}

std::vector<double> values(ExecContext& ctx, const Array& a) {
  return tempra::to_vector<double>(ctx, a);
}

template <class... A>
Tensor<A...> f64(ExecContext& ctx, const Tensor<A...>& t) {
  return Tensor<A...>::from(tempra::cast(ctx, t.array(), tempra::DType::f64));
}

TEST(TypedGrad, one_sgd_step_of_a_named_axis_mlp) {
  ExecContext ctx(tempra::ExecOptions{.seed = 7});
  Model m{f64(ctx, Tensor<h1, in>::normal(ctx, {8, 3}, 0.0, 0.5)), f64(ctx, Tensor<h1>::normal(ctx, {8}, 0.0, 0.1)),
          f64(ctx, Tensor<cls, h1>::normal(ctx, {2, 8}, 0.0, 0.5)), f64(ctx, Tensor<cls>::zeros(ctx, {2}))};
  m.w1.set_requires_grad();
  m.b1.set_requires_grad();
  m.w2.set_requires_grad();
  m.b2.set_requires_grad();
  const auto x = f64(ctx, Tensor<batch, in>::uniform(ctx, {5, 3}, -1.0, 1.0));
  const auto target = f64(ctx, Tensor<batch, cls>::uniform(ctx, {5, 2}, -1.0, 1.0));

  const Tensor<> loss = loss_of(ctx, m, x, target);
  tempra::backward(ctx, loss);

  // The compile-time guarantee: each gradient has its parameter's axes.
  static_assert(std::is_same_v<decltype(m.w1.grad()), Tensor<h1, in>>);
  static_assert(std::is_same_v<decltype(m.b1.grad()), Tensor<h1>>);
  static_assert(std::is_same_v<decltype(m.w2.grad()), Tensor<cls, h1>>);
  const Tensor<h1, in> gw1 = m.w1.grad();
  ASSERT_TRUE(gw1.defined());
  EXPECT_EQ(gw1.shape(), m.w1.shape());

  // The same model on untyped arrays gives the same gradients.
  Array w1 = m.w1.array().detach(), b1 = m.b1.array().detach(), w2 = m.w2.array().detach(), b2 = m.b2.array().detach();
  for (Array* p : {&w1, &b1, &w2, &b2}) p->set_requires_grad();
  const Array h = tempra::tanh(ctx, tempra::add(ctx, tempra::linear(ctx, x.array(), w1), b1));
  const Array y = tempra::add(ctx, tempra::linear(ctx, h, w2), b2);
  const Array d = tempra::sub(ctx, y, target.array());
  tempra::ag::backward(ctx, tempra::mean(ctx, tempra::sum(ctx, tempra::mul(ctx, d, d), 1), 0));
  const std::pair<Array, Array> pairs[] = {{gw1.array(), w1.grad()},
                                           {m.b1.grad().array(), b1.grad()},
                                           {m.w2.grad().array(), w2.grad()},
                                           {m.b2.grad().array(), b2.grad()}};
  for (const auto& [typed, untyped] : pairs) {
    const auto a = values(ctx, typed), b = values(ctx, untyped);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12 * (1.0 + std::abs(b[i]))) << i;
  }

  // One SGD step, outside the graph, lowers the loss.
  const double lr = 0.1;
  Model next;
  {
    tempra::NoGradGuard no_grad;
    next = Model{tempra::sub(ctx, m.w1.detach(), tempra::mul(ctx, m.w1.grad(), lr)),
                 tempra::sub(ctx, m.b1.detach(), tempra::mul(ctx, m.b1.grad(), lr)),
                 tempra::sub(ctx, m.w2.detach(), tempra::mul(ctx, m.w2.grad(), lr)),
                 tempra::sub(ctx, m.b2.detach(), tempra::mul(ctx, m.b2.grad(), lr))};
  }
  EXPECT_FALSE(next.w1.requires_grad());
  const double before = loss.array().at({}), after = loss_of(ctx, next, x, target).array().at({});
  EXPECT_LT(after, before);
  m.w1.zero_grad();
  EXPECT_FALSE(m.w1.grad().defined());
}

}  // namespace
