/* workloads/graph.h — the compiler's graph IR: tensors with static shapes, operators, totals.
 *
 * A graph is a set of tensors (dense ids from 0) and nodes (dense ids from 0). Every tensor has a
 * dtype and a static shape; its kind says where its values come from: a data input fed at run
 * time, a weight (a parameter of the model, values usually not carried), a constant whose values
 * the graph carries (shape vectors, scalars), or an activation produced by a node. Front ends (the
 * ONNX importer, the built-in workloads) build a graph with the ts_graph_add_* calls, then call
 * ts_graph_finalize, which folds BatchNormalization into the Conv before it, recognises the
 * decomposed LayerNorm, GELU and HardSwish patterns, simplifies layout forms, removes dead nodes,
 * orders nodes topologically and infers every shape. After that the graph is read-only for the lowerings: walk ts_graph_node_count nodes in
 * order with ts_graph_get_node and look tensors up with ts_graph_get_tensor.
 *
 * Shapes are static: the IR has no symbolic dimensions. Integer shape arithmetic found in exported
 * models (Shape, Gather of a shape, Concat, Unsqueeze, ...) is folded to constants on import.
 */
#ifndef TS_WORKLOADS_GRAPH_H
#define TS_WORKLOADS_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/err.h"

/* Largest tensor rank the IR represents. */
#define TS_GRAPH_MAX_RANK 8

/* Element types. */
typedef enum ts_dtype {
    TS_DT_UNDEF = 0,
    TS_DT_F32,
    TS_DT_F16,
    TS_DT_BF16,
    TS_DT_F64,
    TS_DT_I8,
    TS_DT_U8,
    TS_DT_I16,
    TS_DT_I32,
    TS_DT_I64,
    TS_DT_BOOL,
    TS_DT_COUNT
} ts_dtype;

/* Bytes per element (0 for TS_DT_UNDEF). */
size_t ts_dtype_size(ts_dtype dt);
/* Short name: "f32", "f16", "bf16", "f64", "i8", "u8", "i16", "i32", "i64", "bool". */
const char *ts_dtype_name(ts_dtype dt);
/* Parse a short name (also "fp32", "float32", "fp16", "float16", "int8", "int32", "int64");
 * 0 on success, -1 if unknown. */
int ts_dtype_parse(const char *s, ts_dtype *out);
/* True for f32, f16, bf16 and f64. */
bool ts_dtype_is_float(ts_dtype dt);

/* The operators of the IR: enum suffix and the ONNX op type it corresponds to. */
#define TS_GRAPH_OPS(X)                                                                        \
    X(CONV, "Conv")                                                                            \
    X(GEMM, "Gemm")                                                                            \
    X(MATMUL, "MatMul")                                                                        \
    X(ADD, "Add")                                                                              \
    X(SUB, "Sub")                                                                              \
    X(MUL, "Mul")                                                                              \
    X(DIV, "Div")                                                                              \
    X(POW, "Pow")                                                                              \
    X(SQRT, "Sqrt")                                                                            \
    X(RELU, "Relu")                                                                            \
    X(CLIP, "Clip")                                                                            \
    X(HARDSWISH, "HardSwish")                                                                  \
    X(SIGMOID, "Sigmoid")                                                                      \
    X(TANH, "Tanh")                                                                            \
    X(ERF, "Erf")                                                                              \
    X(GELU, "Gelu")                                                                            \
    X(MAXPOOL, "MaxPool")                                                                      \
    X(AVGPOOL, "AveragePool")                                                                  \
    X(GLOBALAVGPOOL, "GlobalAveragePool")                                                      \
    X(SOFTMAX, "Softmax")                                                                      \
    X(REDUCEMEAN, "ReduceMean")                                                                \
    X(RESHAPE, "Reshape")                                                                      \
    X(TRANSPOSE, "Transpose")                                                                  \
    X(FLATTEN, "Flatten")                                                                      \
    X(CONCAT, "Concat")                                                                        \
    X(SLICE, "Slice")                                                                          \
    X(GATHER, "Gather")                                                                        \
    X(EXPAND, "Expand")                                                                        \
    X(CAST, "Cast")                                                                            \
    X(BATCHNORM, "BatchNormalization")                                                         \
    X(LAYERNORM, "LayerNormalization")                                                         \
    X(RMSNORM, "RMSNormalization")

typedef enum ts_graph_op {
#define TS_GRAPH_OP_ENUM(e, n) TS_OP_##e,
    TS_GRAPH_OPS(TS_GRAPH_OP_ENUM)
#undef TS_GRAPH_OP_ENUM
    TS_OP_COUNT
} ts_graph_op;

/* ONNX-style name of an op ("Conv"); "?" when out of range. */
const char *ts_graph_op_name(ts_graph_op op);
/* Op by its ONNX-style name; 0 on success, -1 if the IR has no such op. */
int ts_graph_op_parse(const char *name, ts_graph_op *out);

/* Where a tensor's values come from. */
typedef enum ts_tensor_kind {
    TS_TENSOR_ACTIVATION = 0, /* produced by a node */
    TS_TENSOR_INPUT,          /* a data input of the graph, fed at run time */
    TS_TENSOR_WEIGHT,         /* a parameter: shape always, values only when small */
    TS_TENSOR_CONST,          /* a constant with values (shape vectors, scalars); not a parameter */
} ts_tensor_kind;

/* Name of a kind: "activation", "input", "weight", "const". */
const char *ts_tensor_kind_name(ts_tensor_kind k);

/* A tensor as the graph holds it. Every pointer is owned by the graph. */
typedef struct ts_graph_tensor {
    const char *name;
    ts_tensor_kind kind;
    ts_dtype dtype;
    int rank;                          /* -1 until shape inference has run */
    int64_t dims[TS_GRAPH_MAX_RANK];   /* dims[0..rank) */
    const void *data;                  /* values in host order, NULL when not carried */
    int producer;                      /* node id, -1 for inputs, weights and constants */
    bool is_output;                    /* a graph output */
} ts_graph_tensor;

/* Attributes of a node. Only the fields of its op are meaningful; ts_graph_attrs_init sets the
 * ONNX defaults for every field. Spatial ops are 2-D: index 0 is height, 1 is width. */
typedef struct ts_graph_attrs {
    /* Conv, MaxPool, AveragePool */
    int64_t kernel[2];     /* pool window; for Conv taken from the weight when 0 */
    int64_t strides[2];
    int64_t pads[4];       /* top, left, bottom, right */
    int64_t dilations[2];
    int64_t group;         /* Conv */
    bool ceil_mode;        /* pools */
    bool count_include_pad; /* AveragePool */
    /* Gemm */
    double alpha, beta;
    bool trans_a, trans_b;
    /* Softmax, Concat, Gather, Flatten, LayerNormalization (may be negative until inference) */
    int64_t axis;
    /* Transpose: perm[0..nperm); nperm 0 means reverse the axes */
    int64_t perm[TS_GRAPH_MAX_RANK];
    int nperm;
    /* ReduceMean: axes[0..naxes); naxes 0 means all axes */
    int64_t axes[TS_GRAPH_MAX_RANK];
    int naxes;
    bool keepdims;
    /* Reshape and Expand: target shape[0..nshape), already resolved (no 0 or -1 left for
     * Reshape after import; Expand broadcasts the input against it) */
    int64_t shape[TS_GRAPH_MAX_RANK];
    int nshape;
    /* Slice: per axis of the input, start, end and step, already clamped (end exclusive) */
    int64_t starts[TS_GRAPH_MAX_RANK], ends[TS_GRAPH_MAX_RANK], steps[TS_GRAPH_MAX_RANK];
    int nslice;            /* = input rank once set; 0 means "whole tensor" */
    /* LayerNormalization, BatchNormalization */
    double epsilon;
    /* Clip */
    double min, max;
    /* Gelu: false for the erf form, true for the tanh approximation */
    bool approximate_tanh;
    /* Cast: the target dtype */
    ts_dtype to;
} ts_graph_attrs;

/* Fill a with the ONNX defaults (strides and dilations 1, group 1, alpha and beta 1, axis per op
 * left 0 except Softmax -1 set by the front end, keepdims true, epsilon 1e-5, min/max ±inf). */
void ts_graph_attrs_init(ts_graph_attrs *a);

/* A node as the graph holds it. Every pointer is owned by the graph. Absent optional inputs
 * (a Conv without bias) are left out, so nin counts the inputs present. */
typedef struct ts_graph_node {
    ts_graph_op op;
    const char *name;
    const int *in;   /* tensor ids */
    size_t nin;
    const int *out;  /* tensor ids */
    size_t nout;
    ts_graph_attrs attrs;
} ts_graph_node;

/* Inputs each op takes once built (the importer turns ONNX input tensors such as a Reshape's
 * shape into attributes):
 *   Conv        X, W[M, C/group, kh, kw], optional B[M]
 *   Gemm        A, B, optional C (broadcast to the output)
 *   MatMul      A, B (numpy batched matmul, 1-D operands promoted)
 *   Add..Pow    A, B (numpy broadcasting)
 *   BatchNorm   X, scale, bias, mean, var
 *   LayerNorm   X, optional scale, optional bias (normalises over axis..rank-1)
 *   Gather      data, indices
 *   Concat      one or more
 *   others      exactly one
 */

typedef struct ts_graph ts_graph; /* opaque */

/* Create an empty graph named name (copied). NULL if memory runs out. */
ts_graph *ts_graph_create(const char *name);
/* Free a graph and everything in it. NULL is a no-op. */
void ts_graph_destroy(ts_graph *g);
/* The graph's name. */
const char *ts_graph_name(const ts_graph *g);

/* What a decoder language model's run stands for, so that reports can give tokens per second
 * (decode: one token per sequence of the batch) or the time to the first token (prefill of seq
 * tokens). phase TS_LLM_NONE: the graph is no such model. */
typedef enum { TS_LLM_NONE, TS_LLM_PREFILL, TS_LLM_DECODE } ts_llm_phase;
typedef struct ts_graph_llm {
    ts_llm_phase phase;
    int64_t batch, seq, layers;
} ts_graph_llm;
void ts_graph_set_llm(ts_graph *g, const ts_graph_llm *llm);
const ts_graph_llm *ts_graph_llm_of(const ts_graph *g);

/* Add a tensor. rank may be -1 for an activation whose shape inference will fill in. The name must
 * be unique in the graph. *id receives the new tensor's id. */
ts_status ts_graph_add_tensor(ts_graph *g, const char *name, ts_tensor_kind kind, ts_dtype dtype,
                              int rank, const int64_t *dims, int *id, ts_err *err);
/* Give a tensor values: nbytes must be elements * ts_dtype_size; the bytes are copied. */
ts_status ts_graph_set_data(ts_graph *g, int id, const void *data, size_t nbytes, ts_err *err);
/* Change a tensor's kind (the ONNX importer decides data input versus weight late). */
void ts_graph_set_kind(ts_graph *g, int id, ts_tensor_kind kind);
/* Mark a tensor as a graph output. */
void ts_graph_mark_output(ts_graph *g, int id);
/* Add a node whose inputs and outputs are existing tensor ids; attrs may be NULL for defaults.
 * An output tensor must not already have a producer. *id (may be NULL) receives the node id. */
ts_status ts_graph_add_node(ts_graph *g, ts_graph_op op, const char *name, const int *in, size_t nin,
                            const int *out, size_t nout, const ts_graph_attrs *attrs, int *id,
                            ts_err *err);
/* Infer the output shapes and dtypes of one node from its inputs, which must already have
 * shapes. Errors name the node: "node 'conv1' (Conv): ...". */
ts_status ts_graph_infer_node(ts_graph *g, int node, ts_err *err);

/* Make the graph ready for the lowerings, in this order:
 *   - fold each BatchNormalization whose input comes from a Conv used only by it into that Conv:
 *     the Conv gains a bias; when every value is carried (f32) and the weight and bias are that
 *     Conv's alone, the values are folded too (s = scale/sqrt(var+eps), W' = W*s,
 *     b' = (b-mean)*s + shift), otherwise the Conv's values are dropped;
 *   - replace each decomposed LayerNorm (ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div,
 *     optional Mul scale and Add bias, over the last axis) by one LayerNormalization node;
 *   - replace each GELU written with erf (Div by sqrt 2 or Mul by 1/sqrt 2, Erf, Add 1, Mul by the
 *     input, Mul 0.5) by one Gelu node;
 *   - replace each HardSwish written out (x * HardSigmoid(x) with alpha 1/6 and beta 0.5, which
 *     the importer brings as Mul, Add, Clip 0..1; or x * Clip(x + 3, 0, 6) / 6 in either order of
 *     the Mul and the Div) by one HardSwish node;
 *   - leave the lowerings fewer forms: an Expand to its input's own shape is removed (its readers
 *     read the input); a Gather of one constant index from an activation or data input becomes a
 *     Slice of one element on the axis, then a Reshape dropping the axis for a scalar index; a
 *     layout op (Transpose, Reshape, Flatten, Slice, Expand of a constant) of a weight or constant
 *     with values is folded into a weight or constant of the output's shape with the values
 *     rearranged, and a Transpose, Reshape or Flatten of a weight without values becomes a weight
 *     of the output's shape without values (a weight only when the op is its one reader);
 *   - remove the nodes no graph output depends on, and the tensors nothing uses;
 *   - order the nodes topologically (stable: ties keep insertion order) and infer every shape.
 * A graph without marked outputs takes the tensors no node reads as its outputs. Fails on a cycle,
 * a tensor without a shape that no node produces, or a shape that does not fit its op. */
ts_status ts_graph_finalize(ts_graph *g, ts_err *err);

/* Read access. Ids are dense: tensors 0..ts_graph_tensor_count-1, nodes likewise; after
 * ts_graph_finalize the node ids are in topological order. */
size_t ts_graph_tensor_count(const ts_graph *g);
size_t ts_graph_node_count(const ts_graph *g);
const ts_graph_tensor *ts_graph_get_tensor(const ts_graph *g, int id);
const ts_graph_node *ts_graph_get_node(const ts_graph *g, int id);
/* Tensor id by name, -1 if none. O(1) average (hash table). */
int ts_graph_find(const ts_graph *g, const char *name);
/* The nodes that read a tensor, in ascending (topological) order, each once; *n gets the count.
 * Available after ts_graph_finalize (NULL and 0 before, or after the graph is changed again). */
const int *ts_graph_consumers(const ts_graph *g, int tensor, size_t *n);
/* Elements of a tensor (product of dims; 1 for rank 0; 0 when the shape is unknown). */
int64_t ts_graph_tensor_elems(const ts_graph_tensor *t);
/* An operator's axis of a tensor of rank `rank`: a negative one counted from the end (axis + rank),
 * others as they are (not checked against the rank). */
int64_t ts_graph_norm_axis(int64_t axis, int rank);

/* Multiply-accumulates of one node, from static shapes: Conv N*M*Ho*Wo*(C/group)*kh*kw, Gemm
 * M*N*K, MatMul batch*M*N*K; 0 for every other op. */
uint64_t ts_graph_node_macs(const ts_graph *g, int node);

/* Totals of a finalized graph. */
typedef struct ts_graph_totals {
    uint64_t nodes;                     /* nodes in the graph */
    uint64_t nodes_by_op[TS_OP_COUNT];  /* how many of each op */
    uint64_t macs;                      /* sum of ts_graph_node_macs */
    uint64_t params;                    /* elements of all weight tensors */
    uint64_t param_bytes;               /* bytes of all weight tensors */
    uint64_t activation_bytes;          /* bytes of all data inputs and node outputs */
    uint64_t input_bytes;               /* bytes of the data inputs */
    uint64_t output_bytes;              /* bytes of the graph outputs */
} ts_graph_totals;

/* Compute the totals. Tensors no node uses are not counted. */
void ts_graph_get_totals(const ts_graph *g, ts_graph_totals *out);

#endif
