// tests/ops/golden_test.cpp: every op against PyTorch goldens (tools/gen_goldens.py).
//
// One parameterized test per golden case: the inputs are read from the file, the case's view
// ("T": transpose the last two axes, "S2": every second element of the last axis) is applied so
// non-contiguous layouts are exercised, the op runs on the scalar backend, and each output is
// compared with the golden under the family's tolerance below. Integer and bool outputs must be
// exact. A summary test prints the worst error per op, the figures quoted in closing notes.
//
// Tolerances (|got - want| <= atol + rtol * |want|), per output dtype and family:
//   f32 elementwise, casts, structure: rtol 4e-6 (a few ulp: f32 libm vs torch in f64)
//   f32 reductions, softmax, norms, losses: rtol 1e-5, atol 1e-6
//   f32 matmul/einsum, attention, conv1d (k-term f32 dot products): rtol 1e-5, atol 1e-5
//   rope (f32 cos/sin of angles up to 4095 rad, computed in double then rounded): rtol 1e-5, atol 2e-6
//   f16 / bf16 outputs: one unit in the last place of the format (rtol 2^-10 / 2^-7)
//   f64 outputs: rtol 1e-12
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <mutex>

#include "support/golden.h"
#include "tempra/backend/kernels.h"
#include "tempra/ops/ops.h"

namespace tempra {
namespace {

using testing::GoldenCase;
using testing::GoldenFile;
using Json = nlohmann::json;

const std::vector<std::string> kFamilies = {"unary",   "binary", "cast",      "reduce",
                                            "softmax", "matmul", "structure", "neural"};

struct Tolerance {
  double rtol, atol;
};

Tolerance tolerance_for(const GoldenCase& c, DType out) {
  if (out == DType::f16) return {std::ldexp(1.0, -10), 0};
  if (out == DType::bf16) return {std::ldexp(1.0, -7), 0};
  if (out == DType::f64) return {1e-12, 1e-14};
  if (c.file == "unary" || c.file == "binary" || c.file == "cast" || c.file == "structure") return {4e-6, 1e-30};
  if (c.file == "matmul") return {1e-5, 1e-5};
  if (c.op == "attention" || c.op == "conv1d") return {1e-5, 1e-5};
  if (c.op == "rope") return {1e-5, 2e-6};
  return {1e-5, 1e-6};
}

DType dtype_named(const std::string& s) {
  static const std::map<std::string, DType> names{
      {"F32", DType::f32}, {"F64", DType::f64}, {"F16", DType::f16}, {"BF16", DType::bf16}, {"I8", DType::i8},
      {"U8", DType::u8},   {"I16", DType::i16}, {"I32", DType::i32}, {"I64", DType::i64},   {"BOOL", DType::boolean}};
  return names.at(s);
}

Array apply_view(const Array& a, const std::string& view) {
  if (view.empty()) return a;
  if (view == "T") return a.transpose(-1, -2);
  if (view == "S2") return a.slice(-1, 0, a.dim(-1), 2);
  throw Error("unknown view " + view);
}

Reduction reduction_named(const std::string& s) {
  if (s == "none") return Reduction::none;
  if (s == "sum") return Reduction::sum;
  return Reduction::mean;
}

using Runner = std::function<std::vector<Array>(ExecContext&, const std::vector<Array>&, const Json&)>;

Array optional_input(const std::vector<Array>& in, size_t i) { return i < in.size() ? in[i] : Array{}; }

const std::map<std::string, Runner>& runners() {
  static const std::map<std::string, Runner> table = [] {
    std::map<std::string, Runner> t;
    const std::pair<const char*, UnaryOp> unary_ops[] = {
        {"neg", UnaryOp::neg},       {"abs", UnaryOp::abs},         {"exp", UnaryOp::exp},
        {"log", UnaryOp::log},       {"sqrt", UnaryOp::sqrt},       {"rsqrt", UnaryOp::rsqrt},
        {"square", UnaryOp::square}, {"tanh", UnaryOp::tanh},       {"sigmoid", UnaryOp::sigmoid},
        {"relu", UnaryOp::relu},     {"gelu_tanh", UnaryOp::gelu_tanh}, {"gelu_erf", UnaryOp::gelu_erf},
        {"silu", UnaryOp::silu},     {"softplus", UnaryOp::softplus}, {"sin", UnaryOp::sin},
        {"cos", UnaryOp::cos}};
    for (const auto& [name, op_value] : unary_ops)
      t[name] = [op = op_value](ExecContext& ctx, const std::vector<Array>& in, const Json&) {
        return std::vector<Array>{unary(ctx, op, in[0])};
      };
    const std::pair<const char*, BinaryOp> binary_ops[] = {
        {"add", BinaryOp::add}, {"sub", BinaryOp::sub},         {"mul", BinaryOp::mul},        {"div", BinaryOp::div},
        {"pow", BinaryOp::pow}, {"maximum", BinaryOp::maximum}, {"minimum", BinaryOp::minimum}};
    for (const auto& [name, op_value] : binary_ops)
      t[name] = [op = op_value](ExecContext& ctx, const std::vector<Array>& in, const Json& p) {
        if (p.contains("scalar")) return std::vector<Array>{binary(ctx, op, in[0], p["scalar"].get<double>())};
        return std::vector<Array>{binary(ctx, op, in[0], in[1])};
      };
    t["cast"] = [](ExecContext& ctx, const std::vector<Array>& in, const Json& p) {
      return std::vector<Array>{cast(ctx, in[0], dtype_named(p["dtype"]))};
    };
    const std::pair<const char*, ReduceOp> reduce_ops[] = {{"sum", ReduceOp::sum},
                                                           {"mean", ReduceOp::mean},
                                                           {"max", ReduceOp::max},
                                                           {"min", ReduceOp::min},
                                                           {"var", ReduceOp::variance},
                                                           {"logsumexp", ReduceOp::logsumexp}};
    for (const auto& [name, op_value] : reduce_ops)
      t[name] = [op = op_value](ExecContext& ctx, const std::vector<Array>& in, const Json& p) {
        return std::vector<Array>{reduce(ctx, op, in[0], p["dim"], p["keepdim"], p.value("correction", 0))};
      };
    t["argmax"] = [](ExecContext& ctx, const std::vector<Array>& in, const Json& p) {
      return std::vector<Array>{argmax(ctx, in[0], p["dim"], p["keepdim"])};
    };
    for (bool log : {false, true})
      t[log ? "log_softmax" : "softmax"] = [log](ExecContext& ctx, const std::vector<Array>& in, const Json& p) {
        SoftmaxOptions o{p["scale"].get<double>(), p["causal"].get<bool>(), optional_input(in, 1)};
        return std::vector<Array>{log ? log_softmax(ctx, in[0], p["dim"], o) : softmax(ctx, in[0], p["dim"], o)};
      };
    t["matmul"] = [](ExecContext& ctx, const std::vector<Array>& in, const Json&) {
      return std::vector<Array>{matmul(ctx, in[0], in[1])};
    };
    t["bmm"] = [](ExecContext& ctx, const std::vector<Array>& in, const Json&) {
      return std::vector<Array>{bmm(ctx, in[0], in[1])};
    };
    t["einsum"] = [](ExecContext& ctx, const std::vector<Array>& in, const Json& p) {
      return std::vector<Array>{einsum(ctx, p["eq"].get<std::string>(), in[0], in[1])};
    };
    t["concat"] = [](ExecContext& ctx, const std::vector<Array>& in, const Json& p) {
      return std::vector<Array>{concat(ctx, in, p["dim"])};
    };
    t["stack"] = [](ExecContext& ctx, const std::vector<Array>& in, const Json& p) {
      return std::vector<Array>{stack(ctx, in, p["dim"])};
    };
    t["split"] = [](ExecContext&, const std::vector<Array>& in, const Json& p) {
      return split(in[0], p["dim"], p["sizes"].get<std::vector<int64_t>>());
    };
    t["gather"] = [](ExecContext& ctx, const std::vector<Array>& in, const Json& p) {
      return std::vector<Array>{gather(ctx, in[0], p["dim"], in[1])};
    };
    t["index_select"] = [](ExecContext& ctx, const std::vector<Array>& in, const Json& p) {
      return std::vector<Array>{index_select(ctx, in[0], p["dim"], in[1])};
    };
    t["embedding"] = [](ExecContext& ctx, const std::vector<Array>& in, const Json&) {
      return std::vector<Array>{embedding(ctx, in[0], in[1])};
    };
    t["where"] = [](ExecContext& ctx, const std::vector<Array>& in, const Json&) {
      return std::vector<Array>{where(ctx, in[0], in[1], in[2])};
    };
    t["pad"] = [](ExecContext& ctx, const std::vector<Array>& in, const Json& p) {
      std::vector<std::pair<int64_t, int64_t>> pads;
      for (const auto& pair : p["pads"]) pads.emplace_back(pair[0].get<int64_t>(), pair[1].get<int64_t>());
      return std::vector<Array>{pad(ctx, in[0], pads, p["value"].get<double>())};
    };
    t["tril"] = [](ExecContext& ctx, const std::vector<Array>& in, const Json& p) {
      return std::vector<Array>{tril(ctx, in[0], p["diagonal"].get<int64_t>())};
    };
    t["triu"] = [](ExecContext& ctx, const std::vector<Array>& in, const Json& p) {
      return std::vector<Array>{triu(ctx, in[0], p["diagonal"].get<int64_t>())};
    };
    t["rms_norm"] = [](ExecContext& ctx, const std::vector<Array>& in, const Json& p) {
      return std::vector<Array>{rms_norm(ctx, in[0], optional_input(in, 1), p["eps"].get<double>())};
    };
    t["layer_norm"] = [](ExecContext& ctx, const std::vector<Array>& in, const Json& p) {
      return std::vector<Array>{
          layer_norm(ctx, in[0], optional_input(in, 1), optional_input(in, 2), p["eps"].get<double>())};
    };
    t["rope"] = [](ExecContext& ctx, const std::vector<Array>& in, const Json& p) {
      RopeParams r;
      r.mode = p["mode"] == "normal" ? RopeMode::normal : RopeMode::neox;
      r.n_dims = p["n_dims"];
      r.freq_base = p["freq_base"];
      r.freq_scale = p["freq_scale"];
      return std::vector<Array>{rope(ctx, in[0], in[1], r)};
    };
    t["attention"] = [](ExecContext& ctx, const std::vector<Array>& in, const Json& p) {
      AttentionOptions o;
      o.causal = p["causal"];
      if (!p["scale"].is_null()) o.scale = p["scale"].get<double>();
      o.mask = optional_input(in, 3);
      return std::vector<Array>{attention(ctx, in[0], in[1], in[2], o)};
    };
    t["cross_entropy"] = [](ExecContext& ctx, const std::vector<Array>& in, const Json& p) {
      CrossEntropyOptions o{p["ignore_index"].get<int64_t>(), reduction_named(p["reduction"])};
      return std::vector<Array>{cross_entropy(ctx, in[0], in[1], o)};
    };
    t["mse"] = [](ExecContext& ctx, const std::vector<Array>& in, const Json& p) {
      return std::vector<Array>{mse(ctx, in[0], in[1], reduction_named(p["reduction"]))};
    };
    t["conv1d"] = [](ExecContext& ctx, const std::vector<Array>& in, const Json& p) {
      Conv1dOptions o{p["stride"], p["padding"], p["dilation"], p["groups"], p["causal"]};
      return std::vector<Array>{conv1d(ctx, in[0], in[1], optional_input(in, 2), o)};
    };
    return t;
  }();
  return table;
}

// Worst errors seen per op, for the summary.
struct Worst {
  double abs = 0, rel = 0;
  int cases = 0;
};
std::mutex worst_mutex;
std::map<std::string, Worst>& worst_by_op() {
  static std::map<std::string, Worst> w;
  return w;
}

void check_case(ExecContext& ctx, const GoldenCase& c) {
  const GoldenFile file(ctx, testing::golden_path(c.file));
  std::vector<Array> inputs;
  for (size_t i = 0; i < c.inputs.size(); ++i) inputs.push_back(apply_view(file.tensor(c.inputs[i]), c.views[i]));
  auto runner = runners().find(c.op);
  ASSERT_NE(runner, runners().end()) << "no runner for op " << c.op;
  const std::vector<Array> outputs = runner->second(ctx, inputs, c.params);
  ASSERT_EQ(outputs.size(), c.outputs.size());
  Worst worst;
  for (size_t o = 0; o < outputs.size(); ++o) {
    const Array& want = file.tensor(c.outputs[o]);
    const Array& got = outputs[o];
    ASSERT_EQ(got.shape(), want.shape()) << c.outputs[o];
    ASSERT_EQ(got.dtype(), want.dtype()) << c.outputs[o];
    const std::vector<double> g = to_vector<double>(ctx, got), w = to_vector<double>(ctx, want);
    const bool exact = !want.dtype().is_floating();
    const Tolerance tol = tolerance_for(c, want.dtype());
    for (size_t i = 0; i < w.size(); ++i) {
      if (std::isnan(w[i])) {
        EXPECT_TRUE(std::isnan(g[i])) << c.outputs[o] << "[" << i << "]";
        continue;
      }
      if (std::isinf(w[i]) || exact) {
        EXPECT_EQ(g[i], w[i]) << c.outputs[o] << "[" << i << "]";
        continue;
      }
      const double err = std::abs(g[i] - w[i]);
      worst.abs = std::max(worst.abs, err);
      // Relative error is reported where it means something; tiny goldens are covered by atol.
      if (std::abs(w[i]) >= 1e-6) worst.rel = std::max(worst.rel, err / std::abs(w[i]));
      EXPECT_LE(err, tol.atol + tol.rtol * std::abs(w[i]))
          << c.outputs[o] << "[" << i << "]: got " << g[i] << ", want " << w[i];
    }
  }
  std::lock_guard lock(worst_mutex);
  Worst& w = worst_by_op()[c.file + "/" + c.op];
  w.abs = std::max(w.abs, worst.abs);
  w.rel = std::max(w.rel, worst.rel);
  ++w.cases;
}


class GoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenTest, matches_torch) {
  ExecContext ctx;
  check_case(ctx, GetParam());
  EXPECT_EQ(ctx.pool()->outstanding(), 0) << "a buffer outlived every array that used it";
}

std::string case_name(const ::testing::TestParamInfo<GoldenCase>& info) {
  std::string s = info.param.file + "_" + info.param.name;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Torch, GoldenTest, ::testing::ValuesIn(testing::load_all_cases(kFamilies)), case_name);

// Runs every case in one process on each backend and prints the worst error per op (for the
// closing note): the per-case tests above use the default backend, these hold both to torch.
class GoldenSummary : public ::testing::TestWithParam<Backend> {};

TEST_P(GoldenSummary, every_case_runs_and_worst_errors_are_reported) {
  ExecContext ctx(ExecOptions{.backend = GetParam()});
  worst_by_op().clear();
  const auto all = testing::load_all_cases(kFamilies);
  for (const GoldenCase& c : all) check_case(ctx, c);
  int counted = 0;
  for (const auto& [op, w] : worst_by_op()) counted += w.cases;
  EXPECT_EQ(counted, static_cast<int>(all.size()));
  std::printf("backend %s\n%-28s %6s %12s %12s\n", kernels_for(GetParam()).name, "family/op", "cases",
              "max abs err", "max rel err");
  for (const auto& [op, w] : worst_by_op())
    std::printf("%-28s %6d %12.3g %12.3g\n", op.c_str(), w.cases, w.abs, w.rel);
}

INSTANTIATE_TEST_SUITE_P(Backends, GoldenSummary, ::testing::Values(Backend::scalar, Backend::native),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           return std::string(info.param == Backend::scalar ? "scalar" : "native");
                         });

}  // namespace
}  // namespace tempra
