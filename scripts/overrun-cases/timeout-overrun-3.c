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
  buf bb1 = {0, 0};
  unsigned char lb2[3] = {0};
  const unsigned char *cur3 = 0;
  size_t k = 0;
  int m4 = 0;
  int i = 0;
  signed char x5 = 250;
  int y6 = 7;
  int z7 = 0;
  int r = 0;
  switch (a) {
  case 17:
    r = r + 17;
    break;
  case 100:
    r = r + 100;
  default:
    break;
  }
  lb2[0] = (unsigned char)(((signed char)(a)));
  lb2[1] = (unsigned char)((-1 | b));
  lb2[2] = (unsigned char)((b ^ b));
  bb1.p = lb2;
  bb1.n = 3;
  cur3 = bb1.p;
  while (cur3 < bb1.p + bb1.n && *cur3 != (unsigned char)31) {
    cur3++;
    m4++;
  }
  if (cur3 < bb1.p + bb1.n) {
    HIT(1) r = 23;
  }
  if (m4 == 0) {
    HIT(2) r = 17;
  }
  if ((((short)((b - m4))) == a)) {
    HIT(3) r = 17;
  }
  i = 0;
  while (x5 != (signed char)(a) && i < 30) {
    if (((i + x5) != 128)) {
      x5 = (signed char)(x5 + 255);
      y6 = -1;
    } else {
      x5 = (signed char)(x5 + 1);
      z7 = z7 + i;
    }
    i++;
  }
  if (i == 200) {
    HIT(4) r = 17;
  }
  if (i != 20 && y6 < 0) {
    HIT(5) r = 17;
  }
  if (y6 > -1 && z7 < 5) {
    HIT(6) r = 17;
  }
  return r;
}
