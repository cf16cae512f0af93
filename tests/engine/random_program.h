// Test helper: random programs that always pass the verifier, over a graph
// of 64-byte nodes whose data[0] is the next node.  Every register is
// defined first; the body mixes ALU at every width, compares and forward
// jumps, STOREs to the traversal's private area (its address in sp[8]),
// indexed data[] and sp[] operands, and ends in a bounded walk (sp[0] counts
// the iterations left).
#pragma once

#include <random>
#include <string>
#include <vector>

namespace pulse::testing {

class RandomProgram {
 public:
  explicit RandomProgram(std::mt19937_64* rng) : rng_(*rng) {}

  std::string Generate() {
    lines_.clear();
    Emit("LOAD data, 64");
    for (int r = 0; r < 13; ++r) {  // define every register before the body reads it
      std::string src = Source();
      if (src[0] == 'r') src = Imm();
      Emit("MOVE r" + std::to_string(r) + ", " + src);
    }
    Emit("MOVE r13, sp[8]");  // this traversal's private store area
    const int body = 5 + Pick(25);
    int label = 0;
    std::vector<int> open;  // labels to place later
    for (int i = 0; i < body; ++i) {
      if (!open.empty() && Pick(4) == 0) {
        Emit("L" + std::to_string(open.back()) + ":");
        open.pop_back();
      }
      switch (Pick(8)) {
        case 0: case 1: case 2:
          Emit(Alu() + Width() + " " + Dest() + ", " + Source());
          break;
        case 3:
          Emit(std::string(Pick(2) ? "NOT" : "NEG") + Width() + " " + Dest());
          break;
        case 4:
          Emit("COMPARE" + Width() + " " + Source() + ", " + Source());
          Emit(Jump() + " L" + std::to_string(label));
          open.insert(open.begin(), label++);
          break;
        case 5:
          Emit("STORE" + Width() + " [r13+" + std::to_string(8 * Pick(8)) + "], " + Source());
          break;
        case 6:
          Emit("MOVE r14, " + Reg() + "\nAND r14, 63\nADD" + Width() + " " + Reg() + ", " +
               (Pick(2) ? "data[r14+0]" : "sp[r14+16]"));
          break;
        default:
          Emit("MOVE" + Width() + " " + Dest() + ", " + Source());
      }
    }
    for (int l : open) Emit("L" + std::to_string(l) + ":");
    // Bounded continuation: follow data[0] while the counter in sp[0] lasts.
    Emit("SUB sp[0], 1\nCOMPARE sp[0], 0\nJUMP_LE stop\nMOVE cur_ptr, data[0]\nNEXT_ITER\nstop:\nRETURN");
    std::string text;
    for (auto& l : lines_) text += l + "\n";
    return text;
  }

 private:
  int Pick(int n) { return static_cast<int>(rng_() % n); }
  void Emit(const std::string& s) { lines_.push_back(s); }
  std::string Reg() { return "r" + std::to_string(Pick(13)); }
  std::string Width() {
    static const char* w[] = {"", "", ".4", ".2", ".1"};
    return w[Pick(5)];
  }
  std::string Imm() {
    switch (Pick(4)) {
      case 0: return std::to_string(Pick(9));
      case 1: return std::to_string(-Pick(100));
      case 2: return std::to_string(static_cast<int64_t>(rng_()));
      default: return "0";
    }
  }
  std::string Source() {
    switch (Pick(6)) {
      case 0: return Imm();
      case 1: case 2: return Reg();
      case 3: return "data[" + std::to_string(8 * Pick(8)) + "]";
      case 4: return "sp[" + std::to_string(16 + 8 * Pick(10)) + "]";
      default: return Pick(4) ? "data[" + std::to_string(Pick(56)) + "]" : "cur_ptr";
    }
  }
  std::string Dest() {
    switch (Pick(3)) {
      case 0: return "sp[" + std::to_string(16 + 8 * Pick(10)) + "]";
      default: return Reg();
    }
  }
  std::string Alu() {
    static const char* ops[] = {"ADD", "SUB", "MUL", "DIV", "SDIV", "MOD", "SMOD", "AND",
                                "OR",  "XOR", "SHL", "SHR", "SAR",  "ADD", "SUB"};
    return ops[Pick(15)];
  }
  std::string Jump() {
    static const char* j[] = {"JUMP_EQ", "JUMP_NE", "JUMP_LT", "JUMP_GT", "JUMP_LE", "JUMP_GE",
                              "JUMP_LTU", "JUMP_GTU", "JUMP_LEU", "JUMP_GEU", "JUMP_SET", "JUMP"};
    return j[Pick(12)];
  }

  std::mt19937_64& rng_;
  std::vector<std::string> lines_;
};

}  // namespace pulse::testing
