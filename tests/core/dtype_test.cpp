// Tests for tempra/core/dtype.h: the built-in dtypes and the registry block formats join.
//
// The registry is process-wide. Every test that needs a registered type registers it itself
// (registration is idempotent), so the tests pass in any order and in isolation.
#include <gtest/gtest.h>

#include "support/errors.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tempra/core/dtype.h"
#include "tempra/core/error.h"

namespace {

using tempra::DType;
using tempra::DTypeInfo;
using tempra::DTypeKind;

// A made-up block format shaped like GGML's Q8_0: 32 int8 values plus an f16 scale.
const DTypeInfo kTestQ8{"test_q8", DTypeKind::block_quantized, 32, 34};

using tempra::testing::error_message;

TEST(CoreDType, BuiltinNamesSizesAndKinds) {
  struct Row {
    DType t;
    const char* name;
    size_t size;
    bool floating, integer;
  };
  const Row rows[] = {
      {DType::f32, "f32", 4, true, false},  {DType::f64, "f64", 8, true, false},
      {DType::f16, "f16", 2, true, false},  {DType::bf16, "bf16", 2, true, false},
      {DType::i8, "i8", 1, false, true},    {DType::u8, "u8", 1, false, true},
      {DType::i16, "i16", 2, false, true},  {DType::i32, "i32", 4, false, true},
      {DType::i64, "i64", 8, false, true},  {DType::boolean, "bool", 1, false, false},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(r.t.name(), r.name);
    EXPECT_EQ(r.t.element_size(), r.size);
    EXPECT_EQ(r.t.bytes_for(0), 0u);
    EXPECT_EQ(r.t.bytes_for(7), 7 * r.size);
    EXPECT_EQ(r.t.is_floating(), r.floating);
    EXPECT_EQ(r.t.is_integer(), r.integer);
    EXPECT_FALSE(r.t.is_block_quantized());
    EXPECT_EQ(r.t.info().block_elems, 1u);
    ASSERT_TRUE(tempra::dtype_from_name(r.name).has_value());
    EXPECT_EQ(*tempra::dtype_from_name(r.name), r.t);
  }
  EXPECT_EQ(DType::i8.info().kind, DTypeKind::signed_integer);
  EXPECT_EQ(DType::u8.info().kind, DTypeKind::unsigned_integer);
  EXPECT_EQ(DType::boolean.info().kind, DTypeKind::boolean);
  EXPECT_FALSE(DType::f32 == DType::f64);
  EXPECT_EQ(DType{}, DType::f32);  // a default DType is f32
}

TEST(CoreDType, DtypeOfMapsCppTypesToDtypes) {
  EXPECT_EQ(tempra::dtype_of<float>::value, DType::f32);
  EXPECT_EQ(tempra::dtype_of<double>::value, DType::f64);
  EXPECT_EQ(tempra::dtype_of<tempra::f16_t>::value, DType::f16);
  EXPECT_EQ(tempra::dtype_of<tempra::bf16_t>::value, DType::bf16);
  EXPECT_EQ(tempra::dtype_of<int64_t>::value, DType::i64);
  EXPECT_EQ(tempra::dtype_of<bool>::value, DType::boolean);
}

TEST(CoreDType, RegisterBlockTypeReturnsNewIdAndIsIdempotent) {
  const DType q = tempra::register_dtype(kTestQ8);
  EXPECT_GE(q.id, 10) << "a registered type must not reuse a built-in id";
  EXPECT_EQ(q.name(), "test_q8");
  EXPECT_TRUE(q.is_block_quantized());
  EXPECT_FALSE(q.is_floating());
  EXPECT_FALSE(q.is_integer());
  EXPECT_EQ(q.info().block_elems, 32u);
  EXPECT_EQ(q.info().block_bytes, 34u);
  // Same layout again: the same id, no new entry.
  EXPECT_EQ(tempra::register_dtype(kTestQ8), q);
  EXPECT_EQ(tempra::register_dtype(DTypeInfo{"test_q8", DTypeKind::block_quantized, 32, 34}).id, q.id);
  ASSERT_TRUE(tempra::dtype_from_name("test_q8").has_value());
  EXPECT_EQ(*tempra::dtype_from_name("test_q8"), q);
  // A different name gets a different id.
  const DType other = tempra::register_dtype({"test_q4", DTypeKind::block_quantized, 32, 18});
  EXPECT_NE(other.id, q.id);
  EXPECT_EQ(other.name(), "test_q4");
}

TEST(CoreDType, ReRegisteringWithConflictingLayoutThrows) {
  const DType q = tempra::register_dtype(kTestQ8);
  for (const DTypeInfo& bad : {DTypeInfo{"test_q8", DTypeKind::block_quantized, 32, 36},
                               DTypeInfo{"test_q8", DTypeKind::block_quantized, 64, 34},
                               DTypeInfo{"test_q8", DTypeKind::floating, 32, 34}}) {
    const std::string msg = error_message([&] { tempra::register_dtype(bad); });
    EXPECT_NE(msg.find("[register_dtype]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("test_q8"), std::string::npos) << msg;
  }
  // The failed attempts changed nothing.
  EXPECT_EQ(q.info().block_bytes, 34u);
  EXPECT_EQ(*tempra::dtype_from_name("test_q8"), q);
  // A built-in name cannot be redefined either.
  EXPECT_THROW(tempra::register_dtype({"f32", DTypeKind::floating, 1, 8}), tempra::Error);
  EXPECT_EQ(tempra::register_dtype({"f32", DTypeKind::floating, 1, 4}), DType::f32);
}

TEST(CoreDType, RegisterRejectsEmptyNameOrEmptyBlock) {
  EXPECT_THROW(tempra::register_dtype({"", DTypeKind::block_quantized, 32, 34}), tempra::Error);
  EXPECT_THROW(tempra::register_dtype({"test_zero_elems", DTypeKind::block_quantized, 0, 34}), tempra::Error);
  EXPECT_THROW(tempra::register_dtype({"test_zero_bytes", DTypeKind::block_quantized, 32, 0}), tempra::Error);
  EXPECT_FALSE(tempra::dtype_from_name("test_zero_elems").has_value());
}

TEST(CoreDType, BytesForCountsWholeBlocksAndRejectsNonMultiples) {
  const DType q = tempra::register_dtype(kTestQ8);
  EXPECT_EQ(q.bytes_for(0), 0u);
  EXPECT_EQ(q.bytes_for(32), 34u);
  EXPECT_EQ(q.bytes_for(32 * 100), 3400u);
  for (int64_t n : {1, 31, 33, 100}) {
    const std::string msg = error_message([&] { (void)q.bytes_for(n); });
    EXPECT_NE(msg.find("[dtype]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("test_q8"), std::string::npos) << msg;
  }
  EXPECT_THROW((void)q.bytes_for(-32), tempra::Error);
  EXPECT_THROW((void)DType::f32.bytes_for(-1), tempra::Error);
}

TEST(CoreDType, ElementSizeThrowsForBlockTypes) {
  const DType q = tempra::register_dtype(kTestQ8);
  const std::string msg = error_message([&] { (void)q.element_size(); });
  EXPECT_NE(msg.find("[dtype]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("block-quantized"), std::string::npos) << msg;
}

TEST(CoreDType, DtypeFromNameFindsBuiltinsAndRegisteredOnly) {
  EXPECT_EQ(tempra::dtype_from_name("bf16"), DType::bf16);
  EXPECT_EQ(tempra::dtype_from_name("bool"), DType::boolean);
  EXPECT_FALSE(tempra::dtype_from_name("F32").has_value());  // names are exact
  EXPECT_FALSE(tempra::dtype_from_name("float32").has_value());
  EXPECT_FALSE(tempra::dtype_from_name("").has_value());
  EXPECT_FALSE(tempra::dtype_from_name("test_never_registered").has_value());
  const DType q = tempra::register_dtype(kTestQ8);
  EXPECT_EQ(tempra::dtype_from_name("test_q8"), q);
}

TEST(CoreDType, UnknownIdThrowsInsteadOfReadingPastTheRegistry) {
  const DType bogus{60000};
  EXPECT_THROW((void)bogus.info(), tempra::Error);
  EXPECT_THROW((void)bogus.name(), tempra::Error);
}

TEST(CoreDType, VisitDtypeDispatchesPlainTypesAndRejectsBlockTypes) {
  EXPECT_EQ(tempra::visit_dtype(DType::i16, "probe", [](auto tag) { return sizeof(tag); }), 2u);
  EXPECT_EQ(tempra::visit_dtype(DType::f64, "probe", [](auto tag) { return sizeof(tag); }), 8u);
  const DType q = tempra::register_dtype(kTestQ8);
  const std::string msg = error_message([&] { tempra::visit_dtype(q, "probe", [](auto tag) { return sizeof(tag); }); });
  EXPECT_NE(msg.find("[probe]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("test_q8"), std::string::npos) << msg;
}

// Readers of built-in dtypes (every op asks, on every call, without a lock) run while other
// threads register many new types, growing the registry. A reader must always see the right
// info, and every concurrent registration must get its own id. Under ASan/TSan this is where a
// lock-free reader racing the registry's growth would be caught.
TEST(CoreDType, BuiltinLookupsStayValidWhileOtherThreadsRegister) {
  constexpr int kWriters = 2, kPerWriter = 300;
  std::atomic<int> writers_left{kWriters};
  std::atomic<int64_t> bad_reads{0}, reads{0};
  std::vector<std::vector<DType>> ids(kWriters);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&] {
      do {
        const DTypeInfo& f = DType::f32.info();
        const DTypeInfo& b = DType::bf16.info();
        if (f.name != "f32" || f.block_bytes != 4 || b.name != "bf16" || DType::i64.element_size() != 8) ++bad_reads;
        ++reads;
      } while (writers_left.load() > 0);
    });
  }
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < kPerWriter; ++i)
        ids[w].push_back(tempra::register_dtype(
            {"test_concurrent_" + std::to_string(w) + "_" + std::to_string(i), DTypeKind::block_quantized, 32, 34}));
      --writers_left;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad_reads.load(), 0);
  EXPECT_GT(reads.load(), 0);
  std::vector<uint16_t> all;
  for (int w = 0; w < kWriters; ++w) {
    for (int i = 0; i < kPerWriter; ++i) {
      const std::string name = "test_concurrent_" + std::to_string(w) + "_" + std::to_string(i);
      ASSERT_EQ(ids[w][static_cast<size_t>(i)].name(), name);
      ASSERT_EQ(tempra::dtype_from_name(name), ids[w][static_cast<size_t>(i)]);
      all.push_back(ids[w][static_cast<size_t>(i)].id);
    }
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "two registrations got the same id";
}

}  // namespace
