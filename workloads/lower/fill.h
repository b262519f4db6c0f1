/* workloads/lower/fill.h — the values a lowering gives the inputs and weights of a graph: a
 * tensor's own data when the graph carries it, otherwise deterministic functions of the tensor id
 * and the element index, one per number format, shared by every family that computes in that
 * format (f32 and f16 on the IPU and the wafer mesh, int8 with int32 biases on the TSP), so the
 * same model gets the same values. */
#ifndef TS_WORKLOADS_LOWER_FILL_H
#define TS_WORKLOADS_LOWER_FILL_H

#include <stdint.h>

#include "workloads/graph.h"

/* Element i of tensor `tensor` as a float in [-1, 1): k / 2^23 - 1, exact in f32 (splitmix64's
 * finaliser of the tensor and index). */
float ts_fill_f32(int tensor, uint64_t i);
/* Element i as an int8 in [-16, 16), and an int32 bias in [-256, 256) (murmur3's finaliser of the
 * tensor, index and a salt per kind). */
int8_t ts_fill_i8(int tensor, uint64_t i);
int32_t ts_fill_bias(int tensor, uint64_t i);

/* Element i of tensor t (graph id `id`) as the f32 a float lowering computes with: for an f16
 * tensor its half widened, or ts_fill_f32 rounded to f16 when it carries no data; for any other
 * its data read as f32 words, or ts_fill_f32. i must be below the tensor's elements. */
float ts_fill_value_f32(const ts_graph_tensor *t, int id, uint64_t i);
/* Element i of tensor t as int8: its data when the graph carries int8 values, else ts_fill_i8. */
int8_t ts_fill_value_i8(const ts_graph_tensor *t, int id, uint64_t i);

#endif
