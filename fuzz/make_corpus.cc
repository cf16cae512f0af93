// pulse_fuzz_corpus OUT_DIR: writes the seed corpora of the fuzz targets
// (fuzz/corpus/<target>/) from real inputs: the test suites' programs, the
// data-structure library's compiled iterators, traversal messages as CPU
// nodes, memory nodes and the switch send them, and BPF objects clang makes
// from the test iterators; and the jit target's byte streams.
// scripts/fuzz_corpus.sh runs it.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "engine/sum_list_program.h"
#include "pulse/assembler.h"
#include "pulse/compiler.h"
#include "pulse/iterators/ds_btree_lower_bound.h"
#include "pulse/iterators/ds_list_aggregate.h"
#include "pulse/iterators/ds_umap_find.h"
#include "pulse/program.h"
#include "protocol/rpc_message.h"
#include "pulse/cluster.h"
#include "pulse/message_batch.h"
#include "pulse/protocol.h"
#include "net/handshake.h"
#include "rpc/rpc_handler.h"
#include "tenant_memory.h"

namespace fs = std::filesystem;
using namespace pulse;

namespace {

// Programs of the engine and verifier tests, one feature each.
const char* const kTextPrograms[][2] = {
    {"sum_list", testing::kSumListProgram},
    {"store", "LOAD data\nMOVE r1, data[0]\nSTORE [r1+8], 0xabcdef\nSTORE.2 [r1+16], -1\nRETURN"},
    {"indexed", "LOAD data, 32\nMOVE r1, data[8]\nAND r1, 24\nMOVE sp[0], data[r1]\nADD sp[r1+8], 3\nRETURN"},
    {"alloc", "LOAD data\nALLOC r4, sp[64]\nSTORE [r4], data[0]\nMOVE sp[0], r4\nRETURN"},
    {"alu", "LOAD data, 24\nMOVE r1, data[8]\nMUL.4 r1, 3\nDIV r1, data[16]\nSAR r1, 2\nNEG r1\n"
            "COMPARE.4 r1, sp[0]\nJUMP_LT less\nXOR sp[8], r1\nless:\nMOVE cur_ptr, data[0]\nNEXT_ITER"},
    {"chase_unsigned", ".equ LIMIT 0x10400\nLOAD data, 16\nCOMPARE data[0], LIMIT\nJUMP_GEU out\n"
                       "MOVE cur_ptr, data[0]\nADD.2 sp[2], 1\nNEXT_ITER\nout: JUMP_SET done\ndone: RETURN"},
};

int written = 0;

void Write(const fs::path& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  ++written;
}
std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

void Messages(const fs::path& out, const std::string& name, const ProgramRef& p) {
  TraversalMessage m;
  m.request_id = (uint64_t{1} << 40) | 7;
  m.cpu_node = 1;
  m.tenant = fuzz::kTenantA;
  m.program_hash = p->hash();
  m.max_iterations = 16;
  m.cur_ptr = 0x10000;
  m.scratch.assign(std::max<uint32_t>(p->info().scratch_bytes, 72), 0);
  m.program = p->encoded();
  const auto request = EncodeMessage(m);
  Write(out / "memnode_message", name, request);
  Write(out / "switch_message", name, request);
  if (name != "sum_list") return;
  TraversalMessage by_hash = m;
  by_hash.program.clear();
  Write(out / "memnode_message", name + "_by_hash", EncodeMessage(by_hash));
  TraversalMessage probe = by_hash;
  probe.flags = kFlagNoop;
  Write(out / "memnode_message", name + "_probe", EncodeMessage(probe));
  // A memory node's "not local" answer: the switch forwards it.
  TraversalMessage cont = m;
  cont.kind = MessageKind::kResponse;
  cont.status = TraversalStatus::kNotLocal;
  cont.cur_ptr = 0x20010;
  cont.iterations = 3;
  Write(out / "switch_message", name + "_continuation", EncodeMessage(cont));
  cont.flags = kFlagPulseAcc;
  cont.program.clear();
  Write(out / "switch_message", name + "_pulse_acc", EncodeMessage(cont));
  // Envelopes: a request with its code and one by hash; three answers.
  Write(out / "batch_envelope", name + "_requests", EncodeBatch(kAmTraversal, std::vector{request, EncodeMessage(by_hash)}));
  Write(out / "batch_envelope", name + "_answers",
        EncodeBatch(kAmTraversal, std::vector{EncodeMessage(cont), EncodeMessage(cont), EncodeMessage(probe)}));
}

void ProgramSeeds(const fs::path& out, const std::string& name, const ProgramRef& p) {
  // Header: start range, offset, scratch/16 (0: exact), iterations-1, seed x3, tenant.
  const uint8_t headers[][8] = {{0, 0, 0, 15, 1, 2, 3, 0}, {2, 5, 8, 3, 9, 0, 0, 1}};
  for (size_t i = 0; i < std::size(headers); ++i) {
    std::vector<uint8_t> bytes(headers[i], headers[i] + 8);
    bytes.insert(bytes.end(), p->encoded().begin(), p->encoded().end());
    Write(out / "program", name + "_" + std::to_string(i), bytes);
  }
  Write(out / "assembler", name + ".s", Bytes(Disassemble(p->instructions())));
  Messages(out, name, p);
}

// The jit target builds its program from any bytes (fuzz/jit_fuzz.cc):
// seeds are every header variant (tenant, bounded walk, folded walk, start)
// with bodies of fixed pseudo-random bytes.
void JitSeeds(const fs::path& out) {
  std::mt19937_64 rng(13);
  for (int i = 0; i < 16; ++i) {
    std::vector<uint8_t> bytes(8 + 4 * (8 + rng() % 40));
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    bytes[0] = static_cast<uint8_t>(i % 2 == 0 ? 0xc0 : bytes[0] & 0x3f);  // home, or anywhere
    bytes[7] = static_cast<uint8_t>(i % 8);                              // tenant, walk kind
    char name[16];
    std::snprintf(name, sizeof(name), "seed_%02d", i);
    Write(out / "jit", name, bytes);
  }
}

// The rpc_message target (fuzz/rpc_message_fuzz.cc): every handler's
// request as it travels (byte 0 even), truncated and with an unknown
// handler, and structured inputs (byte 0 odd) for every handler and tenant.
void RpcSeeds(const fs::path& out) {
  const fuzz::TenantMemory memory;
  for (const rpc::RpcHandler* h : rpc::RpcHandlers()) {
    rpc::RpcRequest r;
    r.handler = h->id;
    r.request_id = 0x77;
    r.tenant = fuzz::kTenantA;
    r.start = memory.PickAddress(0, 4);
    r.state.resize(h->state_bytes);
    memory.FillWords(h->id, &r.state);
    std::vector<uint8_t> raw = {0};
    const std::vector<uint8_t> wire = rpc::EncodeRpcRequest(r);
    raw.insert(raw.end(), wire.begin(), wire.end());
    Write(out / "rpc_message", std::string(h->name) + "_wire", raw);
    for (uint8_t tenant_and_flags : {0, 1, 2}) {
      std::vector<uint8_t> structured = {1, static_cast<uint8_t>(h->id), tenant_and_flags, 10, 3, 2, 9};
      for (uint32_t i = 0; i < h->state_bytes; ++i) structured.push_back(static_cast<uint8_t>(i * 7));
      Write(out / "rpc_message", fmt::format("{}_structured_{}", h->name, tenant_and_flags), structured);
    }
  }
  rpc::RpcRequest unknown;
  unknown.handler = 999;
  unknown.request_id = 5;
  std::vector<uint8_t> raw = {0};
  const std::vector<uint8_t> wire = rpc::EncodeRpcRequest(unknown);
  raw.insert(raw.end(), wire.begin(), wire.end());
  Write(out / "rpc_message", "unknown_handler", raw);
  raw.resize(20);
  Write(out / "rpc_message", "truncated_header", raw);
}

// The control target (fuzz/control_fuzz.cc): requests as they travel
// (byte 0 even; bit 1: to the switch) and structured operation sequences
// (byte 0 odd).
void ControlSeeds(const fs::path& out) {
  const std::pair<const char*, std::string> raw[] = {
      {"hello_memnode", std::string(1, '\0') + R"({"op":"hello","seq":1})"},
      {"hello_switch", std::string(1, '\2') + R"({"op":"hello","seq":2})"},
      {"stats_switch", std::string(1, '\2') + R"({"op":"stats","seq":"three"})"},
      {"stats_memnode", std::string(1, '\0') + R"({"op":"stats"})"},
      {"unknown_op", std::string(1, '\0') + R"({"op":"frobnicate","seq":[1,{"a":null}]})"},
      {"op_not_a_string", std::string(1, '\2') + R"({"op":17,"seq":4})"},
      {"not_an_object", std::string(1, '\0') + R"([{"op":"hello"}])"},
      {"not_json", std::string(1, '\2') + "{\"op\":\"hel"},
  };
  for (const auto& [name, text] : raw) Write(out / "control", name, Bytes(text));
  // Structured (see StructuredOp; 7 makes a field valid): an allocation of
  // tenant 1 freed by its owner; another one that tenant 2 tries to free and
  // lock, tenant 1 locks and unlocks, then frees; a hello and a stats.
  const std::vector<uint8_t> structured[] = {
      {1, /*alloc*/ 0, 0, 7, 40, 7, 0, /*free by 1*/ 1, 0, 7, 1, 0, 7},
      {1, /*alloc*/ 0, 0, 7, 40, 7, 2, /*free by 2*/ 1, 1, 7, 1, 0, 7,
       /*lock by 1*/ 2, 0, 7, 1, 8, 7, 5, 7, 0, 7, 1, 1, /*lock by 2*/ 2, 1, 7, 1, 8, 7, 6, 7, 0, 7, 1, 0,
       /*unlock by 1*/ 4, 0, 7, 1, 8, 7, 5, 7, 0, 7, 1, 1, /*free by 1*/ 1, 0, 7, 1, 0, 7},
      {1, /*alloc read-only*/ 0, 1, 7, 90, 7, 1, /*lock_renew*/ 3, 1, 7, 2, 0, 7, 3, 7, 1, 7},
      {1, /*hello*/ 5, 0, 7, /*stats*/ 6, 1, 7},
  };
  for (size_t i = 0; i < std::size(structured); ++i)
    Write(out / "control", fmt::format("structured_{}", i), structured[i]);
  std::mt19937_64 rng(19);
  for (int i = 0; i < 8; ++i) {
    std::vector<uint8_t> bytes(1 + 8 + rng() % 48);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    bytes[0] |= 1;
    Write(out / "control", fmt::format("structured_random_{}", i), bytes);
  }
}

// The handshake target's first byte picks the kind (1 + byte % 4).
void HandshakeSeeds(const fs::path& out) {
  using namespace net::handshake;
  auto seed = [&](const char* name, uint8_t kind, std::vector<uint8_t> bytes) {
    bytes.insert(bytes.begin(), static_cast<uint8_t>(kind - 1));
    Write(out / "handshake", name, bytes);
  };
  Hello hello;
  hello.role = Role::kTenant;
  hello.tenant = 2;
  for (size_t i = 0; i < hello.nonce.size(); ++i) hello.nonce[i] = static_cast<uint8_t>(i);
  seed("hello", 1, EncodeHello(hello));
  seed("challenge", 2, EncodeChallenge(hello.nonce));
  Signed s;
  s.endpoint_id = 7;
  s.address.assign(300, 0xab);
  s.proof = ComputeProof(std::vector<uint8_t>(32, 1), kClientLabel, hello, hello.nonce, 7, s.address);
  seed("proof", 3, EncodeProof(s));
  Verdict accepted;
  accepted.accepted = s;
  seed("verdict_accepted", 4, EncodeVerdict(accepted));
  Verdict refused;
  refused.code = 5;
  refused.text = "authentication failed";
  seed("verdict_refused", 4, EncodeVerdict(refused));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const fs::path out = argv[1];
  JitSeeds(out);
  RpcSeeds(out);
  ControlSeeds(out);
  HandshakeSeeds(out);
  for (const auto& [name, text] : kTextPrograms) {
    Write(out / "assembler", std::string(name) + "_source.s", Bytes(text));
    auto insns = Assemble(text);
    if (!insns.ok()) {
      std::fprintf(stderr, "seed program %s: %s\n", name, insns.status().ToString().c_str());
      return 1;
    }
    auto p = VerifiedProgram::Create(*insns);
    if (!p.ok()) {
      std::fprintf(stderr, "seed program %s: %s\n", name, p.status().ToString().c_str());
      return 1;
    }
    ProgramSeeds(out, name, *p);
  }
  const std::pair<const char*, std::span<const uint8_t>> compiled[] = {
      {"ds_umap_find", iterators::ds_umap_find()},
      {"ds_list_aggregate", iterators::ds_list_aggregate()},
      {"ds_btree_lower_bound", iterators::ds_btree_lower_bound()},
  };
  for (const auto& [name, bytes] : compiled) {
    auto p = VerifiedProgram::FromBytes(bytes);
    if (!p.ok()) return 1;
    ProgramSeeds(out, name, *p);
  }
  // BPF objects as clang writes them for `pulse compile`.
  const std::pair<const char*, bool> objects[] = {
      {"tests/compiler/iterators/umap_find.c", true},
      {"tests/compiler/iterators/list_find.c", false},
      {"tests/compiler/iterators/far_store.c", false},
      {"tests/compiler/iterators/stack_local.c", false},
      {"tests/compiler/iterators/btree_lower_bound.c", false},
  };
  for (const auto& [path, debug] : objects) {
    CompileOptions options;
    options.debug_info = debug;
    auto obj = CompileCToBpfObject(std::string(PULSE_SOURCE_DIR) + "/" + path, options);
    if (!obj.ok()) {
      std::fprintf(stderr, "%s: %s\n", path, obj.status().ToString().c_str());
      return 1;
    }
    Write(out / "elf", fs::path(path).stem().string() + (debug ? "_g.elf" : ".elf"), *obj);
  }
  std::printf("pulse_fuzz_corpus: wrote %d files under %s\n", written, argv[1]);
  return 0;
}
