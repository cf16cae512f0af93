LOAD data
ALLOC r4, sp[64]
STORE [r4], data[0]
MOVE sp[0], r4
RETURN