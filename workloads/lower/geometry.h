/* workloads/lower/geometry.h — the shapes every lowering reads off a graph the same way: an
 * activation as pixels x channels, the window of a Conv or a pool (kernel, strides, dilations,
 * pads and the images on both sides), the input pixel a tap of the window reads, and the
 * rounded-up division the partitions are made of. */
#ifndef TS_WORKLOADS_LOWER_GEOMETRY_H
#define TS_WORKLOADS_LOWER_GEOMETRY_H

#include <stdbool.h>
#include <stdint.h>

#include "workloads/graph.h"

/* a / b rounded up (b > 0; a + b - 1 must not wrap). */
static inline uint64_t ts_geom_cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* Tensor t as pixels x channels: an NCHW image (rank 4) has C channels and N H W pixels; any other
 * rank has its last dimension as channels and the product of the others as pixels (a matrix
 * [M, K]: M pixels of K channels; a vector: one pixel; a scalar: one pixel of one channel). */
void ts_geom_pixels_channels(const ts_graph_tensor *t, uint64_t *pixels, uint64_t *channels);

/* The window of a Conv, MaxPool, AveragePool or GlobalAveragePool over an NCHW input. */
typedef struct ts_geom_window {
    int64_t N, C, H, W;     /* the input: batch, channels, rows, columns */
    int64_t M, Ho, Wo;      /* the output: channels (a Conv's weight's first dimension; a pool's C), rows, columns */
    int64_t kh, kw;         /* the window: a Conv's from its weight, a pool's from kernel_shape, a
                             * GlobalAveragePool's the whole image */
    int64_t sh, sw, dh, dw; /* strides and dilations (1 for a GlobalAveragePool) */
    int64_t pt, pl, pb, pr; /* pads: top, left, bottom, right (0 for a GlobalAveragePool) */
} ts_geom_window;

/* The window of node n of a finalized graph into *w; false (w untouched) when n is none of those
 * operators or its input, output (or a Conv's weight) is not 4-d. Groups and ceil_mode are the
 * node's to check (n->attrs); the output's size is the graph's shape inference. */
bool ts_geom_window_of(const ts_graph *g, const ts_graph_node *n, ts_geom_window *w);
/* The input row *iy and column *ix that tap (ky, kx) of output pixel (oy, ox) reads:
 * oy sh - pt + ky dh and ox sw - pl + kx dw; true when they lie in the image (false: in the pads). */
bool ts_geom_window_tap(const ts_geom_window *w, int64_t oy, int64_t ox, int64_t ky, int64_t kx, int64_t *iy,
                        int64_t *ix);
/* A 1x1 window of stride 1 without pads: every output pixel reads its own input pixel (the
 * dilations do not matter then). */
bool ts_geom_window_pointwise(const ts_geom_window *w);

#endif
