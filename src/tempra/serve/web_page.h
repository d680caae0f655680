// tempra/serve/web_page.h: the web chat page served at /, one self-contained HTML file
// (src/tempra/serve/web/index.html: markup, style and script, no external resources) compiled
// into the binary at build time (CMake reads the file into web_page_data.cpp).
#pragma once

#include <string_view>

namespace tempra::serve {

std::string_view web_page();

}  // namespace tempra::serve
