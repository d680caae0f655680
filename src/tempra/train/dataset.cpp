// tempra/train/dataset.cpp: see dataset.h.
#include "tempra/train/dataset.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <fstream>
#include <sstream>

#include "tempra/core/error.h"
#include "tempra/llm/runtime/chat_prompt.h"

namespace tempra::train {
namespace {

using json = nlohmann::json;

struct Source {
  std::string file;
  int line;
  template <class... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    tempra::fail("data", file, ":", line, ": ", parts...);
  }
};

std::vector<llm::ChatMessage> parse_messages(const json& list, const Source& at) {
  if (!list.is_array() || list.empty()) at.fail("\"messages\" must be a non-empty array");
  std::vector<llm::ChatMessage> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const json& m = list[i];
    if (!m.is_object()) at.fail("message ", i, " is not an object");
    const auto role = m.find("role"), content = m.find("content");
    if (role == m.end() || !role->is_string()) at.fail("message ", i, " has no string \"role\"");
    if (content == m.end() || !content->is_string()) at.fail("message ", i, " has no string \"content\"");
    const std::string r = role->get<std::string>();
    if (r != "system" && r != "user" && r != "assistant" && r != "tool")
      at.fail("message ", i, " has role '", r, "' (system, user, assistant or tool expected)");
    out.push_back(llm::ChatMessage{.role = r, .content = content->get<std::string>()});
  }
  return out;
}

// Tokens of `text` appended to `ex`, counted or not; BOS only before the very first segment.
void append(Example& ex, const llm::Tokenizer& tokenizer, std::string_view text, bool counted) {
  const std::vector<int32_t> ids =
      tokenizer.encode(text, {.parse_special = true, .add_special = ex.tokens.empty()});
  ex.tokens.insert(ex.tokens.end(), ids.begin(), ids.end());
  ex.counted.insert(ex.counted.end(), ids.size(), counted ? 1 : 0);
}

Example chat_example(const std::vector<llm::ChatMessage>& messages, const llm::Tokenizer& tokenizer,
                     const std::string& chat_template, const Source& at, std::string* warning) {
  const auto render = [&](size_t n, bool generation_prompt) {
    llm::RenderedChat r = llm::render_chat_text(chat_template, tokenizer, {messages.begin(), messages.begin() + ptrdiff_t(n)},
                                                {.add_generation_prompt = generation_prompt});
    if (warning && warning->empty()) *warning = r.warning;
    return r.prompt;
  };
  const std::string whole = render(messages.size(), false);
  const std::string eos = tokenizer.eos() >= 0 ? tokenizer.text(tokenizer.eos()) : std::string();
  Example ex{.line = at.line};
  size_t done = 0;  // characters of `whole` tokenized so far
  for (size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].role != "assistant") continue;
    // The answer starts where the prompt for it (rendered with the generation prompt) ends, and
    // runs through the end of turn the model must learn to emit: the vocab's EOS text, or else
    // the end of the conversation rendered through this message.
    const std::string before = render(i, true);
    if (!whole.starts_with(before) || before.size() < done)
      at.fail("the chat template renders the prompt before message ", i,
              " differently inside the whole conversation; its tokens cannot be marked");
    size_t end = eos.empty() ? std::string::npos : whole.find(eos, before.size());
    if (end != std::string::npos) {
      end += eos.size();
    } else {
      const std::string through = render(i + 1, false);
      if (!whole.starts_with(through) || through.size() < before.size())
        at.fail("the chat template renders message ", i, " differently inside the whole conversation; its tokens "
                "cannot be marked");
      end = through.size();
    }
    append(ex, tokenizer, std::string_view(whole).substr(done, before.size() - done), false);
    append(ex, tokenizer, std::string_view(whole).substr(before.size(), end - before.size()), true);
    done = end;
  }
  if (done == 0) at.fail("the conversation has no assistant message to learn");
  if (done < whole.size()) append(ex, tokenizer, std::string_view(whole).substr(done), false);
  return ex;
}

bool has_extension(const std::filesystem::path& path, std::string_view ext) {
  std::string e = path.extension().string();
  for (char& c : e) c = char(std::tolower(static_cast<unsigned char>(c)));
  return e == ext;
}

}  // namespace

std::vector<Example> read_examples(const std::filesystem::path& path, const llm::Tokenizer& tokenizer,
                                   const std::string& chat_template, int64_t max_tokens, std::string* warning) {
  const std::string file = path.string();
  check(!has_extension(path, ".json"), "data", file,
        ": a .json file; write one JSON object per line, as JSON Lines (.jsonl)");
  std::ifstream in(path, std::ios::binary);
  check(in.good(), "data", file, ": cannot be read");
  std::vector<Example> out;
  if (!has_extension(path, ".jsonl")) {
    std::stringstream text;
    text << in.rdbuf();
    Example all;
    append(all, tokenizer, text.str(), true);
    for (size_t first = 0; first < all.tokens.size(); first += size_t(max_tokens)) {
      const size_t n = std::min(size_t(max_tokens), all.tokens.size() - first);
      if (n < 2) break;  // nothing to predict
      out.push_back(Example{.tokens = {all.tokens.begin() + ptrdiff_t(first), all.tokens.begin() + ptrdiff_t(first + n)},
                            .counted = std::vector<uint8_t>(n, 1),
                            .line = int(out.size()) + 1});
    }
    check(!out.empty(), "data", file, ": no text to train on");
    return out;
  }
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const Source at{file, number};
    json j;
    try {
      j = json::parse(line);
    } catch (const json::parse_error& e) {
      at.fail("malformed JSON: ", e.what());
    }
    if (!j.is_object()) at.fail("not a JSON object");
    Example ex;
    if (const auto m = j.find("messages"); m != j.end()) {
      ex = chat_example(parse_messages(*m, at), tokenizer, chat_template, at, warning);
    } else if (const auto t = j.find("text"); t != j.end() && t->is_string()) {
      ex.line = number;
      append(ex, tokenizer, t->get<std::string>(), true);
    } else {
      at.fail("neither \"messages\" nor a string \"text\"");
    }
    if (int64_t(ex.tokens.size()) > max_tokens)
      at.fail("the example is ", ex.tokens.size(), " tokens, longer than the context of ", max_tokens,
              " (--ctx)");
    if (ex.tokens.size() < 2) at.fail("the example has fewer than 2 tokens");
    out.push_back(std::move(ex));
  }
  check(!out.empty(), "data", file, ": no examples");
  return out;
}

}  // namespace tempra::train
