/* workloads/graph_int.h — helpers the front ends share with the graph module (not public). */
#ifndef TS_WORKLOADS_GRAPH_INT_H
#define TS_WORKLOADS_GRAPH_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "workloads/graph.h"

/* Write "<base>_<n>" into buf, choosing n so no tensor has that name yet. Returns 0. */
int ts_graph_unique_name(ts_graph *g, const char *base, char *buf, size_t n);
/* Write a tensor's shape as "[1,3,224,224]". */
void ts_graph_shape_str(const ts_graph_tensor *t, char *buf, size_t n);
/* Numpy broadcasting of shapes a and b into out (rank *ro); -1 if they do not broadcast. */
int ts_graph_broadcast(int ra, const int64_t *a, int rb, const int64_t *b, int *ro, int64_t *out);

/* graph.c: the consumers index of every tensor (cstart, cnodes); -1 when out of memory */
int ts_graph_build_consumers(ts_graph *g);
/* graph.c: rebuild the name hash with cap slots (a power of two); -1 when out of memory */
int ts_graph_rehash(ts_graph *g, size_t cap);
/* graph.c: free what a node owns (name, in, out) */
void ts_graph_free_node(ts_graph_node *n);

/* graph_rewrite.c, during finalize: the number of alive nodes reading t (*first: the first of
 * them, -1 when none) */
int ts_graph_readers(const ts_graph *g, int t, int *first);
/* graph_rewrite.c, during finalize: mark the nodes dead[0..ndead) (entries -1 skipped) dead and
 * add one node of op reading ins[0..nin) and writing y in their place */
ts_status ts_graph_replace(ts_graph *g, const int *dead, size_t ndead, ts_graph_op op, const char *name,
                           const int *ins, size_t nin, int y, const ts_graph_attrs *at, ts_err *err);
/* graph_simplify.c: the rewrites of finalize that leave the lowerings fewer forms (identity
 * Expand removed, Gather of a constant index as Slice and Reshape, layout ops of weights and
 * constants folded) */
ts_status ts_graph_simplify(ts_graph *g, ts_err *err);

/* The graph's storage, shared by graph.c (building, shape inference) and graph_rewrite.c. */
struct ts_graph {
    char *name;
    ts_graph_tensor *t; /* names and data owned (cast away const to free) */
    size_t nt, capt;
    ts_graph_node *n;   /* names, in and out owned */
    size_t nn, capn;
    bool *dead;         /* per node, during rewrites */
    size_t capdead;
    int *hash;          /* open addressing: tensor id or -1; size hcap (power of two) */
    size_t hcap;
    int uniq;           /* counter for generated names */
    int *cstart;        /* after finalize: consumers of tensor t are cnodes[cstart[t]..cstart[t+1]) */
    int *cnodes;
    ts_graph_llm llm;   /* a decoder LLM's phase and shape (TS_LLM_NONE otherwise) */
};

#endif
