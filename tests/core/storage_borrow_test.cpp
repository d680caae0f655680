// tests/core/storage_borrow_test.cpp: a borrowed Storage frees nothing and keeps its owner alive.
#include <gtest/gtest.h>

#include <memory>

#include "support/errors.h"
#include "tempra/core/array.h"

namespace tempra {
namespace {

TEST(CoreStorageBorrow, keeps_the_owner_alive_until_the_last_array_dies) {
  auto owner = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4});
  std::weak_ptr<std::vector<float>> watch = owner;
  Array view;
  {
    auto storage = Storage::borrow(owner->data(), owner->size() * sizeof(float), owner);
    view = Array(storage, DType::f32, {2, 2}, {2, 1}, 0).transpose(0, 1);
  }
  owner.reset();
  EXPECT_FALSE(watch.expired());
  EXPECT_EQ(view.at({0, 1}), 3.0);
  view = {};
  EXPECT_TRUE(watch.expired());
}

TEST(CoreStorageBorrow, needs_an_owner) {
  float x = 0;
  EXPECT_EQ(tempra::testing::error_message([&] { (void)Storage::borrow(&x, sizeof x, nullptr); }),
            "[storage] borrowed bytes need an owner to keep them alive");
}

}  // namespace
}  // namespace tempra
