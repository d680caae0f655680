// tests/audio/amp_alloc_test.cpp: processing allocates nothing.
//
// NAM's real-time rule: once a model is built, process() makes no heap allocation (an
// allocation can block on the allocator's lock inside an audio callback). Counted by replacing
// the global operator new in this binary only, over every profile of the zoo and block sizes
// from 1 to past kMaxBlock; a reset (prewarm) allocates nothing either. The count is shown to
// see allocations: building a model does allocate.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "audio/amp_fixtures.h"
#include "tempra/audio/amp_model.h"

namespace {
std::atomic<int64_t> g_allocations{0};

void* counted(std::size_t size, std::size_t align = alignof(std::max_align_t)) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  const std::size_t rounded = (size + align - 1) / align * align;
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, rounded ? rounded : align)
                                              : std::malloc(size ? size : 1);
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t size) {
  return counted(size);
}
void* operator new[](std::size_t size) {
  return counted(size);
}
void* operator new(std::size_t size, std::align_val_t align) {
  return counted(size, std::size_t(align));
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return counted(size, std::size_t(align));
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return counted(size);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}

namespace tempra::audio {
namespace {

TEST(AmpAlloc, process_and_reset_allocate_nothing_for_any_profile_and_block_size) {
  const std::vector<float> x = testing::test_signal(AmpModel::kMaxBlock + 500);
  std::vector<float> y(x.size());
  for (const auto& [name, file] : testing::profile_zoo()) {
    SCOPED_TRACE(name);
    const int64_t before_build = g_allocations.load();
    const auto model = make_amp_model(file);
    EXPECT_GT(g_allocations.load(), before_build);  // the counter sees allocations
    const int64_t before = g_allocations.load();
    for (const int64_t n : {int64_t(1), int64_t(7), int64_t(64), int64_t(x.size())})
      model->process(x.data(), y.data(), n);
    model->reset();
    model->process(x.data(), y.data(), 64);
    EXPECT_EQ(g_allocations.load() - before, 0) << "operator new calls while processing";
  }
}

}  // namespace
}  // namespace tempra::audio
