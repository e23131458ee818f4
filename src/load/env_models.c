/* Models of C library functions, linked into the analysed copy of a program that declares them
 * (replay always runs the real library). Each returns what glibc returns on x86-64 (checked
 * natively), except the comparisons' magnitude: glibc promises only their sign, and its
 * implementations differ by CPU (byte difference or ±1), so they return `__apc_sign_of(d)`, an
 * unknown with the sign of the byte difference d (see comparisons.rs).
 * Written with indices rather than moving pointers so that loop summaries see plain counters. */
typedef unsigned long apc_size_t;

int __apc_sign_of(int d);

int strcmp(const char *a, const char *b) {
  const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
  apc_size_t i = 0;
  while (p[i] != 0 && p[i] == q[i])
    i++;
  return __apc_sign_of((int)p[i] - (int)q[i]);
}

int strncmp(const char *a, const char *b, apc_size_t n) {
  const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
  apc_size_t i = 0;
  while (i < n && p[i] != 0 && p[i] == q[i])
    i++;
  if (i == n)
    return 0;
  return __apc_sign_of((int)p[i] - (int)q[i]);
}

int memcmp(const void *a, const void *b, apc_size_t n) {
  const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
  apc_size_t i = 0;
  while (i < n && p[i] == q[i])
    i++;
  if (i == n)
    return 0;
  return __apc_sign_of((int)p[i] - (int)q[i]);
}

apc_size_t strlen(const char *s) {
  apc_size_t n = 0;
  while (s[n] != 0)
    n++;
  return n;
}

/* The C locale's white space, and the digit value of a byte in bases up to 36 (36 for none).
 * Macros, not functions, so that a model needs no helper the linking step could leave out; and
 * without branches (`|` on comparisons, masks instead of `?:`), so that each test is one block
 * and a loop over them has one iteration path for the summaries (and the DSE) to follow. */
#define APC_ISSPACE(c) (((c) == ' ') | ((unsigned)((c) - '\t') < 5u))
/* `c | 0x20` is a lower-case letter exactly when c is a letter. */
#define APC_DIGIT(c)                                                                                  \
  ((((unsigned)(c) - '0') & -(unsigned)((unsigned)((c) - '0') < 10u)) |                               \
   (((unsigned)((c) | 0x20) - 'a' + 10u) & -(unsigned)((unsigned)(((c) | 0x20) - 'a') < 26u)) |        \
   (36u & -(unsigned)(((unsigned)((c) - '0') >= 10u) & ((unsigned)(((c) | 0x20) - 'a') >= 26u))))

char *strchr(const char *s, int c) {
  const unsigned char *p = (const unsigned char *)s;
  unsigned char ch = (unsigned char)c;
  apc_size_t i = 0;
  while ((p[i] != ch) & (p[i] != 0))
    i++;
  return p[i] == ch ? (char *)(s + i) : (char *)0;
}

/* glibc 2.36's strtol/strtoul in the C locale: white space, a sign, a `0x`/`0X` prefix (bases 0
 * and 16, only when a hex digit follows; base 0 with a leading 0 is octal), digits; out of range
 * gives LONG_MAX/LONG_MIN (ULONG_MAX); no digits gives 0 with *endptr = nptr; a base outside 0,
 * 2..36 gives 0 and leaves *endptr alone. errno is not set (a program's errno reads go through
 * `__errno_location`, unknown to the analysis). */
#define APC_STRTO(NAME, RESULT, SIGNED)                                                               \
  RESULT NAME(const char *nptr, char **endptr, int base) {                                           \
    const unsigned char *s = (const unsigned char *)nptr;                                            \
    apc_size_t i = 0;                                                                                \
    unsigned long neg = 0, over = 0, d, b;                                                           \
    if (base < 0 || base == 1 || base > 36)                                                          \
      return 0; /* *endptr untouched */                                                              \
    while (APC_ISSPACE(s[i]))                                                                        \
      i++;                                                                                           \
    if (s[i] == '-') {                                                                               \
      neg = 1;                                                                                       \
      i++;                                                                                           \
    } else if (s[i] == '+')                                                                          \
      i++;                                                                                           \
    if ((base == 0 || base == 16) && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X') &&          \
        APC_DIGIT(s[i + 2]) < 16) {                                                                  \
      i += 2;                                                                                        \
      base = 16;                                                                                     \
    } else if (base == 0)                                                                            \
      base = s[i] == '0' ? 8 : 10;                                                                   \
    b = (unsigned long)base;                                                                         \
    apc_size_t start = i;                                                                            \
    unsigned long acc = 0;                                                                           \
    /* glibc's cut-off: acc * b + d passes the limit exactly when acc > cutoff, or acc == cutoff \
       and d > cutlim; computed once (the divisions fold when the base is a constant). */          \
    unsigned long lim0 = SIGNED ? 0x7ffffffffffffffful : ~0ul, lim1 = SIGNED ? 0x8000000000000000ul : ~0ul; \
    unsigned long cutoff = ((lim1 / b) & -neg) | ((lim0 / b) & (neg - 1));                           \
    unsigned long cutlim = ((lim1 % b) & -neg) | ((lim0 % b) & (neg - 1));                           \
    while ((d = APC_DIGIT(s[i])) < b) {                                                              \
      over |= (acc > cutoff) | ((acc == cutoff) & (d > cutlim));                                     \
      acc = (acc & -over) | ((acc * b + d) & (over - 1));                                            \
      i++;                                                                                           \
    }                                                                                                \
    if (i == start) {                                                                                \
      if (endptr)                                                                                    \
        *endptr = (char *)nptr;                                                                      \
      return 0;                                                                                      \
    }                                                                                                \
    if (endptr)                                                                                      \
      *endptr = (char *)(nptr + i);                                                                  \
    if (over)                                                                                        \
      return (RESULT)(SIGNED ? 0x7ffffffffffffffful + neg : ~0ul);                                   \
    return (RESULT)(neg ? 0ul - acc : acc);                                                          \
  }

APC_STRTO(strtol, long, 1)
APC_STRTO(strtoll, long long, 1)
APC_STRTO(strtoul, unsigned long, 0)
APC_STRTO(strtoull, unsigned long long, 0)

int atoi(const char *s) { return (int)strtol(s, (char **)0, 10); }
long atol(const char *s) { return strtol(s, (char **)0, 10); }
long long atoll(const char *s) { return strtoll(s, (char **)0, 10); }
