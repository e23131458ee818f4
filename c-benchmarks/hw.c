// HW: the input string contains "Hello" and "World".
// APC paper, Appendix A (after Anand et al., TACAS'08), written fresh in C.
// apc: --function hw --call reach_error  expect=reachable
extern void reach_error(void);

void hw(const char *A) {
  const char H[] = "Hello";
  const char W[] = "World";
  int h = 0;
  for (int i = 0; A[i] != 0; ++i) {
    int j = i, k = 0;
    while (H[k] != 0 && A[j] != 0 && A[j] == H[k]) { ++j; ++k; }
    if (H[k] == 0) { h = 1; break; }
    if (A[j] == 0) break;
  }
  int w = 0;
  for (int i = 0; A[i] != 0; ++i) {
    int j = i, k = 0;
    while (W[k] != 0 && A[j] != 0 && A[j] == W[k]) { ++j; ++k; }
    if (W[k] == 0) { w = 1; break; }
    if (A[j] == 0) break;
  }
  if (h == 1 && w == 1)
    reach_error();
}
