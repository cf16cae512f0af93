// Redis's glob-style patterns (KEYS, SCAN MATCH, CONFIG GET): `*` any
// run, `?` one byte, `[abc]`, `[^a]`, `[a-z]`, and `\x` for x itself.
// Case-sensitive, over bytes.  Internal to src/resp.
#pragma once

#include <string_view>

namespace pulse::resp {

bool GlobMatch(std::string_view text, std::string_view pattern);

}  // namespace pulse::resp
