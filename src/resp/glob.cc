// Glob matching for SCAN MATCH (src/resp/glob.h), with the semantics of
// Redis's stringmatchlen.
#include "resp/glob.h"

namespace pulse::resp {

bool GlobMatch(std::string_view text, std::string_view pattern) {
  size_t t = 0, p = 0;
  // Backtracking point of the last `*`: where it is in the pattern and the
  // text position it currently absorbs up to.
  size_t star_p = std::string_view::npos, star_t = 0;
  while (t < text.size()) {
    if (p < pattern.size()) {
      const char pc = pattern[p];
      if (pc == '*') {
        while (p < pattern.size() && pattern[p] == '*') ++p;
        if (p == pattern.size()) return true;
        star_p = p;
        star_t = t;
        continue;
      }
      bool matched = false;
      size_t next_p = p + 1;
      if (pc == '?') {
        matched = true;
      } else if (pc == '[') {
        size_t q = p + 1;
        bool negate = false;
        if (q < pattern.size() && pattern[q] == '^') {
          negate = true;
          ++q;
        }
        bool in = false;
        for (;;) {
          if (q >= pattern.size()) {  // unterminated: Redis treats the end as ']'
            --q;
            break;
          }
          if (pattern[q] == ']') break;
          if (pattern[q] == '\\' && q + 1 < pattern.size()) {
            ++q;
            if (pattern[q] == text[t]) in = true;
          } else if (q + 2 < pattern.size() && pattern[q + 1] == '-') {
            unsigned char a = pattern[q], b = pattern[q + 2], c = text[t];
            if (a > b) std::swap(a, b);
            if (c >= a && c <= b) in = true;
            q += 2;
          } else if (pattern[q] == text[t]) {
            in = true;
          }
          ++q;
        }
        next_p = q + 1;
        matched = negate ? !in : in;
      } else if (pc == '\\' && p + 1 < pattern.size()) {
        matched = pattern[p + 1] == text[t];
        next_p = p + 2;
      } else {
        matched = pc == text[t];
      }
      if (matched) {
        p = next_p;
        ++t;
        continue;
      }
    }
    if (star_p == std::string_view::npos) return false;
    p = star_p;
    t = ++star_t;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace pulse::resp
