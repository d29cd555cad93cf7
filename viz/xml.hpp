// Text placed inside HTML or SVG: <, >, & and " written as entities, so that a title or a token
// such as "</script>" or "a & b" shows as itself.
#pragma once

#include <string>

namespace anatomy::viz {

std::string escape_xml(const std::string& text);

}  // namespace anatomy::viz
