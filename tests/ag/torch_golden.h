// tests/ag/torch_golden.h: loading the gradient goldens tools/gen_grad_goldens.py writes, and
// comparing tempra's loss and gradients with PyTorch's.
//
// A file holds one case: its inputs name the data tensors then the parameters (all f64), its
// outputs the loss then one gradient per parameter. load_model makes every parameter a leaf
// that requires a gradient; expect_gradients_match checks the loss and each gradient element
// within `tolerance` relative (|ours - torch| <= tolerance * |torch|, plus 1e-12 absolute for
// entries that are zero up to rounding) and prints the largest relative error per tensor.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "support/golden.h"
#include "tempra/ops/ops.h"

namespace tempra::testing {

struct GoldenModel {
  GoldenCase spec;
  std::map<std::string, Array> tensors;  // by short name: "x", "w1", ...
  std::vector<std::string> parameters;   // short names, in the file's order
};

inline GoldenModel load_model(ExecContext& ctx, const std::string& family, const std::vector<std::string>& data) {
  GoldenFile file(ctx, golden_path(family));
  EXPECT_EQ(file.cases().size(), 1u);
  GoldenModel m{file.cases().at(0), {}, {}};
  const std::string prefix = m.spec.name + ".";
  for (const std::string& full : m.spec.inputs) {
    const std::string name = full.substr(prefix.size());
    Array a = copy(ctx, file.tensor(full));
    if (std::find(data.begin(), data.end(), name) == data.end()) {
      a.set_requires_grad();
      m.parameters.push_back(name);
    }
    m.tensors.emplace(name, a);
  }
  // The outputs too, by their short names ("loss", "grad.w1").
  for (const std::string& full : m.spec.outputs) m.tensors.emplace(full.substr(prefix.size()), file.tensor(full));
  return m;
}

inline double max_relative_error(ExecContext& ctx, const Array& ours, const Array& theirs, double tolerance,
                                 const std::string& what) {
  EXPECT_EQ(ours.shape(), theirs.shape()) << what;
  if (ours.shape() != theirs.shape()) return INFINITY;
  const auto a = to_vector<double>(ctx, ours), b = to_vector<double>(ctx, theirs);
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double diff = std::abs(a[i] - b[i]);
    EXPECT_LE(diff, tolerance * std::abs(b[i]) + 1e-12)
        << what << " element " << i << ": tempra " << a[i] << ", torch " << b[i];
    if (b[i] != 0.0) worst = std::max(worst, diff / std::abs(b[i]));
  }
  return worst;
}

inline void expect_gradients_match(ExecContext& ctx, const GoldenModel& m, const Array& loss, double tolerance) {
  const double loss_error = max_relative_error(ctx, loss, m.tensors.at("loss"), tolerance, m.spec.name + " loss");
  std::printf("golden %s loss %.17g (torch %.17g) relative error %.3g\n", m.spec.name.c_str(), loss.at({}),
              m.tensors.at("loss").at({}), loss_error);
  for (const std::string& p : m.parameters) {
    const Array g = m.tensors.at(p).grad();
    EXPECT_TRUE(g.defined()) << m.spec.name << ": no gradient reached " << p;
    if (!g.defined()) continue;
    const double e = max_relative_error(ctx, g, m.tensors.at("grad." + p), tolerance, m.spec.name + " grad " + p);
    std::printf("golden %s grad %-9s %-12s max relative error %.3g\n", m.spec.name.c_str(), p.c_str(),
                to_string(g.shape()).c_str(), e);
  }
}

}  // namespace tempra::testing
