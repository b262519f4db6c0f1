/* workloads/graph_values.h — a graph's tensors given values by name, and read out again
 * (docs/values.md).
 *
 * `tessera run --inputs FILE.npz` names graph tensors by the arrays of an archive (core/npy.h):
 * a data input, or a weight (a parameter of the model). The values go into the graph before
 * ts_graph_finalize, so the BatchNormalization fold sees them. Then every input and weight still
 * without values is given its fill values (workloads/lower/fill.h, by its id at that point), so
 * what the run computes with is fixed by the model alone, and `tessera compile --weights-out`
 * writes exactly those values: a reference (torch) loads them and computes the same function.
 *
 * Conversion to the tensor's dtype: f32 from any array as the nearest float (f64 rounds to
 * nearest even; integers are exact below 2^24); f16 through f32, then to the nearest half (even
 * on ties: a f64 value may round twice); an integer tensor (i8 ... i64, u8, bool) takes integer
 * or bool arrays, and floating arrays whose values are whole, each value in the tensor's range;
 * bf16 tensors take no values.
 */
#ifndef TS_WORKLOADS_GRAPH_VALUES_H
#define TS_WORKLOADS_GRAPH_VALUES_H

#include "core/err.h"
#include "core/npy.h"
#include "workloads/graph.h"

/* Give the tensors named by z's arrays their values, converted to each tensor's dtype. Errors
 * (TS_EINPUT, "FILE: entry 'x': ..."): no tensor of that name, a tensor that is neither an input
 * nor a weight, a shape that differs from the tensor's, a value that does not convert. When
 * require_inputs, a data input that z does not name is an error too ("FILE: no values for the
 * data input 'x'"). */
ts_status ts_graph_values_set(ts_graph *g, const ts_npz *z, const char *file, bool require_inputs, ts_err *err);

/* Give every f32 or f16 input and weight without values its fill values (ts_fill_f32 of its
 * id now, rounded to f16 for an f16 tensor), so that the values no longer depend on the ids
 * ts_graph_finalize gives. */
ts_status ts_graph_values_fill(ts_graph *g, ts_err *err);

/* The values of every input and weight that has them, as arrays named as the tensors (f32 for
 * f32 tensors, f16 for f16, and so on), appended to z (owned; ts_npz_free). */
ts_status ts_graph_values_get(const ts_graph *g, ts_npz *z, ts_err *err);

#endif
