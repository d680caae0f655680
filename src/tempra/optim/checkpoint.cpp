// tempra/optim/checkpoint.cpp: the layout is documented in checkpoint.h. Loading is two phases:
// `plan` reads and checks everything into a list of copies, `commit` runs them; only commit
// mutates, and it cannot fail (load_scalar_state checks all its values before assigning any).
#include "tempra/optim/checkpoint.h"

#include <charconv>
#include <cstring>
#include <set>
#include <system_error>

#include "tempra/core/error.h"
#include "tempra/io/safetensors.h"

namespace tempra::optim {

namespace {

constexpr const char* kOp = "checkpoint";
constexpr const char* kVersion = "1";
const std::string kStatePrefix = "optimizer.";
const std::string kScalarPrefix = "tempra.state.";
const std::string kUserPrefix = "user.";

std::string format_double(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest form that round-trips
  return std::string(buf, r.ptr);
}

const char* schedule_name(LrSchedule::Kind kind) {
  return kind == LrSchedule::Kind::warmup_cosine ? "warmup_cosine" : "constant";
}

// Reads metadata values strictly: the whole string must parse.
class MetadataReader {
 public:
  MetadataReader(const io::SafetensorsFile& file) : file_(file) {}

  const std::string& text(const std::string& key) const {
    auto it = file_.metadata().find(key);
    check(it != file_.metadata().end(), kOp, file_.name(), ": metadata has no '", key, "'");
    return it->second;
  }
  template <class Int>
  Int integer(const std::string& key) const {
    const std::string& s = text(key);
    Int v{};
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    check(r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty(), kOp, file_.name(), ": metadata '", key,
          "' = '", s, "' is not an integer");
    return v;
  }
  double real(const std::string& key) const {
    const std::string& s = text(key);
    double v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    check(r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty(), kOp, file_.name(), ": metadata '", key,
          "' = '", s, "' is not a number");
    return v;
  }

 private:
  const io::SafetensorsFile& file_;
};

struct Copy {
  std::span<const std::byte> from;
  void* to;
};

// Checks that the file's tensor `stored` can be copied into `live` (dtype, shape, contiguity).
Copy plan_copy(const io::SafetensorsFile& file, const std::string& stored, const Array& live, const std::string& what) {
  const io::SafetensorsTensorInfo* info = file.find(stored);
  check(info != nullptr, kOp, file.name(), ": has no tensor '", stored, "' for ", what);
  check(live.defined() && live.is_contiguous(), kOp, what, " must be a contiguous array to be restored in place");
  check(info->dtype == live.dtype(), kOp, file.name(), ": tensor '", stored, "' is ", info->dtype.name(), ", ", what,
        " is ", live.dtype().name());
  check(info->shape == live.shape(), kOp, file.name(), ": tensor '", stored, "' has shape ", info->shape, ", ", what,
        " has shape ", live.shape());
  return Copy{file.tensor_bytes(stored), live.raw_data()};
}

}  // namespace

std::vector<Param> optimizer_params(const Optimizer& optimizer) {
  std::vector<Param> out;
  out.reserve(static_cast<size_t>(optimizer.num_params()));
  for (int64_t i = 0; i < optimizer.num_params(); ++i) out.push_back(optimizer.param(i));
  return out;
}

void save_checkpoint(ExecContext& ctx, const std::filesystem::path& path, std::span<const Param> params,
                     const Optimizer* optimizer, const LrSchedule& schedule,
                     const std::map<std::string, std::string>& user) {
  std::vector<io::NamedArray> tensors;
  std::set<std::string> names;
  for (const Param& p : params) {
    check(!p.name.empty(), kOp, "a parameter has an empty name");
    check(p.name.rfind(kStatePrefix, 0) != 0, kOp, "parameter '", p.name, "' may not start with '", kStatePrefix,
          "' (the optimizer state's prefix)");
    check(names.insert(p.name).second, kOp, "parameter name '", p.name, "' appears twice");
    check(p.value.defined(), kOp, "parameter '", p.name, "' is an empty array");
    tensors.push_back({p.name, p.value.detach()});
  }
  std::map<std::string, std::string> metadata;
  metadata["tempra.checkpoint"] = kVersion;
  metadata["tempra.optimizer"] = optimizer ? optimizer->name() : "none";
  metadata["tempra.step"] = std::to_string(optimizer ? optimizer->step_count() : 0);
  metadata["tempra.rng.seed"] = std::to_string(ctx.rng().seed);
  metadata["tempra.rng.offset"] = std::to_string(ctx.rng().offset);
  metadata["tempra.schedule"] = schedule_name(schedule.kind);
  metadata["tempra.schedule.warmup_steps"] = std::to_string(schedule.warmup_steps);
  metadata["tempra.schedule.total_steps"] = std::to_string(schedule.total_steps);
  metadata["tempra.schedule.min_lr_ratio"] = format_double(schedule.min_lr_ratio);
  if (optimizer) {
    for (const StateTensor& s : optimizer->state_tensors()) tensors.push_back({kStatePrefix + s.name, s.value});
    for (const auto& [key, value] : optimizer->scalar_state()) metadata[kScalarPrefix + key] = format_double(value);
  }
  for (const auto& [key, value] : user) metadata[kUserPrefix + key] = value;
  io::write_safetensors(path, tensors, metadata);
}

CheckpointInfo load_checkpoint(ExecContext& ctx, const std::filesystem::path& path, std::span<const Param> params,
                               Optimizer* optimizer) {
  // ---- plan: read and check everything; nothing live changes here ----
  const io::SafetensorsFile file = io::SafetensorsFile::open(path);
  const MetadataReader meta(file);
  const std::string& version = meta.text("tempra.checkpoint");
  check(version == kVersion, kOp, file.name(), ": checkpoint format '", version, "' is not '", kVersion, "'");

  CheckpointInfo info;
  info.optimizer = meta.text("tempra.optimizer");
  info.step = meta.integer<int64_t>("tempra.step");
  info.rng.seed = meta.integer<uint64_t>("tempra.rng.seed");
  info.rng.offset = meta.integer<uint64_t>("tempra.rng.offset");
  const std::string& kind = meta.text("tempra.schedule");
  const int64_t warmup = meta.integer<int64_t>("tempra.schedule.warmup_steps");
  const int64_t total = meta.integer<int64_t>("tempra.schedule.total_steps");
  const double ratio = meta.real("tempra.schedule.min_lr_ratio");
  if (kind == "constant") {
    info.schedule = LrSchedule::constant();
  } else if (kind == "warmup_cosine") {
    try {
      info.schedule = LrSchedule::warmup_cosine(warmup, total, ratio);
    } catch (const Error& e) {
      fail(kOp, file.name(), ": metadata tempra.schedule.*: ", e.what());
    }
  } else {
    fail(kOp, file.name(), ": metadata 'tempra.schedule' = '", kind, "' is not constant or warmup_cosine");
  }
  for (const auto& [key, value] : file.metadata())
    if (key.rfind(kUserPrefix, 0) == 0) info.user[key.substr(kUserPrefix.size())] = value;

  std::vector<Copy> copies;
  std::set<std::string> expected;  // every tensor the file must hold, and may hold
  for (const Param& p : params) {
    check(expected.insert(p.name).second, kOp, "parameter name '", p.name, "' appears twice");
    copies.push_back(plan_copy(file, p.name, p.value, "parameter '" + p.name + "'"));
  }

  std::map<std::string, double> scalars;
  if (optimizer) {
    check(info.optimizer == optimizer->name(), kOp, file.name(), ": holds the state of optimizer '", info.optimizer,
          "', not of '", optimizer->name(), "'");
    for (const StateTensor& s : optimizer->state_tensors()) {
      const std::string stored = kStatePrefix + s.name;
      expected.insert(stored);
      copies.push_back(plan_copy(file, stored, s.value, "optimizer state '" + s.name + "'"));
    }
  }
  for (const io::SafetensorsTensorInfo& t : file.tensors()) {
    const bool is_state = t.name.rfind(kStatePrefix, 0) == 0;
    if (is_state && optimizer == nullptr) continue;  // parameters only: the state is not wanted
    check(expected.count(t.name) == 1, kOp, file.name(), ": holds tensor '", t.name, "', which is not ",
          is_state ? "state of this optimizer" : "a parameter of the model");
  }
  // Scalars last: a tensor mismatch names the tensor, which says more than a stray scalar key.
  if (optimizer) {
    for (const auto& [key, value] : optimizer->scalar_state()) {
      (void)value;
      scalars[key] = meta.real(kScalarPrefix + key);
    }
    for (const auto& [key, value] : file.metadata()) {
      (void)value;
      if (key.rfind(kScalarPrefix, 0) == 0)
        check(scalars.count(key.substr(kScalarPrefix.size())) == 1, kOp, file.name(), ": metadata '", key,
              "' is not state of this ", optimizer->name(), " optimizer");
    }
    check(static_cast<double>(info.step) == scalars.at("step"), kOp, file.name(), ": tempra.step ", info.step,
          " differs from the optimizer's step ", scalars.at("step"));
  }

  // ---- commit: load_scalar_state checks all before it assigns; the copies cannot fail ----
  if (optimizer) optimizer->load_scalar_state(scalars);
  for (const Copy& c : copies)
    if (!c.from.empty()) std::memcpy(c.to, c.from.data(), c.from.size());
  ctx.rng() = info.rng;
  return info;
}

}  // namespace tempra::optim
