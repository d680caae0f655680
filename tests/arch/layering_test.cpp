// tests/arch/layering_test.cpp: no file includes a header from a layer above its own.
#include <gtest/gtest.h>

#include "arch/layering.h"

namespace tempra::arch {
namespace {

TEST(Layering, source_tree_includes_only_allowed_layers) {
  const auto violations = check_tree(TEMPRA_SOURCE_DIR);
  for (const auto& v : violations) ADD_FAILURE() << v.file << ":" << v.line << ": " << v.message;
  EXPECT_TRUE(violations.empty());
}

TEST(Layering, scanner_flags_an_upward_include) {
  const auto v = check_source("core/fake.cpp", "core", "#include <vector>\n#include \"tempra/ops/ops.h\"\n");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].line, 2);
  EXPECT_NE(v[0].message.find("layer 'core' includes a header of layer 'ops'"), std::string::npos);
}

TEST(Layering, scanner_flags_typed_reaching_into_backend) {
  EXPECT_EQ(check_source("typed/x.h", "typed", "  #  include \"tempra/backend/kernels.h\"\n").size(), 1u);
}

TEST(Layering, scanner_accepts_downward_and_same_layer_includes) {
  EXPECT_TRUE(check_source("ops/x.cpp", "ops",
                           "#include \"tempra/core/array.h\"\n#include \"tempra/backend/kernels.h\"\n"
                           "#include \"tempra/ops/ops.h\"\n#include <string>\n")
                  .empty());
}

TEST(Layering, scanner_rejects_a_layer_missing_from_the_table) {
  const auto v = check_source("newlayer/x.cpp", "newlayer", "");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0].message.find("not in the layer table"), std::string::npos);
}

TEST(Layering, a_room_of_llm_is_a_layer_of_its_own) {
  EXPECT_EQ(layer_of("llm/model"), "llm/model");
  EXPECT_EQ(layer_of("llm/runtime/"), "llm/runtime");
  EXPECT_EQ(layer_of("core"), "core");
  EXPECT_EQ(layer_of("llm"), "llm");  // no row: a file directly in llm/ is a violation
  EXPECT_TRUE(check_source("llm/runtime/x.cpp", "llm/runtime",
                           "#include \"tempra/llm/model/qwen3.h\"\n#include \"tempra/llm/decode/sampler.h\"\n")
                  .empty());
}

TEST(Layering, scanner_flags_a_lower_room_reaching_into_a_higher_one) {
  EXPECT_EQ(check_source("llm/model/x.cpp", "llm/model", "#include \"tempra/llm/runtime/generator.h\"\n").size(), 1u);
  EXPECT_EQ(check_source("llm/decode/x.cpp", "llm/decode", "#include \"tempra/llm/model/qwen3.h\"\n").size(), 1u);
  EXPECT_EQ(check_source("llm/template/x.cpp", "llm/template", "#include \"tempra/llm/tokenizer/bpe.h\"\n").size(),
            1u);
  // A header directly under llm/ belongs to no room.
  EXPECT_EQ(check_source("llm/runtime/x.cpp", "llm/runtime", "#include \"tempra/llm/flat.h\"\n").size(), 1u);
}

}  // namespace
}  // namespace tempra::arch
