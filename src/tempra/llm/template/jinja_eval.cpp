// tempra/llm/template/jinja_eval.cpp: the tree-walking evaluator. Parity: jinja2 3.1 (see the header).
#include "tempra/llm/template/jinja_eval.h"

#include "tempra/llm/template/jinja_builtins.h"

namespace tempra::llm::jinja {
namespace {

enum class Flow { normal, break_, continue_ };

class Evaluator {
 public:
  Evaluator(const Dict& context, const SandboxLimits& limits) : limits_(limits) {
    Dict globals;
    add_global_functions(globals);
    for (const auto& [k, v] : context.items) globals.set(k, v);  // the caller's names win
    scopes_.push_back(std::move(globals));
    scopes_.emplace_back();  // the template's own top-level assignments
  }

  std::string run(const Body& program) {
    exec_body(program);
    return std::move(out_);
  }

 private:
  const SandboxLimits& limits_;
  std::vector<Dict> scopes_;
  std::string out_;
  std::size_t iterations_ = 0;
  int depth_ = 0;

  struct DepthGuard {
    Evaluator& e;
    DepthGuard(Evaluator& evaluator, int line, int column) : e(evaluator) {
      if (++e.depth_ > e.limits_.max_depth)
        fail_site(e.site(line, column), "nesting deeper than the sandbox limit of " + std::to_string(e.limits_.max_depth));
    }
    ~DepthGuard() { --e.depth_; }
  };

  Site site(int line, int column) const { return Site{line, column, limits_.max_output_bytes}; }

  void write(const std::string& text, int line, int column) {
    if (out_.size() + text.size() > limits_.max_output_bytes)
      fail_site(site(line, column), "output exceeds the sandbox limit of " + std::to_string(limits_.max_output_bytes) + " bytes");
    out_ += text;
  }

  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (const Value* v = it->find(name)) return *v;
    return Value::undefined("'" + name + "'");
  }

  Flow exec_body(const Body& body) {
    for (const StmtPtr& s : body) {
      Flow flow = exec(*s);
      if (flow != Flow::normal) return flow;
    }
    return Flow::normal;
  }

  Flow exec(const Stmt& s) {
    DepthGuard guard(*this, s.line, s.column);
    switch (s.kind) {
      case Stmt::Kind::text: write(s.text, s.line, s.column); return Flow::normal;
      case Stmt::Kind::output: write(to_str(eval(*s.expr)), s.line, s.column); return Flow::normal;
      case Stmt::Kind::if_:
        for (const auto& [cond, body] : s.branches)
          if (truthy(eval(*cond))) return exec_body(body);
        return exec_body(s.else_body);
      case Stmt::Kind::for_: return exec_for(s);
      case Stmt::Kind::set: exec_set(s); return Flow::normal;
      case Stmt::Kind::set_block: {
        std::string saved = std::move(out_);
        out_.clear();
        Flow flow = exec_body(s.body);
        std::string captured = std::move(out_);
        out_ = std::move(saved);
        scopes_.back().set(s.targets[0], Value::from(std::move(captured)));
        return flow;
      }
      case Stmt::Kind::break_: return Flow::break_;
      case Stmt::Kind::continue_: return Flow::continue_;
    }
    return Flow::normal;
  }

  void assign(const std::vector<std::string>& targets, const Value& value, const Stmt& s) {
    if (targets.size() == 1) {
      scopes_.back().set(targets[0], value);
      return;
    }
    List items = iterate(value, site(s.line, s.column));
    if (items.size() != targets.size())
      fail_site(site(s.line, s.column), "cannot unpack " + std::to_string(items.size()) + " values into " +
                                            std::to_string(targets.size()) + " names");
    for (std::size_t i = 0; i < targets.size(); ++i) scopes_.back().set(targets[i], items[i]);
  }

  void exec_set(const Stmt& s) {
    Value value = eval(*s.expr);
    if (s.attribute.empty()) {
      assign(s.targets, value, s);
      return;
    }
    Value ns = lookup(s.targets[0]);
    if (!ns.is_dict() || !ns.dict->is_namespace)
      fail_site(site(s.line, s.column), "cannot assign attribute '" + s.attribute + "' on '" + s.targets[0] +
                                            "': it is not a namespace()");
    ns.dict->set(s.attribute, std::move(value));  // namespaces are shared: the change is seen outside
  }

  Flow exec_for(const Stmt& s) {
    Site at = site(s.line, s.column);
    List items = iterate(eval(*s.expr), at);
    if (s.filter) {  // `for x in xs if cond`: the loop variable counts only the kept items
      List kept;
      for (const Value& item : items) {
        scopes_.emplace_back();
        assign(s.targets, item, s);
        bool keep = truthy(eval(*s.filter));
        scopes_.pop_back();
        if (keep) kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) return exec_body(s.else_body);
    auto n = static_cast<std::int64_t>(items.size());
    for (std::int64_t i = 0; i < n; ++i) {
      if (++iterations_ > limits_.max_loop_iterations)
        fail_site(at, "more than " + std::to_string(limits_.max_loop_iterations) + " loop iterations (sandbox limit)");
      Dict loop;
      loop.items = {{"index0", Value::from(i)},
                    {"index", Value::from(i + 1)},
                    {"revindex0", Value::from(n - i - 1)},
                    {"revindex", Value::from(n - i)},
                    {"first", Value::from(i == 0)},
                    {"last", Value::from(i == n - 1)},
                    {"length", Value::from(n)},
                    {"previtem", i > 0 ? items[static_cast<std::size_t>(i - 1)] : Value::undefined("'loop.previtem'")},
                    {"nextitem", i + 1 < n ? items[static_cast<std::size_t>(i + 1)] : Value::undefined("'loop.nextitem'")}};
      scopes_.emplace_back();
      scopes_.back().set("loop", Value::from(std::move(loop)));
      assign(s.targets, items[static_cast<std::size_t>(i)], s);
      Flow flow = exec_body(s.body);
      scopes_.pop_back();
      if (flow == Flow::break_) break;
    }
    return Flow::normal;
  }

  Args eval_args(const Expr& e, std::size_t first) {
    Args args;
    for (std::size_t i = first; i < e.args.size(); ++i) args.positional.push_back(eval(*e.args[i]));
    for (const auto& [k, v] : e.kwargs) args.keyword.emplace_back(k, eval(*v));
    return args;
  }

  Value eval(const Expr& e) {
    DepthGuard guard(*this, e.line, e.column);
    Site at = site(e.line, e.column);
    switch (e.kind) {
      case Expr::Kind::constant: return e.value;
      case Expr::Kind::name: return lookup(e.name);
      case Expr::Kind::getattr: return get_attribute(eval(*e.args[0]), e.name, at);
      case Expr::Kind::getitem: {
        Value object = eval(*e.args[0]);
        return get_item(object, eval(*e.args[1]), at);
      }
      case Expr::Kind::slice: {
        Value object = eval(*e.args[0]);
        auto part = [&](std::size_t i) { return e.args[i] ? eval(*e.args[i]) : Value::none(); };
        Value start = part(1), stop = part(2), step = part(3);
        return get_slice(object, start, stop, step, at);
      }
      case Expr::Kind::call: {
        Value callee = eval(*e.args[0]);
        return call(callee, eval_args(e, 1), at);
      }
      case Expr::Kind::filter: {
        Value input = eval(*e.args[0]);
        return apply_filter(e.name, input, eval_args(e, 1), at);
      }
      case Expr::Kind::test: {
        Value input = eval(*e.args[0]);
        bool result = apply_test(e.name, input, eval_args(e, 1), at);
        return Value::from(e.negated ? !result : result);
      }
      case Expr::Kind::unary: {
        Value v = eval(*e.args[0]);
        if (e.name == "not") return Value::from(!truthy(v));
        if (v.kind == Value::Kind::boolean) v = Value::from(std::int64_t{v.boolean ? 1 : 0});
        if (e.name == "+" && v.is_number()) return v;
        if (e.name == "-" && v.kind == Value::Kind::integer && v.integer != INT64_MIN) return Value::from(-v.integer);
        if (e.name == "-" && v.kind == Value::Kind::floating) return Value::from(-v.floating);
        fail_site(at, "bad operand type for unary " + e.name + ": '" + type_name(v) + "'");
      }
      case Expr::Kind::binary: {
        Value left = eval(*e.args[0]);
        if (e.name == "and") return truthy(left) ? eval(*e.args[1]) : left;
        if (e.name == "or") return truthy(left) ? left : eval(*e.args[1]);
        Value right = eval(*e.args[1]);
        return binary_op(e.name, left, right, at);
      }
      case Expr::Kind::compare: {
        Value left = eval(*e.args[0]);
        for (std::size_t i = 0; i < e.ops.size(); ++i) {  // a < b < c chains like Python
          Value right = eval(*e.args[i + 1]);
          if (!compare_op(e.ops[i], left, right, at)) return Value::from(false);
          left = std::move(right);
        }
        return Value::from(true);
      }
      case Expr::Kind::condition:
        if (truthy(eval(*e.args[0]))) return eval(*e.args[1]);
        return e.args[2] ? eval(*e.args[2]) : Value::undefined("the else branch of an inline if");
      case Expr::Kind::list: {
        List items;
        for (const ExprPtr& item : e.args) items.push_back(eval(*item));
        Value v = Value::from(std::move(items));
        v.is_tuple = e.name == "tuple";
        return v;
      }
      case Expr::Kind::dict: {
        Dict d;
        for (std::size_t i = 0; i + 1 < e.args.size(); i += 2) {
          Value key = eval(*e.args[i]);
          if (!key.is_string()) fail_site(at, "dict keys must be strings, got " + type_name(key));
          d.set(key.string, eval(*e.args[i + 1]));
        }
        return Value::from(std::move(d));
      }
    }
    fail_site(at, "unknown expression");
  }
};

}  // namespace

std::string render(const Body& program, const Dict& context, const SandboxLimits& limits) {
  return Evaluator(context, limits).run(program);
}

}  // namespace tempra::llm::jinja
