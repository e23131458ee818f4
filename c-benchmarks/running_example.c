// The running example of the APC paper (Strejček & Trtík, section 1), in C.
// The target is reached when A holds more than nine 1s among its first n elements.
// apc: --function foo --call reach_error  expect=reachable
extern void reach_error(void);

void foo(int *A, int n) {
  int k = 3;
  for (int i = 0; i < n; ++i) {
    if (A[i] == 1)
      ++k;
  }
  if (k > 12)
    reach_error();
}
