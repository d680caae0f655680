// tempra/backend/scalar/delta_rule.cpp: the gated delta rule (DeltaRuleArgs in kernel_args.h),
// row by row of each state matrix as the contract writes it.
#include <cmath>

#include "tempra/backend/scalar/scalar.h"

namespace tempra::scalar {

void gated_delta_rule(const DeltaRuleArgs& a, ThreadPool& pool) {
  const int64_t S = a.head_dim;
  const float scale = 1.0f / std::sqrt(float(S));
  pool.parallel_for(a.v_heads, 1, [&](int64_t first, int64_t last) {
    for (int64_t h = first; h < last; ++h) {
      float* M = a.state + h * S * S;  // M[j][i] at i * S + j
      for (int64_t t = 0; t < a.n; ++t) {
        const auto [q, k, v, decay, beta, out] = delta_rule_step(a, h, t);
        for (int64_t j = 0; j < S; ++j) {
          float mk = 0.0f;
          for (int64_t i = 0; i < S; ++i) {
            float& m = M[i * S + j];
            m *= decay;
            mk += m * k[i];
          }
          const float delta = (v[j] - mk) * beta;
          float mq = 0.0f;
          for (int64_t i = 0; i < S; ++i) {
            float& m = M[i * S + j];
            m += k[i] * delta;
            mq += m * q[i];
          }
          out[j] = mq * scale;
        }
      }
    }
  });
}

}  // namespace tempra::scalar
