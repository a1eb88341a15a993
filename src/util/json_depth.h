// How deeply JSON text nests, found by a scan that never recurses: parsers and dump() recurse once
// per level, so text from outside (request bodies, checkpoint headers) is measured before parsing.
#pragma once

#include <string_view>

namespace recur {

// Deepest nesting of arrays and objects (brackets inside strings do not count). Malformed text
// gives a number too; the parser reports what is wrong with it.
int json_nesting_depth(std::string_view text);

}  // namespace recur
