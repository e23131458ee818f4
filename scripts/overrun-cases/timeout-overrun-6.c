#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef HIT
#define HIT(k)
#endif
typedef struct { const unsigned char *p; size_t n; } buf;
typedef struct { int x; unsigned char c; short s; int arr[4]; } st;
extern int ext(int);
extern void ext_keep(int *);
int f(unsigned char a, unsigned char b) {
  unsigned char sb1[5] = {0};
  const unsigned char *q2 = sb1;
  int c3 = 0;
  buf bb4 = {0, 0};
  unsigned char lb5[5] = {0};
  const unsigned char *cur6 = 0;
  size_t k = 0;
  int m7 = 0;
  buf bb8 = {0, 0};
  unsigned char lb9[3] = {0};
  const unsigned char *cur10 = 0;
  int m11 = 0;
  int i = 0;
  int j = 0;
  int m212[3][3] = {{0}};
  int r = 0;
  sb1[1] = (unsigned char)(((unsigned short)(b)));
  sb1[2] = (unsigned char)((~(b)));
  sb1[4] = (unsigned char)((b >> ((unsigned)(b) & 63)));
  for (q2 = sb1; q2 != sb1 + 5; q2++) {
    if (*q2 == 17) {
      c3++;
    }
  }
  if (c3 == 2) {
    HIT(1) r = 17;
  }
  if (q2 == sb1 + 5) {
    HIT(2) r = 5;
  }
  if (q2 - sb1 == 4) {
    HIT(3) r = 23;
  }
  lb5[0] = (unsigned char)((255 / 8));
  lb5[1] = (unsigned char)((a + b));
  lb5[2] = (unsigned char)(b);
  lb5[3] = (unsigned char)((a + a));
  lb5[4] = (unsigned char)((a << ((unsigned)(c3) & 63)));
  bb4.p = lb5;
  bb4.n = 5;
  cur6 = (((a + -128) == -1) || ((b >> ((unsigned)(c3) & 31)) <= 12)) ? bb4.p : lb5;
  if (*cur6 > 33) {
    HIT(4) r = 23;
  }
  if (m7 > 1) {
    HIT(5) r = 17;
  }
  lb9[0] = (unsigned char)((m7 & a));
  lb9[1] = (unsigned char)((-(16)));
  lb9[2] = (unsigned char)(((((b & 3) == 5) && (a <= 42)) ? 100 : c3));
  bb8.p = lb9;
  bb8.n = (size_t)((b) & 1);
  for (k = 0; k < bb8.n; k++) {
    cur10 = bb8.p + k;
    if (*cur10 == 127) {
      m11 = m11 + 1;
    }
  }
  if (cur10 != 0 && *cur10 == 0) {
    HIT(6) r = 17;
  }
  if (m11 == 0) {
    HIT(7) r = 17;
  }
  for (i = 0; i < 3; i++) {
    for (j = 0; j < 3; j++) {
      m212[i][j] = i;
    }
  }
  if (m212[1][(unsigned char)(m11) % 3] > 63) {
    HIT(8) r = 42;
  }
  return r;
}
