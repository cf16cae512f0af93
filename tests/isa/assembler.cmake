# Assembler, disassembler and program encoding tests (owned with src/isa/assembler.cc).
pulse_add_test(isa_assembler_test assembler_test.cc)
