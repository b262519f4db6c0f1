/* workloads/onnx.h — ONNX model import into the graph IR.
 *
 * Reads an ONNX ModelProto (protobuf-c, schema in workloads/onnx.proto) and builds a finalized
 * ts_graph. The rules:
 *   - a graph input is data unless it also appears in graph.initializer; in a graph stripped of
 *     weights (no initializers) the data inputs are those the caller names, by default the first
 *     graph input, and every other graph input is a weight (a shape without values);
 *   - when the caller names data inputs, exactly those are data, whatever the graph holds;
 *   - integer shape arithmetic (Shape, Gather, Unsqueeze, Squeeze, Concat, Cast, Slice, Range,
 *     ConstantOfShape, Equal, Where, Expand and the elementwise ops) on values known at import is
 *     evaluated to constants, so every shape is static; Identity and Dropout are aliases;
 *   - Squeeze and Unsqueeze of activations become Reshape; BatchNormalization after a Conv is
 *     folded into it and the decomposed LayerNorm pattern becomes one node (ts_graph_finalize);
 *   - floating-point initializers with more than one element are weights (parameters); integer
 *     and one-element initializers, and Constant nodes, are constants;
 *   - a symbolic dimension of a graph input ("batch") takes its value from opts->dims; without one
 *     the import fails, since every shape must be static;
 *   - values are kept only for tensors of at most TS_ONNX_KEEP_ELEMS elements: tessera needs
 *     shapes, and small values (shape vectors, scalars) to keep shapes static.
 * Unsupported operators fail with one error listing each op type and the first node of each.
 * A file that is not a valid ModelProto fails naming the file.
 */
#ifndef TS_WORKLOADS_ONNX_H
#define TS_WORKLOADS_ONNX_H

#include <stdbool.h>
#include <stddef.h>
#include "core/err.h"
#include "workloads/graph.h"

/* Tensors with at most this many elements keep their values in the IR. */
#define TS_ONNX_KEEP_ELEMS 4096

typedef struct ts_onnx_opts {
    const char *const *inputs; /* names of the data inputs; NULL for the default rule */
    size_t ninputs;
    const char *dims;          /* values for symbolic dimensions, "batch=1,seq=128"; may be NULL */
} ts_onnx_opts;

/* What to do with the graph once it is built, before ts_graph_finalize: give tensors values by
 * name (workloads/graph_values.h). Its error ends the import. */
typedef struct ts_onnx_hook {
    ts_status (*before_finalize)(void *ud, ts_graph *g, ts_err *err);
    void *ud;
} ts_onnx_hook;

/* True when this tessera was built with ONNX support (protobuf-c). */
bool ts_onnx_available(void);

/* Import the ONNX file at path. opts may be NULL. On success *out is a finalized graph owned by
 * the caller (ts_graph_destroy). Errors carry the file name. */
ts_status ts_onnx_load(const char *path, const ts_onnx_opts *opts, ts_graph **out, ts_err *err);

/* Same from bytes in memory; name is used in messages. The graph is named after the file's stem
 * ("resnet50" for "models/resnet50.onnx"). */
ts_status ts_onnx_load_mem(const void *data, size_t len, const char *name, const ts_onnx_opts *opts,
                           ts_graph **out, ts_err *err);

/* ts_onnx_load with a hook (may be NULL) run on the graph before it is finalized. */
ts_status ts_onnx_load_hooked(const char *path, const ts_onnx_opts *opts, const ts_onnx_hook *hook, ts_graph **out,
                              ts_err *err);

#endif
