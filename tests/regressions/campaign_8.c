#ifndef HIT
#define HIT(k)
#endif
extern int ext(int);
int f(signed char a, unsigned char b) {
  int i = 0;
  int e1 = 0;
  int r = 0;
  while (ext(e1) <= 1 && i < 3) {
    i++;
  }
  if (i == 1) {
    HIT(1) r = 5;
  }
  return r;
}
