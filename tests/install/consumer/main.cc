#include <pulse/assembler.h>
#include <pulse/program.h>
#include <cstdio>
int main() {
  auto insns = pulse::Assemble("LOAD data\nMOVE sp[0], data[0]\nRETURN");
  if (!insns.ok()) return 1;
  auto p = pulse::VerifiedProgram::Create(*insns);
  if (!p.ok()) return 2;
  std::printf("window=%u\n", (*p)->info().window_bytes);
  return (*p)->info().window_bytes == 8 ? 0 : 3;
}
