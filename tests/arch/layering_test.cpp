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

}  // namespace
}  // namespace tempra::arch
