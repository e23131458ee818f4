// WinDriver as a whole program: the packet buffer is filled from nondet, then copied into a
// 2-D array; the target is the failed consistency check after the copy loops.
// apc: --function main --call reach_error  expect=reachable
extern int __VERIFIER_nondet_int(void);
extern void reach_error(void);

#define MAXP 8
#define MAXS 32
#define BUF (MAXP * MAXS + 1)

int main(void) {
  int buffer[BUF];
  int multi_array[MAXP][MAXS];
  for (int i = 0; i < BUF; ++i)
    buffer[i] = __VERIFIER_nondet_int();
  int max_packet = __VERIFIER_nondet_int();
  int packet_size = __VERIFIER_nondet_int();
  if (max_packet <= 0 || max_packet > MAXP || packet_size <= 0 || packet_size > MAXS - 1)
    return 0;
  for (int i = 0; i < max_packet; ++i)
    for (int j = 0; j < packet_size; j++)
      multi_array[i][j] = 0;
  int number_of_packets = buffer[0];
  if (number_of_packets > max_packet || number_of_packets < 0)
    return 0;
  for (int i = 0; i < number_of_packets; i++) {
    int packet_id = buffer[(i * (packet_size + 1)) + 1];
    if (packet_id >= max_packet || packet_id < 0)
      return 0;
    for (int j = 0; j < packet_size; j++)
      multi_array[packet_id][j] = buffer[(i * (packet_size + 1)) + j + 2];
  }
  if (number_of_packets < max_packet && multi_array[number_of_packets][0] != 0 && packet_size > 20)
    reach_error();
  return 0;
}
