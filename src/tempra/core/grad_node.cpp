// tempra/core/grad_node.cpp: grad mode, nodes, recording, and the one VJP every view shares.
#include "tempra/core/grad_node.h"

#include <algorithm>
#include <utility>

namespace tempra {

namespace {
thread_local bool t_grad_mode = true;
}  // namespace

bool grad_mode_enabled() { return t_grad_mode; }

GradModeGuard::GradModeGuard(bool enabled) : previous_(t_grad_mode) { t_grad_mode = enabled; }
GradModeGuard::~GradModeGuard() { t_grad_mode = previous_; }

bool any_requires_grad(std::initializer_list<const Array*> inputs) {
  if (!t_grad_mode) return false;
  for (const Array* a : inputs)
    if (a->requires_grad()) return true;
  return false;
}

bool any_requires_grad(const std::vector<Array>& inputs) {
  if (!t_grad_mode) return false;
  for (const Array& a : inputs)
    if (a.requires_grad()) return true;
  return false;
}

GradNode::GradNode(std::string name, Dims shape, DType dtype)
    : name_(std::move(name)), shape_(shape), dtype_(dtype) {}

GradNode::GradNode(std::string name, std::vector<std::shared_ptr<GradNode>> inputs, Dims shape, DType dtype,
                   VjpFn vjp)
    : name_(std::move(name)), inputs_(std::move(inputs)), shape_(shape), dtype_(dtype), vjp_(std::move(vjp)) {}

std::shared_ptr<GradNode> GradNode::leaf(Dims shape, DType dtype) {
  std::shared_ptr<GradNode> node(new GradNode("leaf", shape, dtype));
  node->leaf_ = true;
  return node;
}

std::vector<Array> GradNode::vjp(ExecContext& ctx, const Array& grad_out, const std::vector<bool>& needs) {
  check(!leaf_, "backward", "a leaf has no VJP");
  check(!released_, "backward", "the graph through '", name_,
        "' was already used by a backward pass, which freed what it saved; run the forward pass again "
        "(one backward per forward)");
  return vjp_(ctx, grad_out, needs);
}

void GradNode::release() {
  vjp_ = nullptr;
  released_ = true;
}

void record_op(Array& out, std::string name, const std::vector<Array>& inputs, VjpFn vjp) {
  if (any_requires_grad(inputs)) attach_grad_node(out, std::move(name), inputs, std::move(vjp));
}

void attach_grad_node(Array& out, std::string name, const std::vector<Array>& inputs, VjpFn vjp) {
  std::vector<std::shared_ptr<GradNode>> edges;
  edges.reserve(inputs.size());
  for (const Array& a : inputs) edges.push_back(a.defined() ? a.grad_node() : nullptr);
  out.set_grad_node(std::make_shared<GradNode>(std::move(name), std::move(edges), out.shape(), out.dtype(),
                                               std::move(vjp)));
}

// ---- Array's autograd members ----

Array& Array::set_requires_grad(bool enabled) {
  check(defined(), "set_requires_grad", "the array is empty (default-constructed)");
  if (!enabled) {
    node_.reset();
    return *this;
  }
  check(dtype_ == DType::f32 || dtype_ == DType::f64, "set_requires_grad",
        "only f32 and f64 arrays can require a gradient, got ", dtype_.name(), " ", shape_);
  check(!node_ || node_->is_leaf(), "set_requires_grad", "this array of shape ", shape_,
        " was produced by '", node_ ? node_->name() : "", "' and already tracks its inputs");
  if (!node_) node_ = GradNode::leaf(shape_, dtype_);
  return *this;
}

bool Array::is_leaf() const { return !node_ || node_->is_leaf(); }

Array Array::grad() const { return node_ && node_->is_leaf() ? node_->grad : Array{}; }

void Array::set_grad(const Array& g) {
  check(node_ && node_->is_leaf(), "set_grad", "only a leaf that requires a gradient holds one (shape ", shape_,
        ")");
  if (g.defined())
    check(g.shape() == shape_ && g.dtype() == dtype_, "set_grad", "gradient ", g.dtype().name(), " ", g.shape(),
          " does not match the parameter ", dtype_.name(), " ", shape_);
  node_->grad = g.detach();
}

Array Array::detach() const {
  Array out = *this;
  out.node_.reset();
  return out;
}

// The VJP of every view: a view reads elements of its input's storage, so its gradient adds
// each element of grad_out into the input position the view read it from. That is a strided
// scatter into a buffer laid out like the input (the span its strides cover), read back through
// the input's own strides. Three cases, from the view's strides:
//   - it reads every input element exactly once (permute, transpose, reshape, squeeze): a plain
//     strided copy into uninitialized memory, rows in parallel;
//   - it reads some elements once and skips others (slice, select): the same copy into zeros;
//   - it reads some elements many times (broadcast, stride 0): a scatter-add into zeros, one
//     thread, rows in index order, so the sums are deterministic.
namespace {

struct Geometry {
  Dims shape, strides;
  int64_t offset = 0;
};

template <class T, bool kAccumulate>
void scatter_rows(T* dst, const Geometry& view, const Array& grad, int64_t first, int64_t last) {
  const T* src = grad.data<T>();
  const int64_t n = inner_extent(view.shape);
  const int64_t sd = inner_stride(view.strides), ss = inner_stride(grad.strides());
  for_each_row<2>(view.shape, {&view.strides, &grad.strides()}, first, last, [&](int64_t, auto off) {
    T* d = dst + view.offset + off[0];
    const T* s = src + off[1];
    for (int64_t j = 0; j < n; ++j) {
      if constexpr (kAccumulate) d[j * sd] += s[j * ss];
      else d[j * sd] = s[j * ss];
    }
  });
}

template <class T>
void scatter(ExecContext& ctx, T* dst, const Geometry& view, const Array& grad, bool injective) {
  const int64_t rows = row_count(view.shape), n = inner_extent(view.shape);
  if (rows == 0 || n == 0) return;
  if (!injective) return scatter_rows<T, true>(dst, view, grad, 0, rows);
  const int64_t grain = std::max<int64_t>(1, 16384 / n);
  ctx.threads().parallel_for(rows, grain,
                             [&](int64_t first, int64_t last) { scatter_rows<T, false>(dst, view, grad, first, last); });
}

}  // namespace

Array Array::finish_view(Array out, const char* op) const {
  out.node_.reset();
  if (!node_ || !t_grad_mode) return out;
  for (int64_t s : strides_)
    check(s >= 0, op, "cannot record a gradient through negative strides ", strides_);
  // The input's span of storage, [lo, lo + span): every element the view can read.
  int64_t span = shape_.product() > 0 ? 1 : 0;
  for (int d = 0; d < rank() && span > 0; ++d) span += (shape_[d] - 1) * strides_[d];
  const Geometry input{shape_, strides_, 0};
  const Geometry view{out.shape_, out.strides_, out.offset_ - offset_};
  // Views of a valid input alias only through zero strides, so without them each element the
  // view reads is read once; with as many elements as the input, each input element is read.
  bool injective = true;
  for (int d = 0; d < view.shape.size(); ++d)
    if (view.shape[d] > 1 && view.strides[d] == 0) injective = false;
  const bool covers = injective && view.shape.product() == shape_.product();
  const DType dtype = dtype_;
  record_op(out, op, {*this},
            [input, view, span, dtype, injective, covers](ExecContext& ctx, const Array& g, const std::vector<bool>&) {
              Array buffer = covers ? Array::empty(ctx, {span}, dtype) : Array::zeros(ctx, {span}, dtype);
              if (dtype == DType::f32) scatter(ctx, buffer.data<float>(), view, g, injective);
              else scatter(ctx, buffer.data<double>(), view, g, injective);
              return std::vector<Array>{Array(buffer.storage(), dtype, input.shape, input.strides, 0)};
            });
  return out;
}

}  // namespace tempra
