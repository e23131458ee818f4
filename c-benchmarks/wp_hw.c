// HW as a whole program: a 32-byte string filled from nondet chars contains "Hello" and "World".
// apc: --function main --call reach_error  expect=reachable
extern char __VERIFIER_nondet_char(void);
extern void reach_error(void);

#define N 32

int main(void) {
  char A[N];
  for (int i = 0; i < N - 1; ++i)
    A[i] = __VERIFIER_nondet_char();
  A[N - 1] = 0;
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
  return 0;
}
