LOAD data, 24
MOVE r1, data[8]
MUL.4 r1, 3
DIV r1, data[16]
SAR r1, 2
NEG r1
COMPARE.4 r1, sp[0]
JUMP_LT less
XOR sp[8], r1
less:
MOVE cur_ptr, data[0]
NEXT_ITER