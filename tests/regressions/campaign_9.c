#ifndef HIT
#define HIT(k)
#endif
extern int ext(int);
int g3 = 100;
int f(const unsigned char *s, unsigned char a) {
  int e1 = 0;
  int e2 = 0;
  int r = 0;
  e1 = ext(a);
  e2 = ext(a);
  if (e1 != e2) {
    HIT(1) r = 5;
  }
  return r;
}
