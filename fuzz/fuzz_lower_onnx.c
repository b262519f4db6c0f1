/* fuzz/fuzz_lower_onnx.c — libFuzzer target for the lowerings, fed by the ONNX importer.
 *
 * The input is imported as an ONNX model (as in fuzz_onnx.c: an odd first byte names the data
 * inputs "input" and "x" and binds "batch" and "seq"), under the small limits of lower_common.h.
 * A model that imports is lowered for ipu_tiny4 (planner lcs, t10, split or auto, by the first byte),
 * tsp_small and wse_4x4, and each program that compiles runs for at most 200,000 cycles. Errors
 * are fine; a crash, a hang, a leak, undefined behaviour or an internal error is not.
 */
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "fuzz/lower_common.h"
#include "workloads/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = {"input", "x"};
    static const char *const planners[] = {"lcs", "t10", "split", "auto"};
    ts_fuzz_lower_init();
    ts_onnx_opts opts = {names, 2, "batch=1,seq=8"};
    ts_err err;
    ts_err_init(&err);
    ts_graph *g = NULL;
    if (ts_onnx_load_mem(data, size, "fuzz.onnx", size && (data[0] & 1) ? &opts : NULL, &g, &err) == TS_OK) {
        ts_fuzz_lower_all(g, planners[size ? (data[0] >> 1) & 3 : 0]);
        ts_graph_destroy(g);
    }
    ts_err_free(&err);
    return 0;
}
