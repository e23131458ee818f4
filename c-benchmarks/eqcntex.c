// EQCNTex (loop-navigation paper; described there), written fresh in C: two EQCNT-like nests in
// sequence with explicit iteration counts; together they always count all 16 cells.
// apc: --function eqcntex --call reach_error  expect=unreachable
extern void reach_error(void);

void eqcntex(const int *A) {
  int c1 = 0, c2 = 0;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      if (A[i * 4 + j] == 1)
        ++c1;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      if (A[i * 4 + j] != 1)
        ++c2;
  if (c1 + c2 != 16)
    reach_error();
}
