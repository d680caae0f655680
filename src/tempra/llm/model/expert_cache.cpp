// tempra/llm/model/expert_cache.cpp: see expert_cache.h.
#include "tempra/llm/model/expert_cache.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <numeric>

#include <nlohmann/json.hpp>

#include "tempra/core/error.h"
#include "tempra/io/atomic_write.h"
#include "tempra/io/mapped_file.h"

namespace tempra::llm {
namespace {

constexpr const char* kUsageFormat = "tempra-expert-usage";

uint64_t round_up(uint64_t bytes) { return (bytes + 63) / 64 * 64; }

// One of an expert's matrices as an Array over `bytes` (a slot's buffer for that matrix).
Array matrix_over(const std::shared_ptr<Storage>& bytes, const StackedExperts& t) {
  const Dims shape{t.rows, t.cols};
  return Array(bytes, t.dtype, shape, contiguous_strides(shape), 0);
}

}  // namespace

uint64_t expert_slot_bytes(uint64_t gate, uint64_t up, uint64_t down) {
  return round_up(gate) + round_up(up) + round_up(down);
}

ExpertCache::ExpertCache(std::vector<Layer> layers, ExpertStreaming options)
    : layers_(std::move(layers)), options_(std::move(options)) {
  check(!layers_.empty(), "moe-stream", "the model has no expert layers to stream");
  n_expert_ = layers_.front().gate.n_expert;
  uint64_t gate = 0, up = 0, down = 0;
  for (const Layer& l : layers_) {
    check(l.gate.n_expert == n_expert_ && l.up.n_expert == n_expert_ && l.down.n_expert == n_expert_, "moe-stream",
          "every layer must have ", n_expert_, " experts");
    gate = std::max<uint64_t>(gate, l.gate.expert_bytes);
    up = std::max<uint64_t>(up, l.up.expert_bytes);
    down = std::max<uint64_t>(down, l.down.expert_bytes);
    total_bytes_ += uint64_t(n_expert_) * (l.gate.expert_bytes + l.up.expert_bytes + l.down.expert_bytes);
  }
  // A slot holds the three matrices at fixed offsets, each at a 64-byte boundary: room for the
  // widest layer's gate, up and down (types may differ by layer: Q4_K_M's Q4_K and Q6_K).
  layout_ = {0, round_up(gate), round_up(gate) + round_up(up)};
  slot_bytes_ = expert_slot_bytes(gate, up, down);
  const uint64_t n_slots = std::min<uint64_t>(options_.cache_bytes / slot_bytes_, layers_.size() * uint64_t(n_expert_));
  check(n_slots >= 1, "moe-stream", "a cache of ", options_.cache_bytes, " bytes holds no expert: one expert takes ",
        slot_bytes_, " bytes (", (slot_bytes_ + (1 << 20) - 1) >> 20, " MiB)");
  slots_.resize(size_t(n_slots));
  free_.resize(size_t(n_slots));
  std::iota(free_.rbegin(), free_.rend(), 0);  // slot 0 is taken first
  slot_of_.assign(layers_.size() * size_t(n_expert_), -1);
  usage_.assign(slot_of_.size(), 0);
  ranked_.resize(size_t(n_expert_));
  stats_.slots = int64_t(n_slots);
  load_usage();
  pin_most_used();
}

ExpertCache::~ExpertCache() {
  try {
    save_usage();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "warning: the expert usage was not saved: %s\n", e.what());
  }
}

void ExpertCache::load_usage() {
  std::error_code ec;
  if (options_.usage_file.empty() || !std::filesystem::exists(options_.usage_file, ec)) return;
  const std::string file = options_.usage_file.string();
  try {
    std::ifstream in(options_.usage_file);
    const nlohmann::json j = nlohmann::json::parse(in);
    if (j.value("format", "") != kUsageFormat || j.value("version", 0) != 1) {
      usage_note_ = file + " is not a tempra expert usage file (version 1); ignored";
      return;
    }
    const auto& rows = j.at("usage");
    if (j.value("layers", int64_t{-1}) != int64_t(layers_.size()) || j.value("experts", int64_t{-1}) != n_expert_ ||
        !rows.is_array() || rows.size() != layers_.size()) {
      usage_note_ = file + " was kept for a model of another shape (layers and experts differ); ignored";
      return;
    }
    std::vector<uint64_t> loaded(usage_.size(), 0);
    for (size_t l = 0; l < rows.size(); ++l) {
      if (!rows[l].is_array() || int64_t(rows[l].size()) != n_expert_) {
        usage_note_ = file + ": layer " + std::to_string(l) + " does not list " + std::to_string(n_expert_) +
                      " experts; ignored";
        return;
      }
      for (size_t e = 0; e < rows[l].size(); ++e) {
        if (!rows[l][e].is_number_unsigned()) {
          usage_note_ = file + ": layer " + std::to_string(l) + " expert " + std::to_string(e) +
                        " is not a count; ignored";
          return;
        }
        loaded[l * size_t(n_expert_) + e] = rows[l][e].get<uint64_t>();
      }
    }
    usage_ = std::move(loaded);
  } catch (const nlohmann::json::exception& e) {
    usage_note_ = file + " cannot be read as JSON (" + e.what() + "); ignored";
  }
}

void ExpertCache::pin_most_used() {
  std::vector<int32_t> keys;
  for (size_t k = 0; k < usage_.size(); ++k)
    if (usage_[k] > 0) keys.push_back(int32_t(k));
  // Most used first; among equals the lower key (earlier layer, lower expert) first.
  std::stable_sort(keys.begin(), keys.end(), [&](int32_t a, int32_t b) { return usage_[size_t(a)] > usage_[size_t(b)]; });
  keys.resize(std::min(keys.size(), slots_.size() / 2));
  for (int32_t key : keys) {
    const int32_t s = free_.back();
    free_.pop_back();
    fill(s, key);
    slots_[size_t(s)].pinned = true;
    ++stats_.pinned;
  }
}

void ExpertCache::fill(int32_t s, int32_t key) const {
  Slot& slot = slots_[size_t(s)];
  const Layer& l = layers_[size_t(key / n_expert_)];
  const int64_t e = key % n_expert_;
  if (slot.bytes == nullptr) {
    // The buffer and its three views are made once, at the slot's first fill: a later miss
    // only reads into them.
    slot.bytes = Storage::allocate(size_t(slot_bytes_), nullptr);
    auto* base = static_cast<std::byte*>(slot.bytes->data());
    for (int m = 0; m < 3; ++m)
      slot.views[m] = Storage::borrow(base + layout_[size_t(m)], size_t(slot_bytes_ - layout_[size_t(m)]), slot.bytes);
  }
  Array* arrays[3] = {&slot.gate, &slot.up, &slot.down};
  const StackedExperts* tensors[3] = {&l.gate, &l.up, &l.down};
  for (int m = 0; m < 3; ++m) {
    const StackedExperts& t = *tensors[m];
    t.source.file->read(t.offset(e), {static_cast<std::byte*>(slot.views[m]->data()), t.expert_bytes});
    *arrays[m] = matrix_over(slot.views[m], t);
    stats_.bytes_read += t.expert_bytes;
  }
  slot.key = key;
  slot_of_[size_t(key)] = s;
}

void ExpertCache::will_use(int layer, std::span<const int32_t> experts) const {
  const std::lock_guard lock(mutex_);
  for (int32_t e : experts) ++usage_[size_t(layer * n_expert_ + e)];
  if (!options_.prefetch) return;
  const auto prefetch = [&](int l, int64_t e) {
    const Layer& t = layers_[size_t(l)];
    for (const StackedExperts* m : {&t.gate, &t.up, &t.down}) m->source.file->will_need(m->offset(e), m->expert_bytes);
  };
  for (int32_t e : experts)
    if (slot_of_[size_t(layer * n_expert_ + e)] < 0) prefetch(layer, e);
  // The next layer's likely experts: as many as this layer uses, the most used first.
  const int next = layer + 1;
  if (next >= int(layers_.size())) return;
  std::vector<int32_t>& likely = ranked_;
  std::iota(likely.begin(), likely.end(), 0);
  const uint64_t* counts = usage_.data() + size_t(next) * size_t(n_expert_);
  const size_t n = std::min(likely.size(), experts.size());
  std::partial_sort(likely.begin(), likely.begin() + ptrdiff_t(n), likely.end(),
                    [&](int32_t a, int32_t b) { return counts[a] > counts[b] || (counts[a] == counts[b] && a < b); });
  for (size_t i = 0; i < n; ++i)
    if (counts[likely[i]] > 0 && slot_of_[size_t(next * n_expert_ + likely[i])] < 0) prefetch(next, likely[i]);
}

ExpertMatrices ExpertCache::get(int layer, int32_t expert) const {
  const std::lock_guard lock(mutex_);
  const auto key = int32_t(layer * n_expert_ + expert);
  int32_t s = slot_of_[size_t(key)];
  if (s >= 0) {
    ++stats_.hits;
    Slot& slot = slots_[size_t(s)];
    if (!slot.pinned) lru_.splice(lru_.begin(), lru_, slot.lru);
  } else {
    ++stats_.misses;
    // A slot whose read fails goes back to free_, so a failed miss loses no slot.
    if (!free_.empty()) {
      s = free_.back();
      free_.pop_back();
      try {
        fill(s, key);
      } catch (...) {
        free_.push_back(s);
        throw;
      }
      lru_.push_front(s);  // a node made once per slot, at its first fill
    } else {
      // The least recently used, its node moved to the front (no allocation).
      s = lru_.back();
      lru_.splice(lru_.begin(), lru_, std::prev(lru_.end()));
      Slot& evicted = slots_[size_t(s)];
      slot_of_[size_t(evicted.key)] = -1;
      evicted.key = -1;
      try {
        fill(s, key);
      } catch (...) {
        lru_.erase(lru_.begin());
        free_.push_back(s);
        throw;
      }
    }
    slots_[size_t(s)].lru = lru_.begin();
  }
  const Slot& slot = slots_[size_t(s)];
  return {&slot.gate, &slot.up, &slot.down};
}

ExpertCache::Stats ExpertCache::stats() const {
  const std::lock_guard lock(mutex_);
  return stats_;
}

std::vector<std::vector<uint64_t>> ExpertCache::usage() const {
  const std::lock_guard lock(mutex_);
  std::vector<std::vector<uint64_t>> out(layers_.size());
  for (size_t l = 0; l < layers_.size(); ++l)
    out[l].assign(usage_.begin() + ptrdiff_t(l * size_t(n_expert_)), usage_.begin() + ptrdiff_t((l + 1) * size_t(n_expert_)));
  return out;
}

void ExpertCache::save_usage() const {
  if (options_.usage_file.empty()) return;
  const nlohmann::json j = {{"format", kUsageFormat},
                            {"version", 1},
                            {"layers", layers_.size()},
                            {"experts", n_expert_},
                            {"usage", usage()}};
  const std::string text = j.dump() + "\n";
  const std::filesystem::path dir = options_.usage_file.parent_path();
  std::error_code ec;
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  check(!ec, "moe-stream", dir.string(), ": cannot create the directory: ", ec.message());
  io::write_atomically(options_.usage_file, "moe-stream", [&](std::FILE* f, const std::string& temp) {
    check(std::fwrite(text.data(), 1, text.size(), f) == text.size(), "moe-stream", temp, ": write failed");
  });
}

}  // namespace tempra::llm
