/* workloads/tsp/unbatch.h — a batch of independent samples read as its batch-1 graph (unbatch.c,
 * docs/lowering-tsp.md, *Batches and groups*): where no operator mixes the samples, the TSP lowering
 * compiles one sample's graph and the program runs once per sample. */
#ifndef TS_WORKLOADS_TSP_UNBATCH_H
#define TS_WORKLOADS_TSP_UNBATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "workloads/graph.h"

/* The most samples a batch is lowered one at a time for: each sample's inputs come from a compilation
 * of its own (lower_tsp.c), so a matrix of thousands of rows is not taken for a batch. */
#define LT_BATCH_MAX 64

/* The batch of a graph: its length and every tensor's batch axis. Opaque; lt_batch_free. */
typedef struct lt_batch lt_batch;

/* Find the batch of g (finalized; borrowed by *out until it is freed): *out NULL, with the reason in
 * why (cap bytes, naming the operator), when g has no batch of 2 or more samples or an operator
 * mixes them. TS_ENOMEM only on allocation failure. */
ts_status lt_batch_find(const ts_graph *g, lt_batch **out, char *why, size_t cap, ts_err *err);
void lt_batch_free(lt_batch *b); /* NULL is a no-op */
int64_t lt_batch_n(const lt_batch *b);
/* Tensor `tensor`'s batch axis (-1: it does not carry the samples); the samples are the outer
 * factor of that axis. */
int lt_batch_axis(const lt_batch *b, int tensor);
/* The samples' block on that axis: an index on it is (o N + sample) block + r, r < block (1 where the
 * axis holds the samples outermost, [N h] for torch's heads; in torch's seq-first [S N, E] rows the
 * samples are inner, a block of 1 row). */
int64_t lt_batch_block(const lt_batch *b, int tensor);

/* *out: the finalized graph of sample s (same tensor and node ids and names; every batch axis
 * divided by the batch; data inputs as int8 carrying sample s's values as the whole batch's
 * lowering gives them; with flip, every bit of them inverted: a probe whose input bytes all differ). */
ts_status lt_batch_sample(const lt_batch *b, int64_t s, bool flip, ts_graph **out, ts_err *err);

#endif
