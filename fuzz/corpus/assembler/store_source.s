LOAD data
MOVE r1, data[0]
STORE [r1+8], 0xabcdef
STORE.2 [r1+16], -1
RETURN