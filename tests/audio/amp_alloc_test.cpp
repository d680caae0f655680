// tests/audio/amp_alloc_test.cpp: processing allocates nothing.
//
// NAM's real-time rule: once a model is built, process() makes no heap allocation (an
// allocation can block on the allocator's lock inside an audio callback). Counted by replacing
// the global operator new in this binary only (support/count_allocations.h), over every profile
// of the zoo and block sizes from 1 to past kMaxBlock; a reset (prewarm) allocates nothing
// either. The count is shown to see allocations: building a model does allocate.
#include <gtest/gtest.h>

#include "audio/amp_fixtures.h"
#include "support/count_allocations.h"
#include "tempra/audio/amp_model.h"

using tempra::testing::g_allocations;

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
