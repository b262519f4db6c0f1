/* fuzz/fuzz_onnx.c — libFuzzer target for the ONNX importer (workloads/onnx.c).
 *
 * The input is imported as an ONNX model from memory. Inputs whose first byte is odd also name
 * the data inputs ("input", "x"), to reach the other branch of the data-input rule, and bind the
 * symbolic dimensions "batch" and "seq". A model that
 * imports is rendered as a text and a JSON summary, which walks every tensor and node. Nothing
 * may crash or leak.
 */
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "workloads/graph.h"
#include "workloads/info.h"
#include "workloads/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = {"input", "x"};
    ts_onnx_opts opts = {names, 2, "batch=1,seq=8"};
    ts_err err;
    ts_err_init(&err);
    ts_graph *g = NULL;
    if (ts_onnx_load_mem(data, size, "fuzz.onnx", size && (data[0] & 1) ? &opts : NULL, &g, &err) == TS_OK) {
        ts_buf b = TS_BUF_INIT;
        ts_wl_info_render(g, false, &b);
        ts_wl_info_render(g, true, &b);
        ts_wl_graph_dump(g, &b);
        ts_buf_free(&b);
        ts_graph_destroy(g);
    }
    ts_err_free(&err);
    return 0;
}
