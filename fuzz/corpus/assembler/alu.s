  LOAD data, 24
  MOVE r1, data[8]
  MUL.4 r1, 3
  DIV r1, data[16]
  SAR r1, 2
  NEG r1
  COMPARE.4 r1, sp[0]
  JUMP_LT L9
  XOR sp[8], r1
L9:
  MOVE cur_ptr, data[0]
  NEXT_ITER
