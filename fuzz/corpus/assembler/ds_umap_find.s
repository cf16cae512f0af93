  LOAD data, 24
  COMPARE data[0], sp[0]
  JUMP_NE L7
  MOVE sp[8], 1
  MOVE sp[16], data[8]
  MOVE sp[24], cur_ptr
  RETURN
L7:
  COMPARE data[16], 0
  JUMP_NE L11
  MOVE sp[8], 0
  RETURN
L11:
  MOVE cur_ptr, data[16]
  NEXT_ITER
