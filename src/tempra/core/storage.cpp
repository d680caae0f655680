// tempra/core/storage.cpp
#include "tempra/core/storage.h"

#include <cstring>
#include <new>

#include "tempra/core/error.h"

namespace tempra {

std::shared_ptr<Storage> Storage::allocate(size_t bytes, std::shared_ptr<BufferPool> pool, bool zero) {
  void* p = pool ? pool->acquire(bytes)
                 : ::operator new(bytes ? bytes : 1, std::align_val_t{kBufferAlignment});
  if (zero && bytes) std::memset(p, 0, bytes);
  try {
    return std::make_shared<Storage>(Key{}, p, bytes, pool);
  } catch (...) {  // make_shared failed before the Storage existed: the buffer is still ours
    if (pool) pool->release(p, bytes);
    else ::operator delete(p, std::align_val_t{kBufferAlignment});
    throw;
  }
}

std::shared_ptr<Storage> Storage::borrow(void* data, size_t bytes, std::shared_ptr<const void> owner) {
  check(owner != nullptr, "storage", "borrowed bytes need an owner to keep them alive");
  auto storage = std::make_shared<Storage>(Key{}, data, bytes, nullptr);
  storage->owner_ = std::move(owner);
  return storage;
}

Storage::~Storage() {
  if (owner_) return;  // borrowed: owner_'s own destructor releases the bytes
  if (pool_) pool_->release(data_, bytes_);
  else ::operator delete(data_, std::align_val_t{kBufferAlignment});
}

}  // namespace tempra
