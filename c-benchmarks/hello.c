// Hello: the input string contains "Hello".
// APC paper, Appendix A (after Anand et al., TACAS'08), written fresh in C.
// apc: --function hello --call reach_error  expect=reachable
extern void reach_error(void);

void hello(const char *A) {
  const char H[] = "Hello";
  int h = 0;
  for (int i = 0; A[i] != 0; ++i) {
    int j = i, k = 0;
    while (H[k] != 0 && A[j] != 0 && A[j] == H[k]) { ++j; ++k; }
    if (H[k] == 0) { h = 1; break; }
    if (A[j] == 0) break;
  }
  if (h == 1)
    reach_error();
}
