// OneLoop (APC paper; loop-navigation paper): i grows by 4 from 0, so it is never 15.
// apc: --function oneloop --call reach_error  expect=unreachable
extern void reach_error(void);

void oneloop(int n) {
  int i = 0;
  while (i < n)
    i += 4;
  if (i == 15)
    reach_error();
}
