// Listing 3 of the abstract-interpretation + DSE paper (Alatawi et al.), in C: nested loops
// whose iteration counts depend on the inputs (the listing's missing `i = i + 1` restored).
// apc: --function nested --call reach_error  expect=reachable
extern void reach_error(void);

void nested(int n, int m) {
  int i = 0, k = 0;
  int j;
  int limit = 1000;
  while (i < n) {
    j = 0;
    while (j < m) {
      k = k + 5;
      j = j + 1;
    }
    if (k >= limit)
      reach_error();
    i = i + 1;
  }
}
