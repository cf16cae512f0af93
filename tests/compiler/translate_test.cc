// Translation: the shape of the generated programs, window inference,
// register-indexed operands, stack placement, far stores, and differential
// tests of every test iterator against a reference BPF interpreter.
#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/compiler_test_util.h"
#include "compiler/differential.h"
#include "iterators/nodes.h"
#include "pulse/assembler.h"
#include "pulse/engine.h"

namespace pulse::testing {
namespace {

TEST(TranslateDifferential, UnorderedMapFind) { EXPECT_EQ(CompareWithBpf("umap_find.c", "unordered_map_find", 3000, 1), 0); }
TEST(TranslateDifferential, ListFind) { EXPECT_EQ(CompareWithBpf("list_find.c", "list_find", 3000, 2), 0); }
TEST(TranslateDifferential, BTreeLowerBound) { EXPECT_EQ(CompareWithBpf("btree_lower_bound.c", "btree_lower_bound", 3000, 3), 0); }
TEST(TranslateDifferential, RedBlackLowerBound) { EXPECT_EQ(CompareWithBpf("rbtree_lower_bound.c", "rbtree_lower_bound", 3000, 4), 0); }
TEST(TranslateDifferential, RangeAggregate) { EXPECT_EQ(CompareWithBpf("range_aggregate.c", "range_aggregate", 3000, 5), 0); }

TEST(TranslateDifferential, PrefetchingScan) { EXPECT_EQ(CompareWithBpf("prefetch_scan.c", "prefetch_scan", 3000, 8), 0); }

TEST(TranslateDifferential, AluMix) { EXPECT_EQ(CompareWithBpf("alu_mix.c", "alu_mix", 5000, 6), 0); }
TEST(TranslateDifferential, StackLocals) { EXPECT_EQ(CompareWithBpf("stack_local.c", "stack_local", 3000, 7), 0); }

// Pointers into the stack compare as BPF's addresses do: the frame pointer
// (offset 0 in pulse) lies above its slots (negative offsets), so an
// unsigned comparison of the offsets would be wrong.  stack_local's
// `if r3 > 1000` becomes `if r10 > r4` (always taken in BPF).
TEST(TranslateDifferential, StackPointersCompareAsAddresses) {
  auto object = CompileCToBpfObject(IteratorPath("stack_local.c"), {});
  ASSERT_TRUE(object.ok()) << object.status().message();
  const uint8_t compare[8] = {0x25, 0x03, 0x01, 0x00, 0xe8, 0x03, 0x00, 0x00};  // if r3 > 1000 goto +1
  auto at = std::search(object->begin(), object->end(), std::begin(compare), std::end(compare));
  ASSERT_NE(at, object->end());
  at[0] = 0x2d;  // JGT with a register source
  at[1] = 0x4a;  // dst r10, src r4
  std::fill(at + 4, at + 8, 0);
  EXPECT_EQ(CompareObjectWithBpf(*object, "stack_local.c (r10 > r4)", "stack_local", 200, 14), 0);
}

TEST(TranslateDifferential, WithoutOptimizations) {
  CompileOptions opts;
  opts.optimize = false;
  EXPECT_EQ(CompareWithBpf("umap_find.c", "unordered_map_find", 1000, 8, opts), 0);
  EXPECT_EQ(CompareWithBpf("btree_lower_bound.c", "btree_lower_bound", 1000, 9, opts), 0);
  EXPECT_EQ(CompareWithBpf("rbtree_lower_bound.c", "rbtree_lower_bound", 1000, 10, opts), 0);
  EXPECT_EQ(CompareWithBpf("range_aggregate.c", "range_aggregate", 1000, 11, opts), 0);
  EXPECT_EQ(CompareWithBpf("alu_mix.c", "alu_mix", 1000, 12, opts), 0);
  EXPECT_EQ(CompareWithBpf("stack_local.c", "stack_local", 1000, 13, opts), 0);
}

using isa::Instruction;
using isa::Opcode;
using isa::Operand;
using isa::OperandKind;

Instruction I(Opcode op, Operand a = Operand::None(), Operand b = Operand::None(), uint8_t width = 8) {
  Instruction in;
  in.op = op;
  in.width = width;
  in.a = a;
  in.b = b;
  return in;
}

// Listing 3 becomes Listing 4: one LOAD of the 24 bytes the functions read,
// memory operands straight from the window and the scratch pad.
TEST(Translate, Listing3BecomesListing4) {
  auto it = CompileTestIterator("umap_find.c");
  ASSERT_TRUE(it.ok()) << it.status().message();
  const std::vector<Instruction> expected = {
      I(Opcode::kLoad, Operand::Imm(24)),
      I(Opcode::kCompare, Operand::Sp(0), Operand::Data(0)),
      I(Opcode::kJumpNe, Operand::Imm(5)),
      I(Opcode::kMove, Operand::Sp(0), Operand::Data(8)),  // the value
      I(Opcode::kReturn),
      I(Opcode::kCompare, Operand::Data(16), Operand::Imm(0)),  // next == NULL?
      I(Opcode::kJumpNe, Operand::Imm(9)),
      I(Opcode::kMove, Operand::Sp(0), Operand::Imm(0xffffffff), 4),  // KEY_NOT_FOUND
      I(Opcode::kReturn),
      I(Opcode::kMove, Operand::CurPtr(), Operand::Data(16)),
      I(Opcode::kNextIter),
  };
  EXPECT_EQ(it->program, expected) << Disassemble(it->program);
  EXPECT_EQ(it->info.window_bytes, 24u);
  EXPECT_EQ(it->info.longest_path, 7u);
  EXPECT_EQ(it->info.scratch_bytes, 8u);
  EXPECT_EQ(it->end_bpf_insns, 13u);
  EXPECT_EQ(it->next_bpf_insns, 2u);
  EXPECT_EQ(it->stack_bytes, 0u);
  EXPECT_TRUE(it->warnings.empty());
}

TEST(Translate, WindowCoversExactlyTheBytesRead) {
  auto it = CompileIteratorSource(R"(#include <pulse/iterator.h>
struct wide { pulse_u64 key; pulse_u8 pad[100]; pulse_u32 flag; pulse_u8 pad2[60]; struct wide *next; };
PULSE_END(w, struct wide) { return cur_ptr->flag != 0; }
PULSE_NEXT(w, struct wide) { return cur_ptr->next; }
)");
  ASSERT_TRUE(it.ok()) << it.status().message();
  EXPECT_EQ(it->info.window_bytes, 184u);  // next at 176..184; key is never read
  EXPECT_EQ(it->program[0], I(Opcode::kLoad, Operand::Imm(184)));
}

TEST(Translate, RegisterIndexedWindowAccess) {
  auto it = CompileTestIterator("btree_lower_bound.c");
  ASSERT_TRUE(it.ok()) << it.status().message();
  EXPECT_TRUE(it->info.has_indexed);
  EXPECT_EQ(it->info.window_bytes, 256u);
  // next(): child[next_pos & 15] is data[rN+128].
  bool found = false;
  for (const auto& in : it->program)
    if (in.b.kind == OperandKind::kDataIdx && in.b.value == 128) found = true;
  EXPECT_TRUE(found) << Disassemble(it->program);
  EXPECT_TRUE(it->warnings.empty());
}

TEST(Translate, IndexBoundedByAComparisonNeedsNoMask) {
  auto it = CompileIteratorSource(R"(#include <pulse/iterator.h>
struct arr { pulse_u64 count; pulse_u64 v[8]; struct arr *next; };
PULSE_END(a, struct arr) {
  pulse_u64 i = *(pulse_u64 *)scratch_pad;
  if (i >= 8) return true;
  *(pulse_u64 *)(scratch_pad + 8) = cur_ptr->v[i];
  return false;
}
PULSE_NEXT(a, struct arr) { return cur_ptr->next; }
)");
  ASSERT_TRUE(it.ok()) << it.status().message();
  EXPECT_TRUE(it->info.has_indexed);
  EXPECT_EQ(it->info.window_bytes, 80u);  // v[0..8) and next
  EXPECT_TRUE(it->warnings.empty());
}

TEST(Translate, UnboundedIndexWidensTheWindowAndWarns) {
  auto it = CompileIteratorSource(R"(#include <pulse/iterator.h>
struct arr { pulse_u64 v[8]; struct arr *next; };
PULSE_END(a, struct arr) {
  *(pulse_u64 *)(scratch_pad + 8) = cur_ptr->v[*(pulse_u64 *)scratch_pad];
  return true;
}
PULSE_NEXT(a, struct arr) { return cur_ptr->next; }
)");
  ASSERT_TRUE(it.ok()) << it.status().message();
  EXPECT_EQ(it->info.window_bytes, 256u);
  ASSERT_EQ(it->warnings.size(), 1u);
  EXPECT_NE(it->warnings[0].message.find("not known to stay inside the node window"), std::string::npos)
      << it->warnings[0].ToString();
  EXPECT_EQ(it->warnings[0].function, "end");

  // Out-of-window indexes fault at run time instead of reading stray bytes.
  auto program = Verified(*it);
  ASSERT_NE(program, nullptr);
  FarMemory mem(4096);
  const uint64_t node = mem.Alloc(512);
  std::vector<uint8_t> scratch(16, 0);
  PutScratch<uint64_t>(&scratch, 0, 40);  // v[40]: byte 320
  EXPECT_EQ(RunIterator(*program, mem, node, &scratch).status, TraversalStatus::kFaultBounds);
  PutScratch<uint64_t>(&scratch, 0, 3);
  mem.At<uint64_t>(node)[3] = 77;
  EXPECT_EQ(RunIterator(*program, mem, node, &scratch).status, TraversalStatus::kDone);
  EXPECT_EQ(GetScratch<uint64_t>(scratch, 8), 77u);
}

TEST(Translate, Alu32UsesFourByteOperations) {
  auto it = CompileTestIterator("alu_mix.c");
  ASSERT_TRUE(it.ok()) << it.status().message();
  int narrow_alu = 0;
  for (const auto& in : it->program)
    if (isa::IsAlu(in.op) && in.width == 4) ++narrow_alu;
  EXPECT_GT(narrow_alu, 3) << Disassemble(it->program);
}

TEST(Translate, StackSlotsGoAfterTheIteratorsScratchBytes) {
  auto it = CompileTestIterator("stack_local.c");
  ASSERT_TRUE(it.ok()) << it.status().message();
  EXPECT_EQ(it->stack_offset, 16u);  // the iterator uses sp[0..16)
  EXPECT_EQ(it->stack_bytes, 32u);   // volatile u64 tmp[4]
  EXPECT_EQ(it->info.scratch_bytes, 48u);

  CompileOptions opts;
  opts.stack_offset = 1024;
  auto moved = CompileTestIterator("stack_local.c", opts);
  ASSERT_TRUE(moved.ok()) << moved.status().message();
  EXPECT_EQ(moved->stack_offset, 1024u);
  EXPECT_EQ(moved->info.scratch_bytes, 1056u);
  EXPECT_EQ(CompareWithBpf("stack_local.c", "stack_local", 500, 14, opts), 0);

  opts.stack_offset = 4090;  // does not fit
  auto bad = CompileTestIterator("stack_local.c", opts);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("do not fit in the 4096-byte scratch pad"), std::string::npos)
      << bad.status().message();
}

// The stack slots are dead once an iteration ends: they are zeroed at both
// terminals, so the pad's tail a message carries ends at the iterator's own
// bytes.  stack_local writes tmp[] = v[k] * (k + 1), nonzero for these nodes.
// The hints name the right addresses: run one iteration of prefetch_scan on
// a leaf on the engine, whose counters say which hints fell inside the
// tenant's range.  Keys 30 and 40 are >= the start 25: two hints, to
// child[2] (a node in the range) and child[3] (outside every range).
TEST(Translate, PrefetchHintsNameTheChildrenTheCodeRead) {
  auto it = CompileTestIterator("prefetch_scan.c");
  ASSERT_TRUE(it.ok()) << it.status().message();
  auto program = Verified(*it);
  ASSERT_NE(program, nullptr);
  FarMemory mem(1 << 16);
  const uint64_t leaf = mem.Alloc(sizeof(btree_node));
  const uint64_t child = mem.Alloc(sizeof(btree_node));
  btree_node* n = mem.At<btree_node>(leaf);
  n->count = 4;
  n->leaf = 1;
  for (int k = 0; k < 4; ++k) n->keys[k] = 10 * (k + 1);
  n->child[0] = n->child[1] = 0x5000000;  // not hinted: keys below the start
  n->child[2] = child;
  n->child[3] = 0x7000000;
  for (EngineKind kind : {EngineKind::kInterpreter, DefaultEngineKind()}) {
    SCOPED_TRACE(std::string(EngineKindName(kind)));
    EngineOptions options;
    options.engine = kind;
    Pipeline pipeline(&mem.table(), options);
    TraversalRequest req;
    req.program = program;
    req.tenant = FarMemory::kTenant;
    req.state.cur_ptr = leaf;
    req.state.scratch.assign(program->info().scratch_bytes, 0);
    PutScratch<uint64_t>(&req.state.scratch, 0, 25);
    pipeline.Admit(std::move(req));
    std::vector<uint8_t> answer;
    pipeline.Run([&](TraversalRequest&& done, const TraversalOutcome& out) {
      EXPECT_EQ(out.status, TraversalStatus::kDone);
      answer = done.state.scratch;
    });
    ASSERT_FALSE(answer.empty());
    EXPECT_EQ(GetScratch<uint64_t>(answer, 8), 2u);               // count
    EXPECT_EQ(GetScratch<uint64_t>(answer, 24), 0x7000000u);      // the last hinted child
    EXPECT_EQ(pipeline.prefetches_issued(), 1u);
    EXPECT_EQ(pipeline.prefetches_ignored(), 1u);
  }
}

TEST(Translate, StackSlotsAreZeroAfterEveryIteration) {
  auto it = CompileTestIterator("stack_local.c");
  ASSERT_TRUE(it.ok()) << it.status().message();
  EXPECT_TRUE(it->stack_cleared);
  auto program = Verified(*it);
  ASSERT_NE(program, nullptr);
  FarMemory mem(1 << 16);
  const uint64_t second = mem.Alloc(40);
  const uint64_t first = mem.Alloc(40);
  for (uint64_t at : {first, second})
    for (int k = 0; k < 4; ++k) mem.At<uint64_t>(at)[k] = at == first ? 7 + k : 400 + k;
  mem.At<uint64_t>(first)[4] = second;
  mem.At<uint64_t>(second)[4] = 0;
  for (const uint32_t iterations : {1u, 2u}) {  // NEXT_ITER after the first node, RETURN at the second
    SCOPED_TRACE("iterations " + std::to_string(iterations));
    TraversalState state;
    state.cur_ptr = first;
    state.scratch.assign(64, 0xAB);
    PutScratch<uint64_t>(&state.scratch, 0, 5);  // out[1] = tmp[1] + tmp[1]
    TraversalOutcome out = InterpretTraversal(*program, mem.table(), FarMemory::kTenant, iterations, &state);
    ASSERT_EQ(out.status, iterations == 1 ? TraversalStatus::kContinue : TraversalStatus::kDone);
    for (uint32_t b = it->stack_offset; b < it->stack_offset + it->stack_bytes; ++b)
      ASSERT_EQ(state.scratch[b], 0) << "stack byte " << b;
    EXPECT_EQ(state.scratch[it->stack_offset + it->stack_bytes], 0xAB);  // beyond the frame: untouched
    EXPECT_EQ(GetScratch<uint64_t>(state.scratch, 8), iterations == 1 ? 2u * 16 : 2u * 802);
  }
}

TEST(Translate, FarStoresThroughPointersFromTheNode) {
  auto it = CompileTestIterator("far_store.c");
  ASSERT_TRUE(it.ok()) << it.status().message();
  EXPECT_TRUE(it->info.has_store);
  auto program = Verified(*it);
  ASSERT_NE(program, nullptr);
  FarMemory mem(1 << 16);
  std::vector<uint64_t> nodes;
  for (int i = 0; i < 5; ++i) nodes.push_back(mem.Alloc(sizeof(node)));
  for (int i = 0; i < 5; ++i)
    *mem.At<node>(nodes[i]) = node{uint64_t(i + 1), uint64_t(10 * i), i + 1 < 5 ? nodes[i + 1] : 0};
  std::vector<uint8_t> scratch(16, 0);
  PutScratch<uint64_t>(&scratch, 0, 3);  // visit three nodes
  TraversalOutcome out = RunIterator(*program, mem, nodes[0], &scratch);
  ASSERT_EQ(out.status, TraversalStatus::kDone);
  EXPECT_EQ(out.iterations, 3u);
  EXPECT_EQ(GetScratch<uint64_t>(scratch, 8), 3u);
  // Visited nodes got value += 1000; each next node's key = this key * 2.
  EXPECT_EQ(mem.At<node>(nodes[0])->value, 1000u);
  EXPECT_EQ(mem.At<node>(nodes[1])->key, 2u);
  EXPECT_EQ(mem.At<node>(nodes[1])->value, 1010u);
  EXPECT_EQ(mem.At<node>(nodes[2])->key, 4u);  // written by node 1 (key 2 * 2)
  EXPECT_EQ(mem.At<node>(nodes[2])->value, 1020u);
  EXPECT_EQ(mem.At<node>(nodes[3])->key, 8u);
  EXPECT_EQ(mem.At<node>(nodes[3])->value, 30u);  // not visited
}

// PULSE_PREFETCH becomes one PREFETCH per hint, of the child's far address
// as read from the window, and the program encodes as version 2.
TEST(Translate, PrefetchHintsBecomePrefetchInstructions) {
  auto it = CompileTestIterator("prefetch_scan.c");
  ASSERT_TRUE(it.ok()) << it.status().message();
  auto program = Verified(*it);
  ASSERT_NE(program, nullptr);
  int prefetches = 0;
  for (const auto& in : program->instructions()) {
    if (in.op != Opcode::kPrefetch) continue;
    ++prefetches;
    EXPECT_EQ(in.a.kind, isa::OperandKind::kMem);
    EXPECT_EQ(in.b.kind, isa::OperandKind::kNone);
  }
  EXPECT_GE(prefetches, BTREE_MAX_KEYS);  // one per unrolled key (more if a tail was cloned)
  EXPECT_EQ(program->encoded()[4], 2);    // the encoding version (little-endian u16)
  auto without = CompileTestIterator("btree_lower_bound.c");
  ASSERT_TRUE(without.ok());
  auto plain = Verified(*without);
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->encoded()[4], 1);  // no PREFETCH: still version 1
}

TEST(Translate, BackwardJumpWithoutALoopIsLaidOutForward) {
  // clang places a block of range_aggregate's end() after the exit it
  // jumps back to; that is not a loop and must compile.
  auto object = CompileCToBpfObject(IteratorPath("range_aggregate.c"));
  ASSERT_TRUE(object.ok()) << object.status().message();
  auto bpf = BpfIterator::FromObject(*object, "range_aggregate");
  ASSERT_TRUE(bpf.has_value());
  bool backward = false;
  for (const auto& in : bpf->end)
    if (in.slots && in.is_branch() && in.off < 0) backward = true;
  EXPECT_TRUE(backward) << "clang's layout changed; the test no longer covers this";
  auto it = TranslateBpfObject(*object);
  EXPECT_TRUE(it.ok()) << it.status().message();
}

TEST(Translate, SeveralIteratorsInOneFile) {
  const char* src = R"(#include <pulse/iterator.h>
struct n { pulse_u64 key; struct n *next; };
PULSE_END(first, struct n) { return cur_ptr->key == 1; }
PULSE_NEXT(first, struct n) { return cur_ptr->next; }
PULSE_END(second, struct n) { return cur_ptr->key == 2; }
PULSE_NEXT(second, struct n) { return cur_ptr->next; }
)";
  auto none = CompileIteratorSource(src);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("several iterators (first, second)"), std::string::npos);
  CompileOptions opts;
  opts.iterator = "second";
  auto two = CompileIteratorSource(src, opts);
  ASSERT_TRUE(two.ok()) << two.status().message();
  EXPECT_EQ(two->name, "second");
  EXPECT_EQ(two->program[1], I(Opcode::kCompare, Operand::Data(0), Operand::Imm(2)));
  opts.iterator = "third";
  auto missing = CompileIteratorSource(src, opts);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
}

TEST(Translate, EmbeddedSourceCarriesTheBytes) {
  auto it = CompileTestIterator("umap_find.c");
  ASSERT_TRUE(it.ok());
  const std::string cc = EmbedProgramSource(*it, "umap");
  EXPECT_NE(cc.find("std::span<const std::uint8_t> umap()"), std::string::npos);
  EXPECT_NE(cc.find("0x50, 0x55, 0x4c, 0x53"), std::string::npos);  // "PULS"
  EXPECT_NE(EmbedProgramHeader(*it, "umap").find("longest path 7 instructions"), std::string::npos);
}

}  // namespace
}  // namespace pulse::testing
