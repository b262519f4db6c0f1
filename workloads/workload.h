/* workloads/workload.h — workloads described in YAML, built in or from a file.
 *
 * A workload file declares parameters with defaults, then the graph: data inputs, weights and
 * nodes whose shapes, attributes and counts are integer expressions of the parameters
 * (+ - * / %, parentheses; / is integer division). Blocks are named groups of nodes with their own
 * parameters, instantiated by a `block:` node (ResNet's bottleneck). The format is documented in
 * docs/compiler.md; the built-ins (workloads/builtin/NAME.yaml) are embedded in the binary:
 *
 *   matmul           C[m,n] = A[m,k] x B[k,n]                  m, k, n, dtype
 *   conv2d           one convolution                          n, c, h, w, k, r, s, stride, pad, group, dtype
 *   mlp              Gemm, Relu, Gemm, Relu, Gemm               batch, in, hidden, out, dtype
 *   resnet50         torchvision ResNet-50, BN folded           batch, size, classes, dtype
 *   bert-base-layer  one BERT-base encoder layer                batch, seq, hidden, heads, ffn, dtype
 *
 * A spec selects one and sets parameters: "matmul:m=1024,k=1024,n=1024,dtype=f16". Errors name the
 * place: "file:line:col: what is wrong" for YAML, the spec for parameters ("matmul: unknown
 * parameter 'q' (parameters: m, k, n, dtype)").
 */
#ifndef TS_WORKLOADS_WORKLOAD_H
#define TS_WORKLOADS_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include "core/err.h"
#include "workloads/graph.h"

/* Build the graph of a built-in workload from a spec "name[:key=value,...]". */
ts_status ts_wl_builtin(const char *spec, ts_graph **out, ts_err *err);

/* Build the graph of a workload file; params is "key=value,..." or NULL. */
ts_status ts_wl_load_file(const char *path, const char *params, ts_graph **out, ts_err *err);

/* Same from YAML text; file names the text in messages. */
ts_status ts_wl_load_text(const char *text, size_t len, const char *file, const char *params, ts_graph **out,
                          ts_err *err);

/* Load any model the CLI accepts, as a finalized graph:
 *   "model.onnx"                 ONNX import; inputs is a comma-separated list of data input names
 *                                or NULL (see workloads/onnx.h for the rule), dims the values of
 *                                symbolic dimensions ("batch=1,seq=128") or NULL
 *   "file.yaml" or "file.yml"    a workload file, optionally with parameters: "file.yaml:n=8,m=2"
 *   anything else                a built-in spec, "matmul:m=1024,k=1024,n=1024"
 * inputs and dims must be NULL unless the model is ONNX. */
ts_status ts_wl_load_model(const char *model, const char *inputs, const char *dims, ts_graph **out, ts_err *err);

/* Whether a command-line argument names a model rather than a chip config, so `tessera info X`
 * can tell them apart: true for "*.onnx", for a built-in workload spec ("resnet50",
 * "matmul:m=64"), and for a YAML file (optionally "file.yaml:k=v") whose top level has `nodes:`
 * and no `arch:`. Reads the file for the last case; false if it cannot be read. */
bool ts_wl_is_model(const char *arg);

/* Number of built-in workloads, and the name and YAML text of the i-th. */
size_t ts_wl_builtin_count(void);
const char *ts_wl_builtin_name(size_t i);
const char *ts_wl_builtin_text(size_t i, size_t *len);

#endif
