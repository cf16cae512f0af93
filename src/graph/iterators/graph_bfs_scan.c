/* BFS's neighbour scan at the memory nodes: for one frontier vertex, visit
 * each edge target v (an iteration at the edge array), then v's parent entry
 * (an iteration at the parent array); an unvisited v (parent 0xffffffff)
 * gets the frontier vertex as its parent, stored where it lives, and is
 * reported.  Only the reported vertices travel back.  Two iterations per
 * edge; the scan ends at the vertex's last edge or when `found` is full. */
#include <pulse/iterator.h>

#include "graph_bfs_scan.h"

PULSE_END(graph_bfs_scan, struct pulse_graph_word) {
  struct pulse_graph_bfs_scan_state *st = PULSE_STATE(struct pulse_graph_bfs_scan_state);
  if (st->phase == 0) {
    st->vertex = cur_ptr->value;
    st->cursor += 4;
    st->phase = 1;
    return false;
  }
  if (cur_ptr->value == 0xffffffffu) {
    pulse_store_u32(cur_addr, (pulse_u32)st->source);
    st->found[st->count & (PULSE_GRAPH_BFS_FOUND - 1)] = (pulse_u32)st->vertex;
    st->count += 1;
  }
  st->phase = 0;
  return st->cursor >= st->end || st->count >= PULSE_GRAPH_BFS_FOUND;
}

PULSE_NEXT(graph_bfs_scan, struct pulse_graph_word) {
  struct pulse_graph_bfs_scan_state *st = PULSE_STATE(struct pulse_graph_bfs_scan_state);
  if (st->phase == 1) return PULSE_ADDR(st->parents + 4 * st->vertex);
  return PULSE_ADDR(st->cursor);
}
