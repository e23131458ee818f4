// WinDriver (APC paper, Appendix A; from Godefroid et al., ISSTA'09), written fresh in C.
// A packet stream in `buffer` is copied into a 2-D array; the target is the failed consistency
// check after the copy loops.
// apc: --function windriver --call reach_error  expect=reachable
extern void reach_error(void);

#define MAXP 8
#define MAXS 32

void windriver(int *buffer, int max_packet, int packet_size) {
  int multi_array[MAXP][MAXS];
  if (max_packet <= 0 || max_packet > MAXP || packet_size <= 0 || packet_size > MAXS - 1)
    return;
  for (int i = 0; i < max_packet; ++i)
    for (int j = 0; j < packet_size; j++)
      multi_array[i][j] = 0;
  int number_of_packets = buffer[0];
  if (number_of_packets > max_packet || number_of_packets < 0)
    return;
  for (int i = 0; i < number_of_packets; i++) {
    int packet_id = buffer[(i * (packet_size + 1)) + 1];
    if (packet_id >= max_packet || packet_id < 0)
      return;
    for (int j = 0; j < packet_size; j++)
      multi_array[packet_id][j] = buffer[(i * (packet_size + 1)) + j + 2];
  }
  if (number_of_packets < max_packet && multi_array[number_of_packets][0] != 0 && packet_size > 20)
    reach_error();
}
