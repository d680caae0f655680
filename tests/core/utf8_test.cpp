// tests/core/utf8_test.cpp: invalid_utf8_at names the first byte of the first ill-formed sequence.
#include "tempra/core/utf8.h"

#include <gtest/gtest.h>

namespace tempra {
namespace {

TEST(Utf8, WellFormedTextHasNoInvalidByte) {
  EXPECT_EQ(invalid_utf8_at(""), std::nullopt);
  EXPECT_EQ(invalid_utf8_at("plain ascii"), std::nullopt);
  EXPECT_EQ(invalid_utf8_at("\xC3\xA9t\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF"), std::nullopt);
}

TEST(Utf8, EachIllFormedKindIsFoundAtItsFirstByte) {
  EXPECT_EQ(invalid_utf8_at("ab\x80"), 2u);                // a lone continuation byte
  EXPECT_EQ(invalid_utf8_at("a\xC0\xAF"), 1u);             // overlong '/'
  EXPECT_EQ(invalid_utf8_at("a\xE0\x80\xAF"), 1u);         // overlong, three bytes
  EXPECT_EQ(invalid_utf8_at("x\xED\xA0\x80"), 1u);         // a surrogate, U+D800
  EXPECT_EQ(invalid_utf8_at("\xF4\x90\x80\x80"), 0u);      // U+110000
  EXPECT_EQ(invalid_utf8_at("ok \xE4\xB8"), 3u);           // truncated at the end
  EXPECT_EQ(invalid_utf8_at("\xC3" "a"), 0u);              // a lead byte without continuation
  EXPECT_EQ(invalid_utf8_at("\xF8\x88\x80\x80\x80"), 0u);  // five-byte forms are gone
}

}  // namespace
}  // namespace tempra
