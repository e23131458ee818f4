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
void target_4(void);
void target_5(void);
int f(int a, int b) {
  int i = 0;
  unsigned char acc1 = 100;
  unsigned char x2 = 0;
  int y3 = 0;
  int z4 = 0;
  int oa5[4] = {0};
  int ob6[2] = {0};
  int r = 0;
  i = 0;
  while (i < 10 && (!(32 <= a) || i < 3)) {
    acc1 = acc1 - (-(((unsigned)(acc1) >> ((unsigned)(acc1) & 63))));
    if (((((unsigned)(a) >> ((unsigned)(acc1) & 15)) <= -128) && ((b & i) == 65535))) {
      HIT(1) r = 5;
    }
    i = i + 1;
  }
  if ((b <= 64)) {
    HIT(2) r = 17;
  }
  i = 0;
  while (x2 < (unsigned char)(b) && i < 14) {
    if ((((b - i) & 255) >= 1)) {
      x2 = (unsigned char)(x2 + 255);
      y3 = -7;
    } else {
      x2 = (unsigned char)(x2 - 128);
      z4 = z4 + 2;
    }
    i++;
  }
  if (i == 3) {
    HIT(3) r = 17;
  }
  if (oa5 + 4 == ob6) {
    target_4();
  }
  if (ob6 + 2 == oa5) {
    target_5();
  }
  if ((((-7 & 255) == 0) || (100 == r))) {
    HIT(6) r = 5;
  } else {
    r = r + (a - a);
    HIT(7) r = 17;
  }
  return r;
}
