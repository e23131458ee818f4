// HWM as a whole program: a 32-byte string filled from nondet chars contains "Hello", "World",
// "At" and "Microsoft!".
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
  const char T[] = "At";
  const char M[] = "Microsoft!";
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
  int t = 0;
  for (int i = 0; A[i] != 0; ++i) {
    int j = i, k = 0;
    while (T[k] != 0 && A[j] != 0 && A[j] == T[k]) { ++j; ++k; }
    if (T[k] == 0) { t = 1; break; }
    if (A[j] == 0) break;
  }
  int m = 0;
  for (int i = 0; A[i] != 0; ++i) {
    int j = i, k = 0;
    while (M[k] != 0 && A[j] != 0 && A[j] == M[k]) { ++j; ++k; }
    if (M[k] == 0) { m = 1; break; }
    if (A[j] == 0) break;
  }
  if (h == 1 && w == 1 && t == 1 && m == 1)
    reach_error();
  return 0;
}
