.equ LIMIT 0x10400
LOAD data, 16
COMPARE data[0], LIMIT
JUMP_GEU out
MOVE cur_ptr, data[0]
ADD.2 sp[2], 1
NEXT_ITER
out: JUMP_SET done
done: RETURN