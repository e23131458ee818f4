// The a>17 variant of Figure 1 of the loop-navigation paper (Obdržálek & Trtík, ATVA'11), written fresh in C:
// a counts the 1s in A[0..15), b the 2s in B[0..15).
// With a > 17 the target needs more than 15 ones among 15 elements: unreachable.
// apc: --function fig1 --call reach_error  expect=unreachable
extern void reach_error(void);

void fig1(const int *A, const int *B) {
  int a = 0, b = 0;
  for (int i = 0; i < 15; ++i)
    if (A[i] == 1)
      ++a;
  for (int j = 0; j < 15; ++j)
    if (B[j] == 2)
      ++b;
  if (a > 17 && a + b == 23)
    reach_error();
}
