/* workloads/info.h — the model summary behind `tessera info MODEL`.
 *
 * Renders what a graph is made of: nodes in total and per op, MACs, parameters (weight elements
 * and bytes), activation bytes (data inputs and node outputs), input and output bytes, and the
 * data inputs and outputs with their shapes. Text for people, JSON for scripts; the JSON keys are
 * "model", "nodes", "nodes_by_op" (object, op name -> count, ops in IR order), "macs", "params",
 * "param_bytes", "activation_bytes", "input_bytes", "output_bytes", "inputs" and "outputs"
 * (arrays of {"name", "dtype", "shape"}).
 */
#ifndef TS_WORKLOADS_INFO_H
#define TS_WORKLOADS_INFO_H

#include <stdbool.h>
#include "core/buf.h"
#include "core/err.h"
#include "workloads/graph.h"

/* Append the summary of a finalized graph to out, as JSON when json is true, else as text. */
void ts_wl_info_render(const ts_graph *g, bool json, ts_buf *out);

/* Append one line per node, in topological order: index, op, name, the inputs and outputs with
 * their shapes (weights and constants marked "w" and "c"), and the node's MACs when not 0:
 *   "   0 MatMul matmul: A[2x3] B[3x4]w -> C[2x4]  24 MACs" */
void ts_wl_graph_dump(const ts_graph *g, ts_buf *out);

/* `tessera info MODEL [--format json] [--inputs NAME,...] [--dims SYM=N,...]`: load the model with
 * ts_wl_load_model (an ONNX file, a workload file, or a built-in spec; inputs and dims may be NULL)
 * and render its summary into out. Errors as values; nothing is printed. */
ts_status ts_wl_info(const char *model, const char *inputs, const char *dims, bool json, ts_buf *out, ts_err *err);

#endif
