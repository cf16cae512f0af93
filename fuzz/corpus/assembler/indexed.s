  LOAD data, 32
  MOVE r1, data[8]
  AND r1, 24
  MOVE sp[0], data[r1]
  ADD sp[r1+8], 3
  RETURN
