  LOAD data, 16
  COMPARE data[0], 66560
  JUMP_GEU L6
  MOVE cur_ptr, data[0]
  ADD.2 sp[2], 1
  NEXT_ITER
L6:
  JUMP_SET L7
L7:
  RETURN
