int parse_num(const char *s, int len);
