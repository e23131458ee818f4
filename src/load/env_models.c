/* Models of C library functions, linked into the analysed copy of a program that declares them
 * (replay always runs the real library). Each returns what glibc returns on x86-64: comparisons
 * give the difference of the first differing bytes as unsigned char (checked natively).
 * Written with indices rather than moving pointers so that loop summaries see plain counters. */
typedef unsigned long apc_size_t;

int strcmp(const char *a, const char *b) {
  const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
  apc_size_t i = 0;
  while (p[i] != 0 && p[i] == q[i])
    i++;
  return (int)p[i] - (int)q[i];
}

int strncmp(const char *a, const char *b, apc_size_t n) {
  const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
  apc_size_t i = 0;
  while (i < n && p[i] != 0 && p[i] == q[i])
    i++;
  if (i == n)
    return 0;
  return (int)p[i] - (int)q[i];
}

int memcmp(const void *a, const void *b, apc_size_t n) {
  const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
  apc_size_t i = 0;
  while (i < n && p[i] == q[i])
    i++;
  if (i == n)
    return 0;
  return (int)p[i] - (int)q[i];
}

apc_size_t strlen(const char *s) {
  apc_size_t n = 0;
  while (s[n] != 0)
    n++;
  return n;
}
