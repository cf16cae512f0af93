/* The state of graph_bfs_scan (graph_bfs_scan.c): one frontier vertex's
 * neighbour scan run at the memory nodes for the offloaded BFS
 * (pulse/graph/offloaded_bfs.h).  Shared by the C iterator and the C++
 * driver. */
#ifndef PULSE_SRC_GRAPH_ITERATORS_GRAPH_BFS_SCAN_H_
#define PULSE_SRC_GRAPH_ITERATORS_GRAPH_BFS_SCAN_H_

#include <pulse/far_ptr.h>

/* Vertices one traversal reports at most; a scan that finds more returns
 * early and is resumed from its cursor.  The whole array travels with every
 * request and answer (the scratch pad), and most scans of a power-law graph
 * report a vertex or two, so it is small. */
#define PULSE_GRAPH_BFS_FOUND 32

/* Both arrays hold 32-bit words: the edge targets and the parents. */
struct pulse_graph_word {
  PULSE_U32 value;
};

struct pulse_graph_bfs_scan_state {
  PULSE_U64 source;   /* in: the frontier vertex (stored as the parent) */
  PULSE_U64 cursor;   /* in/out: far address of the next edge to scan */
  PULSE_U64 end;      /* in: far address one past the vertex's last edge */
  PULSE_U64 parents;  /* in: far address of parents[0] */
  PULSE_U64 phase;    /* 0 at an edge, 1 at the parent entry of `vertex` (in: 0) */
  PULSE_U64 vertex;   /* the neighbour being checked */
  PULSE_U64 count;    /* out: vertices in found (in: 0) */
  PULSE_U32 found[PULSE_GRAPH_BFS_FOUND]; /* out: neighbours whose parent this scan set */
};

#endif
