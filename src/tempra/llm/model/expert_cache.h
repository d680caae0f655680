// tempra/llm/model/expert_cache.h: routed experts streamed from the model file into a bounded
// cache (--moe-stream), so a mixture-of-experts model larger than memory decodes.
//
// Contract: an ExpertCache is an ExpertSource (experts.h) over the stacked expert tensors of
// every MoE layer, read by offset from the GGUF (io::ReadableFile; the model is opened with
// TensorMapping::per_tensor, so the experts are never mapped). It holds at most
// cache_bytes / expert_bytes() experts (one expert: its gate, up and down matrices; at least one
// must fit, or construction throws naming the sizes). The bytes it hands out are the file's, so
// logits and tokens are bit-identical to the resident path (tests/llm/expert_stream_test.cpp).
//
// Policy:
// - usage: a histogram [layer][expert] of the batches that used each expert, loaded from
//   `usage_file` when it exists and matches the model (else a note says why it was ignored) and
//   written back by save_usage() (atomically; the destructor calls it), so it accumulates
//   across runs (a file that was ignored is replaced);
// - pinned: at construction the most used experts of the loaded histogram (those used at least
//   once), up to half the slots, are read in and never evicted;
// - LRU: the other slots hold the most recently used experts; a miss evicts the least recently
//   used one;
// - prefetch (when `prefetch`): will_use() asks the kernel to start reading (posix_fadvise
//   WILLNEED) every expert of the layer that is not in the cache and the most used experts of
//   the next layer that are not, so the reads overlap the computation of the experts before
//   them. A prefetch fills the page cache only; it never changes what a slot holds.
// Methods take an internal lock, but get()'s matrices stay valid only until the next get()
// (experts.h), so a streamed model runs one forward pass at a time (Model's contract: batches
// from one thread), unlike a resident one, whose weights several threads may read at once. A
// miss reads into a slot's existing buffer: once every slot has been filled, get() allocates
// nothing. A read that fails (the file shrank, an I/O error) throws and loses no slot.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tempra/llm/model/experts.h"

namespace tempra::llm {

// One expert's slot for matrices of these sizes in bytes: each at a 64-byte boundary.
uint64_t expert_slot_bytes(uint64_t gate, uint64_t up, uint64_t down);

class ExpertCache final : public ExpertSource {
 public:
  struct Layer {
    StackedExperts gate, up, down;
  };
  struct Stats {
    uint64_t hits = 0, misses = 0, bytes_read = 0;
    int64_t slots = 0, pinned = 0;
  };

  ExpertCache(std::vector<Layer> layers, ExpertStreaming options);
  // Saves the usage (save_usage); a failure is one warning line on stderr, never an exception.
  ~ExpertCache() override;
  ExpertCache(const ExpertCache&) = delete;
  ExpertCache& operator=(const ExpertCache&) = delete;

  void will_use(int layer, std::span<const int32_t> experts) const override;
  ExpertMatrices get(int layer, int32_t expert) const override;

  // One expert's bytes (its three matrices, the widest layer's), the size of one slot.
  uint64_t expert_bytes() const { return slot_bytes_; }
  // Every routed expert of every layer.
  uint64_t total_bytes() const { return total_bytes_; }
  Stats stats() const;
  // Why a usage file was not loaded ("" when it was, or when none was given or it did not exist).
  const std::string& usage_note() const { return usage_note_; }
  // Per layer, per expert: batches that used it (the loaded histogram's counts included).
  std::vector<std::vector<uint64_t>> usage() const;
  // Writes usage() to the usage file through a temporary file renamed into place (no-op
  // without one); throws tempra::Error naming the file if it cannot be written.
  void save_usage() const;

 private:
  struct Slot {
    std::shared_ptr<Storage> bytes;     // allocated on first use
    std::shared_ptr<Storage> views[3];  // bytes at layout_'s gate, up and down offsets
    Array gate, up, down;
    int32_t key = -1;  // layer * n_expert + expert, -1 when empty
    bool pinned = false;
    std::list<int32_t>::iterator lru;  // in lru_ when occupied and not pinned
  };
  // Reads expert `key` into slot `s` (the caller holds the lock).
  void fill(int32_t s, int32_t key) const;
  void load_usage();
  void pin_most_used();

  std::vector<Layer> layers_;
  ExpertStreaming options_;
  int64_t n_expert_ = 0;
  uint64_t slot_bytes_ = 0, total_bytes_ = 0;
  std::array<uint64_t, 3> layout_{};  // where a slot's gate, up and down start
  std::string usage_note_;

  mutable std::mutex mutex_;
  mutable std::vector<Slot> slots_;
  mutable std::vector<int32_t> slot_of_;  // per key: its slot, or -1
  mutable std::list<int32_t> lru_;        // occupied unpinned slots, most recent first
  mutable std::vector<int32_t> free_;     // empty slots
  mutable std::vector<uint64_t> usage_;   // per key
  mutable std::vector<int32_t> ranked_;   // will_use's scratch: one layer's experts by usage
  mutable Stats stats_;
};

}  // namespace tempra::llm
