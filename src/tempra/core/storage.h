// tempra/core/storage.h: the refcounted bytes behind one or more tensors.
//
// A Storage owns one 64-byte-aligned buffer. Tensors and their views hold it through
// std::shared_ptr, so the last view to die frees it; a buffer that came from a BufferPool goes
// back to that pool (which the Storage keeps alive), otherwise to the system allocator.
// A borrowed Storage (borrow()) frees nothing: its bytes belong to an owner object, such as a
// file mapping, that the Storage keeps alive instead.
#pragma once

#include <cstddef>
#include <memory>

#include "tempra/core/buffer_pool.h"

namespace tempra {

class Storage {
 public:
  // Zero-initialized only when asked: op outputs are fully written by their kernel.
  static std::shared_ptr<Storage> allocate(size_t bytes, std::shared_ptr<BufferPool> pool, bool zero = false);
  // Zero-copy bytes that `owner` keeps valid (io: a tensor inside a mapped file). The Storage
  // holds `owner` and frees nothing itself; alignment is whatever the owner gives (a GGUF
  // tensor is aligned to its file's general.alignment, 32 by default, not to 64).
  static std::shared_ptr<Storage> borrow(void* data, size_t bytes, std::shared_ptr<const void> owner);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

  // Takes ownership of `data`; only allocate() can name the key.
  class Key {
    friend class Storage;
    Key() = default;
  };
  Storage(Key, void* data, size_t bytes, std::shared_ptr<BufferPool> pool)
      : data_(data), bytes_(bytes), pool_(std::move(pool)) {}

 private:
  void* data_;
  size_t bytes_;
  std::shared_ptr<BufferPool> pool_;  // null: system allocator
  std::shared_ptr<const void> owner_;  // non-null: borrowed bytes, nothing to free
};

}  // namespace tempra
