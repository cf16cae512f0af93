  LOAD data
  ADD sp[0], data[8]
  COMPARE data[0], 0
  JUMP_EQ L6
  MOVE cur_ptr, data[0]
  NEXT_ITER
L6:
  RETURN
