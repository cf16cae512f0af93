// Every rejection the compiler makes, with its diagnostic: the iterator, the
// function, the BPF instruction and (with debug info) the source line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "compiler/compiler_test_util.h"

namespace pulse::testing {
namespace {

using ::testing::HasSubstr;

// The common prelude of the sources below: a node and a valid next().
const char* kPrelude = R"(#include <pulse/iterator.h>
struct n { pulse_u64 key; pulse_u64 value; struct n *next; pulse_u64 idx; };
PULSE_NEXT(it, struct n) { return cur_ptr->next; }
)";

// Compiles kPrelude + body; expects a rejection and returns its message.
std::string Reject(const std::string& body, CompileOptions options = {}) {
  auto r = CompileIteratorSource(std::string(kPrelude) + body, options);
  EXPECT_FALSE(r.ok()) << "compiled, but should have been rejected:\n" << body;
  return r.ok() ? "" : r.status().message();
}

// The source line of the prelude + body that contains `needle` (1-based).
int LineOf(const std::string& body, const std::string& needle) {
  const std::string text = std::string(kPrelude) + body;
  const size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos);
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

TEST(Reject, LoopClangCannotUnroll) {
  const std::string body = R"(
PULSE_END(it, struct n) {
  pulse_u64 sum = 0;
  for (pulse_u64 i = 0; i < cur_ptr->idx; ++i) sum = sum * 31 + scratch_pad[8 + (i & 63)];
  *(pulse_u64 *)scratch_pad = sum;
  return true;
}
)";
  const std::string msg = Reject(body);
  EXPECT_THAT(msg, HasSubstr("error: iterator 'it' end(), BPF instruction "));
  EXPECT_THAT(msg, HasSubstr("backward jump to instruction"));
  EXPECT_THAT(msg, HasSubstr("a loop that clang could not unroll"));
  EXPECT_THAT(msg, HasSubstr("iterator.c:" + std::to_string(LineOf(body, "for ("))));
}

TEST(Reject, CallToFunctionNotInlined) {
  const std::string msg = Reject(R"(
__attribute__((noinline)) pulse_u64 mix(pulse_u64 x) { return x * 0x9e3779b97f4a7c15ull; }
PULSE_END(it, struct n) {
  return mix(cur_ptr->key) == *(pulse_u64 *)scratch_pad;
}
)");
  EXPECT_THAT(msg, HasSubstr("iterator 'it' end()"));
  EXPECT_THAT(msg, HasSubstr("calls function 'mix', which clang did not inline"));
  EXPECT_THAT(msg, HasSubstr("`call "));
}

TEST(Reject, CallToBpfHelper) {
  const std::string msg = Reject(R"(
static long (*const ktime)(void) = (void *)5;
PULSE_END(it, struct n) {
  *(pulse_u64 *)scratch_pad = ktime();
  return true;
}
)");
  EXPECT_THAT(msg, HasSubstr("calls BPF helper #5: helpers are not available near memory"));
}

TEST(Reject, PrefetchOfAPointerIntoTheWindow) {
  const std::string msg = Reject(R"(
PULSE_END(it, struct n) {
  PULSE_PREFETCH(&cur_ptr->value);
  return true;
}
)");
  EXPECT_THAT(msg, HasSubstr("PULSE_PREFETCH of a pointer into the context"));
  EXPECT_THAT(msg, HasSubstr("it takes a far address"));
}

TEST(Reject, Recursion) {
  // A raw section function (what PULSE_END expands to) that calls itself.
  const std::string body = R"(
PULSE_END(unused, struct n) { return true; }
__attribute__((section("pulse/end/it"), used, noinline))
int rec(struct pulse_ctx *ctx) {
  if (ctx->scratch_pad[0] == 0) return 1;
  ctx->scratch_pad[0] -= 1;
  int r = rec(ctx);
  ctx->scratch_pad[8] += (pulse_u8)r;
  return r;
}
)";
  CompileOptions opts;
  opts.iterator = "it";
  const std::string msg = Reject(body, opts);
  EXPECT_THAT(msg, HasSubstr("recursion: rec() calls itself"));
}

TEST(Reject, GlobalConstantTable) {
  const std::string body = R"(
static const pulse_u64 table[8] = {3, 1, 4, 1, 5, 9, 2, 6};
PULSE_END(it, struct n) {
  *(pulse_u64 *)scratch_pad = table[cur_ptr->idx & 7];
  return true;
}
)";
  const std::string msg = Reject(body);
  EXPECT_THAT(msg, HasSubstr("uses global data"));
  EXPECT_THAT(msg, HasSubstr("iterators cannot use global or static variables"));
  EXPECT_THAT(msg, HasSubstr("iterator.c:" + std::to_string(LineOf(body, "= table["))));
}

TEST(Reject, GlobalVariable) {
  const std::string msg = Reject(R"(
pulse_u64 visits;
PULSE_END(it, struct n) {
  visits += 1;
  return cur_ptr->next == NULL;
}
)");
  EXPECT_THAT(msg, HasSubstr("uses global data 'visits'"));
}

TEST(Reject, ReadThroughPointerFromTheNode) {
  const std::string body = R"(
PULSE_END(it, struct n) {
  return cur_ptr->next != NULL && cur_ptr->next->key == *(pulse_u64 *)scratch_pad;
}
)";
  const std::string msg = Reject(body);
  EXPECT_THAT(msg, HasSubstr("reads far memory through r"));
  EXPECT_THAT(msg, HasSubstr("an iteration can only read the node it loaded"));
  EXPECT_THAT(msg, HasSubstr("iterator.c:" + std::to_string(LineOf(body, "cur_ptr->next->key"))));
}

TEST(Reject, NodeBeyondTheWindow) {
  const std::string msg = Reject(R"(
struct big { pulse_u64 head; pulse_u8 pad[300]; pulse_u64 tail; };
PULSE_END(it, struct n) {
  const struct big *b = (const struct big *)cur_ptr;
  return b->tail == 0;
}
)");
  EXPECT_THAT(msg, HasSubstr("beyond the 256-byte node window"));
}

TEST(Reject, ScratchPadBeyondItsSize) {
  CompileOptions opts;
  opts.scratch_pad_bytes = 1024;
  const std::string msg = Reject(R"(
PULSE_END(it, struct n) {
  *(pulse_u64 *)(scratch_pad + 2000) = cur_ptr->key;
  return true;
}
)",
                                 opts);
  EXPECT_THAT(msg, HasSubstr("accesses scratch pad bytes [2000, 2008), beyond the 1024-byte scratch pad"));
}

TEST(Reject, WriteToTheWindow) {
  const std::string msg = Reject(R"(
PULSE_END(it, struct n) {
  ((struct n *)cur_ptr)->value = 1;
  return true;
}
)");
  EXPECT_THAT(msg, HasSubstr("writes node byte 8 in the window: the window is a read-only copy"));
  EXPECT_THAT(msg, HasSubstr("pulse_store_u64(cur_addr + 8, value)"));
}

TEST(Reject, PointerIntoTheContextEscapes) {
  const std::string msg = Reject(R"(
PULSE_END(it, struct n) {
  *(const struct n **)scratch_pad = cur_ptr;
  return true;
}
)");
  EXPECT_THAT(msg, HasSubstr("stores a pointer into the context to memory"));
}

// The pointer is spilled to a stack slot and read back through an index as
// a number: an offset in pulse, an address in BPF (the elf fuzz target's
// comparison with the BPF reference found this as differing scratch pads).
TEST(Reject, SpilledStackPointerReadAsANumber) {
  const std::string msg = Reject(R"(
PULSE_END(it, struct n) {
  pulse_u64 *sp = (pulse_u64 *)scratch_pad;
  volatile pulse_u64 tmp[4];
  tmp[0] = cur_ptr->key;
  tmp[1] = (pulse_u64)&tmp[0];
  tmp[2] = cur_ptr->value;
  tmp[3] = 0;
  sp[1] = tmp[sp[0] & 3];
  return true;
}
)");
  EXPECT_THAT(msg, HasSubstr("as a number where a pointer into the context or the stack may have been stored"));
}

TEST(Reject, NextReturnsTheWindowInsteadOfAFarPointer) {
  auto r = CompileIteratorSource(R"(#include <pulse/iterator.h>
struct n { pulse_u64 key; struct n *next; };
PULSE_END(it, struct n) { return cur_ptr->key == 0; }
PULSE_NEXT(it, struct n) { return cur_ptr; }
)");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("iterator 'it' next()"));
  EXPECT_THAT(r.status().message(), HasSubstr("next() returns a pointer into the context"));
}

TEST(Reject, IterationLongerThanTheVerifierAllows) {
  const std::string msg = Reject(R"(
PULSE_END(it, struct n) {
  pulse_u64 *sp = (pulse_u64 *)scratch_pad;
#pragma unroll
  for (int k = 0; k < 400; ++k)
    if (sp[k] > cur_ptr->key) sp[k] ^= cur_ptr->value + k;
  return true;
}
)");
  EXPECT_THAT(msg, HasSubstr("instructions; the limit is 1024"));
}

TEST(Reject, MissingNext) {
  auto r = CompileIteratorSource(R"(#include <pulse/iterator.h>
PULSE_END(lonely, pulse_u64) { return *cur_ptr == 0; }
)");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("iterator 'lonely' has no next()"));
}

TEST(Reject, NoIteratorInTheFile) {
  auto r = CompileIteratorSource("int f(int x) { return x + 1; }\n");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("defines no iterator"));
}

TEST(Reject, CSyntaxErrorShowsClangsMessage) {
  auto r = CompileIteratorSource("#include <pulse/iterator.h>\nPULSE_END(x, pulse_u64) { return oops; }\n");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("clang failed"));
  EXPECT_THAT(r.status().message(), HasSubstr("use of undeclared identifier 'oops'"));
}

TEST(Reject, ClangNotFound) {
  CompileOptions opts;
  opts.clang = "/nonexistent/clang-42";
  auto r = CompileIteratorFile(IteratorPath("umap_find.c"), opts);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("not found"));
}

TEST(Reject, NotAnElfObject) {
  const std::vector<uint8_t> junk = {1, 2, 3, 4, 5};
  auto r = TranslateBpfObject(junk);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("not an ELF file"));
}

// A little-endian field of an ELF64 object.
uint64_t ElfField(const std::vector<uint8_t>& elf, size_t at, size_t bytes) {
  uint64_t v = 0;
  std::memcpy(&v, elf.data() + at, bytes);
  return v;
}

// Where section `name`'s header is in an ELF64 object (0 if it has none).
size_t SectionHeaderAt(const std::vector<uint8_t>& elf, const std::string& name) {
  const uint64_t shoff = ElfField(elf, 0x28, 8), shentsize = ElfField(elf, 0x3a, 2);
  const uint64_t strtab = ElfField(elf, shoff + ElfField(elf, 0x3e, 2) * shentsize + 0x18, 8);
  for (uint64_t i = 0; i < ElfField(elf, 0x3c, 2); ++i) {
    const uint64_t hdr = shoff + i * shentsize;
    if (reinterpret_cast<const char*>(elf.data() + strtab + ElfField(elf, hdr, 4)) == name) return hdr;
  }
  ADD_FAILURE() << "no section " << name;
  return 0;
}

// Sets the size field of section `name`'s header.
void SetSectionSize(std::vector<uint8_t>* elf, const std::string& name, uint64_t size) {
  if (const size_t hdr = SectionHeaderAt(*elf, name)) std::memcpy(elf->data() + hdr + 0x20, &size, 8);
}

// A damaged object (a fuzzer's mutated digit): next()'s section has 5 bytes
// more than its function symbol covers.  The translator read only the
// symbol's bytes; such a section is refused, naming it.
TEST(Reject, CodeSectionNotWholeInstructions) {
  auto object = CompileCToBpfObject(IteratorPath("list_find.c"), {});
  ASSERT_TRUE(object.ok()) << object.status().message();
  SetSectionSize(&*object, "pulse/next/list_find", 21);
  auto r = TranslateBpfObject(*object);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("section pulse/next/list_find: 21 bytes, not a whole number of 8-byte BPF instructions"));
}

// A mutated object: end()'s first instruction becomes a byte-order
// conversion to 0 bits, which BPF does not define (the translator took it
// for le64; the reference truncated it to 32 bits).
TEST(Reject, ByteOrderConversionToAnUndefinedWidth) {
  auto object = CompileCToBpfObject(IteratorPath("list_find.c"), {});
  ASSERT_TRUE(object.ok()) << object.status().message();
  const size_t hdr = SectionHeaderAt(*object, "pulse/end/list_find");
  ASSERT_NE(hdr, 0u);
  uint8_t* insn = object->data() + ElfField(*object, hdr + 0x18, 8);
  insn[0] = 0xd4;  // BPF_ALU | BPF_END | BPF_TO_LE; imm (bytes 4-7) is the width
  std::memset(insn + 4, 0, 4);
  auto r = TranslateBpfObject(*object);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("byte-order conversion to 0 bits: BPF defines 16, 32 and 64"));
}

// A mutated object: end()'s first instruction loads into r10.  BPF's frame
// pointer is read-only; the translator refused ALU writes to it but took
// loads, and dropped this one as dead, so pulse went on where BPF's load
// left the context (a fuzzer's find).
TEST(Reject, LoadIntoTheFramePointer) {
  auto object = CompileCToBpfObject(IteratorPath("list_find.c"), {});
  ASSERT_TRUE(object.ok()) << object.status().message();
  const size_t hdr = SectionHeaderAt(*object, "pulse/end/list_find");
  ASSERT_NE(hdr, 0u);
  uint8_t* insn = object->data() + ElfField(*object, hdr + 0x18, 8);
  const uint8_t load[8] = {0x79, 0x1a, 0x08, 0x00, 0, 0, 0, 0};  // r10 = *(u64 *)(r1 + 8)
  std::memcpy(insn, load, 8);
  auto r = TranslateBpfObject(*object);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("writes the frame pointer r10"));
}

TEST(Reject, EveryProblemIsReported) {
  // Two independent problems in one function: both diagnostics.
  const std::string msg = Reject(R"(
pulse_u64 g;
__attribute__((noinline)) pulse_u64 h(pulse_u64 x) { return x + 1; }
PULSE_END(it, struct n) {
  g = h(cur_ptr->key);
  return true;
}
)");
  EXPECT_THAT(msg, HasSubstr("calls function 'h'"));
  EXPECT_THAT(msg, HasSubstr("uses global data 'g'"));
}

TEST(Reject, WithoutDebugInfoStillNamesFunctionAndInstruction) {
  CompileOptions opts;
  opts.debug_info = false;
  const std::string msg = Reject(R"(
PULSE_END(it, struct n) {
  return cur_ptr->next->key == 1;
}
)",
                                 opts);
  EXPECT_THAT(msg, HasSubstr("error: iterator 'it' end(), BPF instruction "));
  EXPECT_THAT(msg, ::testing::Not(HasSubstr("iterator.c:")));
}

}  // namespace
}  // namespace pulse::testing
