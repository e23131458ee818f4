// TwoLoops (APC paper; loop-navigation paper): i is a multiple of 4 and j + 7 is odd.
// apc: --function twoloops --call reach_error  expect=unreachable
extern void reach_error(void);

void twoloops(int n) {
  int i = 0, j = 0;
  while (i < n)
    i += 4;
  while (i != j + 7)
    j += 2;
  reach_error();
}
