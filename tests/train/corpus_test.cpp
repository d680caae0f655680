// tests/train/corpus_test.cpp: the pretraining corpus (tempra/train/corpus.h): each format's
// cleaning, deduplication, the order-free split, the shards, and the named errors.
#include "tempra/train/corpus.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "support/files.h"
#include "tempra/core/error.h"

namespace tempra::train {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir() {
  const fs::path p = fs::temp_directory_path() / ("tempra_corpus_" + std::to_string(::getpid()) + "_" +
                                                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(p);
  return p;
}

TEST(CorpusClean, plain_text_gets_unix_lines_no_trailing_space_and_single_blank_lines) {
  EXPECT_EQ(clean_text("\n\nline one  \r\nline two\t\r\n\r\n\r\n\rthird\n\n", TextFormat::plain),
            "line one\nline two\n\nthird\n");
}

TEST(CorpusClean, special_token_texts_are_removed_even_when_nested) {
  EXPECT_EQ(clean_text("a<|endoftext|>b <|im_start|>c<|<|im_end|>im_end|>", TextFormat::plain), "ab c\n");
}

TEST(CorpusClean, rest_keeps_prose_and_drops_markup) {
  const std::string rst =
      ".. _tut-informal:\n"
      "\n"
      "**********************\n"
      "An Informal Introduction\n"
      "**********************\n"
      "\n"
      ".. index:: single: # (hash); comment\n"
      "\n"
      "Call :func:`len` or see :ref:`the tutorial <tut-intro>` and :meth:`~str.join`; type ``x = 1``.\n"
      "\n"
      ".. note::\n"
      "\n"
      "   Indented prose stays.\n"
      "\n"
      ".. function:: len(s)\n"
      "..\n"
      "   a comment's body is indented text, kept\n";
  EXPECT_EQ(clean_text(rst, TextFormat::rest),
            "An Informal Introduction\n"
            "\n"
            "Call len or see the tutorial and str.join; type x = 1.\n"
            "\n"
            "   Indented prose stays.\n"
            "\n"
            "len(s)\n"
            "   a comment's body is indented text, kept\n");
}

TEST(CorpusClean, brown_tags_are_dropped_and_words_joined) {
  const std::string brown =
      "\n\n\tThe/at jury/nn said/vbd ``/`` no/at evidence/nn ''/'' was/bedz found/vbn ,/, in/in (/( part/nn )/) ./.\n"
      "\tIt/pps ended/vbd ./.\n"
      "\n\n"
      "\tNext/ap paragraph/nn ?/.\n";
  EXPECT_EQ(clean_text(brown, TextFormat::brown),
            "The jury said \"no evidence\" was found, in (part). It ended.\n\nNext paragraph?\n");
}

TEST(CorpusClean, invalid_utf8_names_the_byte) {
  try {
    clean_text("good text \xC3\x28 bad", TextFormat::plain);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not valid UTF-8 (byte 10)"), std::string::npos) << e.what();
  }
}

TEST(Corpus, duplicate_paragraphs_are_dropped_and_empty_documents_too) {
  CorpusBuilder b({.val_fraction = 0, .shard_bytes = 1 << 20});
  b.add("a", "Shared paragraph.\n\nOnly in a.\n", TextFormat::plain);
  b.add("b", "Shared   paragraph.\n\nOnly in b.\n", TextFormat::plain);  // the same after whitespace collapses
  b.add("c", "Only in a.\n\n<|endoftext|>\n", TextFormat::plain);        // nothing new: dropped
  EXPECT_EQ(b.stats().documents, 2);
  EXPECT_EQ(b.stats().dropped_documents, 1);
  EXPECT_EQ(b.stats().duplicate_paragraphs, 2);
  const fs::path dir = temp_dir();
  const CorpusStats s = b.write(dir);
  ASSERT_EQ(s.files.size(), 1u);
  EXPECT_EQ(testing::read_text(dir / "train_000.txt"), "Shared paragraph.\n\nOnly in a.\n<|endoftext|>Only in b.\n");
  fs::remove_all(dir);
}

// The split is a function of each document's text: the same documents in another order split
// alike; shards hold whole documents up to the size asked.
TEST(Corpus, the_split_ignores_order_and_shards_hold_whole_documents) {
  std::vector<std::string> docs;
  for (int i = 0; i < 200; ++i) docs.push_back("Document number " + std::to_string(i) + " has its own words.\n");
  const auto build = [&](bool reversed, const fs::path& dir) {
    CorpusBuilder b({.val_fraction = 0.1, .shard_bytes = 1000});
    for (int i = 0; i < 200; ++i) {
      const int k = reversed ? 199 - i : i;
      b.add(std::to_string(k), docs[size_t(k)], TextFormat::plain);
    }
    return b.write(dir);
  };
  const fs::path one = temp_dir() / "one", two = temp_dir() / "two";
  const CorpusStats a = build(false, one), b = build(true, two);
  EXPECT_EQ(a.val_documents, b.val_documents);
  EXPECT_GT(a.val_documents, 5);
  EXPECT_LT(a.val_documents, 40);
  EXPECT_GT(a.files.size(), 4u);
  std::string all;
  for (const fs::path& f : a.files) {
    const std::string text = testing::read_text(f);
    if (f.filename().string().starts_with("train")) {
      EXPECT_LE(text.size(), 1000u);
    }
    EXPECT_TRUE(text.starts_with("Document number ")) << f;
    EXPECT_TRUE(text.ends_with(" has its own words.\n")) << f;
  }
  fs::remove_all(one.parent_path());
}

// Deduplication depends on what came before; the split must not: a document shares a paragraph
// with an earlier one in one order and not in the other, and goes to the same side both times.
TEST(Corpus, the_split_does_not_depend_on_deduplication) {
  std::vector<std::string> docs;
  for (int i = 0; i < 60; ++i)
    docs.push_back("A common paragraph.\n\nDocument " + std::to_string(i) + "'s own text.\n");
  const auto val_docs = [&](bool reversed) {
    CorpusBuilder b({.val_fraction = 0.3, .shard_bytes = 1 << 20});
    for (int i = 0; i < 60; ++i) b.add("d", docs[size_t(reversed ? 59 - i : i)], TextFormat::plain);
    const fs::path dir = temp_dir() / (reversed ? "r" : "f");
    b.write(dir);
    std::set<std::string> out;
    const std::string text = testing::read_text(dir / "val_000.txt");
    for (int i = 0; i < 60; ++i)
      if (text.find("Document " + std::to_string(i) + "'s") != std::string::npos) out.insert(std::to_string(i));
    return out;
  };
  const std::set<std::string> forward = val_docs(false), backward = val_docs(true);
  EXPECT_EQ(forward, backward);
  EXPECT_GT(forward.size(), 5u);
  fs::remove_all(temp_dir());
}

TEST(Corpus, a_new_corpus_replaces_the_shards_of_an_old_one) {
  const fs::path dir = temp_dir();
  CorpusBuilder many({.val_fraction = 0, .shard_bytes = 40});
  for (int i = 0; i < 10; ++i) many.add("d", "Document number " + std::to_string(i) + " here.\n", TextFormat::plain);
  EXPECT_EQ(many.write(dir).files.size(), 10u);
  CorpusBuilder one({.val_fraction = 0, .shard_bytes = 1 << 20});
  one.add("d", "Just one document.\n", TextFormat::plain);
  EXPECT_EQ(one.write(dir).files.size(), 1u);
  size_t shards = 0;
  for (const auto& entry : fs::directory_iterator(dir)) shards += entry.path().extension() == ".txt";
  EXPECT_EQ(shards, 1u);
  fs::remove_all(dir);
}

TEST(Corpus, errors_name_what_is_wrong) {
  CorpusBuilder empty({});
  EXPECT_THROW(empty.write(temp_dir()), Error);
  CorpusBuilder b({});
  try {
    b.add("/data/bad.txt", "\xFF", TextFormat::plain);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/data/bad.txt: "), std::string::npos) << e.what();
  }
  EXPECT_THROW(CorpusBuilder({.val_fraction = 1.0}), Error);
}

}  // namespace
}  // namespace tempra::train
