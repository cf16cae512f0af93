  LOAD data
  MOVE r1, data[0]
  STORE [r1+8], 11259375
  STORE.2 [r1+16], -1
  RETURN
