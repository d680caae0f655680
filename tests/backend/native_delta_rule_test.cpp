// tests/backend/native_delta_rule_test.cpp: the gated delta rule (Kernels::gated_delta_rule).
//
// Scalar against a float64 reference written from the recurrence with M row-major (so a
// transposed state or a misread head would show), within 1e-5 relative + 1e-6 absolute over 12
// tokens; native bitwise scalar's (the contract fixes every operation and its order), for head
// dims that fill whole bands, single vectors and partial ones, on 1 and 2 threads; and a prompt
// in one call gives the bits of the same tokens one call each (a decode step's path).
#include <cmath>
#include <string>

#include "backend/parity.h"

namespace tempra {
namespace {

struct DeltaCase {
  int64_t n, k_heads, v_heads, head_dim;
  // Row strides with room to spare, as the convolution's output interleaves q | k | v.
  int64_t qk_stride() const { return 2 * k_heads * head_dim + v_heads * head_dim + 3; }
  int64_t v_stride() const { return v_heads * head_dim + 5; }
  int64_t out_stride() const { return v_heads * head_dim + 2; }
};

struct DeltaInputs {
  std::vector<float> qk, v, log_decay, beta, state;
  explicit DeltaInputs(const DeltaCase& c)
      : qk(parity::random_floats(size_t(c.n * c.qk_stride()), 11)),
        v(parity::random_floats(size_t(c.n * c.v_stride()), 12, -2, 2)),
        log_decay(parity::random_floats(size_t(c.n * c.v_heads), 13, -1.5f, -0.01f)),
        beta(parity::random_floats(size_t(c.n * c.v_heads), 14, 0.05f, 0.95f)),
        state(parity::random_floats(size_t(c.v_heads * c.head_dim * c.head_dim), 15, -0.5f, 0.5f)) {
    // Unit query and key heads, as the layer's L2 norm leaves them.
    for (int64_t t = 0; t < c.n; ++t)
      for (int64_t h = 0; h < 2 * c.k_heads; ++h) {
        float* x = qk.data() + t * c.qk_stride() + h * c.head_dim;
        double sum = 0;
        for (int64_t i = 0; i < c.head_dim; ++i) sum += double(x[i]) * x[i];
        for (int64_t i = 0; i < c.head_dim; ++i) x[i] = float(x[i] / std::sqrt(sum));
      }
  }
  // Tokens [first, first + n) of the case, writing out's rows from `out`.
  DeltaRuleArgs args(const DeltaCase& c, int64_t first, int64_t n, float* out) {
    return {.q = qk.data() + first * c.qk_stride(),
            .k = qk.data() + first * c.qk_stride() + c.k_heads * c.head_dim,
            .qk_stride = c.qk_stride(),
            .v = v.data() + first * c.v_stride(),
            .v_stride = c.v_stride(),
            .log_decay = log_decay.data() + first * c.v_heads,
            .beta = beta.data() + first * c.v_heads,
            .n = n,
            .k_heads = c.k_heads,
            .v_heads = c.v_heads,
            .head_dim = c.head_dim,
            .state = state.data(),
            .out = out + first * c.out_stride(),
            .out_stride = c.out_stride()};
  }
};

std::string trace(const DeltaCase& c) {
  return "n " + std::to_string(c.n) + " key heads " + std::to_string(c.k_heads) + " value heads " +
         std::to_string(c.v_heads) + " head dim " + std::to_string(c.head_dim);
}

// The recurrence in float64 over row-major copies of the states; returns out and the final
// states in the kernel's column-by-column layout (rounded to float).
void reference(const DeltaCase& c, const DeltaInputs& in, std::vector<float>& out, std::vector<float>& state) {
  const int64_t S = c.head_dim;
  out.assign(size_t(c.n * c.out_stride()), 0.0f);
  state.assign(in.state.size(), 0.0f);
  for (int64_t h = 0; h < c.v_heads; ++h) {
    std::vector<double> M(size_t(S * S));  // M[j * S + i]: row j, column i
    for (int64_t j = 0; j < S; ++j)
      for (int64_t i = 0; i < S; ++i) M[j * S + i] = in.state[h * S * S + i * S + j];
    const int64_t kh = h % c.k_heads;
    for (int64_t t = 0; t < c.n; ++t) {
      const float* q = in.qk.data() + t * c.qk_stride() + kh * S;
      const float* k = in.qk.data() + t * c.qk_stride() + (c.k_heads + kh) * S;
      const float* v = in.v.data() + t * c.v_stride() + h * S;
      const double decay = std::exp(double(in.log_decay[t * c.v_heads + h])), beta = in.beta[t * c.v_heads + h];
      for (int64_t j = 0; j < S; ++j) {
        double mk = 0;
        for (int64_t i = 0; i < S; ++i) mk += (M[j * S + i] *= decay) * k[i];
        const double delta = (v[j] - mk) * beta;
        double mq = 0;
        for (int64_t i = 0; i < S; ++i) mq += (M[j * S + i] += k[i] * delta) * q[i];
        out[size_t(t * c.out_stride() + h * S + j)] = float(mq / std::sqrt(double(S)));
      }
    }
    for (int64_t j = 0; j < S; ++j)
      for (int64_t i = 0; i < S; ++i) state[size_t(h * S * S + i * S + j)] = float(M[j * S + i]);
  }
}

TEST(GatedDeltaRule, ScalarFollowsTheRecurrenceAndNativeIsBitwiseScalar) {
  const DeltaCase cases[] = {{12, 1, 1, 16},  {12, 2, 4, 32}, {12, 1, 3, 40}, {12, 2, 2, 64},
                             {12, 1, 2, 128}, {12, 3, 3, 7},  {1, 2, 4, 128}, {12, 1, 1, 72}};
  for (const DeltaCase& c : cases) {
    SCOPED_TRACE(trace(c));
    std::vector<float> want_out, want_state;
    reference(c, DeltaInputs(c), want_out, want_state);

    ThreadPool one(1), two(2);
    DeltaInputs scalar_in(c), native_in(c), native2_in(c);
    std::vector<float> scalar_out(want_out.size()), native_out(want_out.size()), native2_out(want_out.size());
    scalar_kernels().gated_delta_rule(scalar_in.args(c, 0, c.n, scalar_out.data()), one);
    kernels_for(Backend::native).gated_delta_rule(native_in.args(c, 0, c.n, native_out.data()), one);
    kernels_for(Backend::native).gated_delta_rule(native2_in.args(c, 0, c.n, native2_out.data()), two);

    EXPECT_TRUE(parity::within(scalar_out, want_out, parity::relative_bound(want_out, 1e-5, 1e-6)));
    EXPECT_TRUE(parity::within(scalar_in.state, want_state, parity::relative_bound(want_state, 1e-5, 1e-6)));
    EXPECT_TRUE(parity::bitwise_equal(native_out, scalar_out));
    EXPECT_TRUE(parity::bitwise_equal(native_in.state, scalar_in.state));
    EXPECT_TRUE(parity::bitwise_equal(native2_out, scalar_out));
    EXPECT_TRUE(parity::bitwise_equal(native2_in.state, scalar_in.state));
  }
}

TEST(GatedDeltaRule, APromptGivesTheBitsOfItsTokensOneByOne) {
  const DeltaCase c{9, 2, 4, 48};
  for (Backend backend : {Backend::scalar, Backend::native}) {
    SCOPED_TRACE(backend == Backend::scalar ? "scalar" : "native");
    ThreadPool two(2);
    DeltaInputs whole(c), steps(c);
    std::vector<float> whole_out(size_t(c.n * c.out_stride())), steps_out(whole_out.size());
    kernels_for(backend).gated_delta_rule(whole.args(c, 0, c.n, whole_out.data()), two);
    for (int64_t t = 0; t < c.n; ++t) kernels_for(backend).gated_delta_rule(steps.args(c, t, 1, steps_out.data()), two);
    EXPECT_TRUE(parity::bitwise_equal(steps_out, whole_out));
    EXPECT_TRUE(parity::bitwise_equal(steps.state, whole.state));
  }
}

}  // namespace
}  // namespace tempra
