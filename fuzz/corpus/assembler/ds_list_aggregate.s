  LOAD data, 24
  COMPARE data[16], sp[0]
  JUMP_LTU L17
  COMPARE data[16], sp[8]
  JUMP_GTU L17
  MOVE r3, sp[16]
  ADD r3, data[16]
  MOVE sp[16], r3
  COMPARE data[16], sp[24]
  JUMP_GEU L11
  MOVE sp[24], data[16]
L11:
  COMPARE data[16], sp[32]
  JUMP_LEU L14
  MOVE sp[32], data[16]
L14:
  MOVE r2, sp[40]
  ADD r2, 1
  MOVE sp[40], r2
L17:
  COMPARE data[0], 0
  JUMP_NE L20
  RETURN
L20:
  MOVE cur_ptr, data[0]
  NEXT_ITER
