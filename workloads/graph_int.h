/* workloads/graph_int.h — helpers the front ends share with the graph module (not public). */
#ifndef TS_WORKLOADS_GRAPH_INT_H
#define TS_WORKLOADS_GRAPH_INT_H

#include <stddef.h>
#include <stdint.h>
#include "workloads/graph.h"

/* Write "<base>_<n>" into buf, choosing n so no tensor has that name yet. Returns 0. */
int ts_graph_unique_name(ts_graph *g, const char *base, char *buf, size_t n);
/* Write a tensor's shape as "[1,3,224,224]". */
void ts_graph_shape_str(const ts_graph_tensor *t, char *buf, size_t n);
/* Numpy broadcasting of shapes a and b into out (rank *ro); -1 if they do not broadcast. */
int ts_graph_broadcast(int ra, const int64_t *a, int rb, const int64_t *b, int *ro, int64_t *out);

#endif
