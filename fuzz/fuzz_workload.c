/* fuzz/fuzz_workload.c — libFuzzer target for YAML workloads (workloads/workload.c).
 *
 * The input is split at the first NUL byte: before it, a workload file; after it, parameter
 * overrides ("m=4,dtype=f16"). Inputs without a NUL are a workload file alone, and are also tried
 * as a built-in spec when short. A workload that builds is rendered as a JSON summary. Nothing may
 * crash or leak.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/err.h"
#include "fuzz/split.h"
#include "workloads/graph.h"
#include "workloads/info.h"
#include "workloads/workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t ylen;
    char *params;
    if (!ts_fuzz_split(data, size, &ylen, &params))
        return 0;
    ts_err err;
    ts_err_init(&err);
    ts_graph *g = NULL;
    if (ts_wl_load_text((const char *)data, ylen, "fuzz.yaml", params, &g, &err) == TS_OK) {
        ts_buf b = TS_BUF_INIT;
        ts_wl_info_render(g, true, &b);
        ts_wl_graph_dump(g, &b);
        ts_buf_free(&b);
        ts_graph_destroy(g);
    }
    ts_err_free(&err);
    if (!params && size < 64) {
        char spec[64];
        memcpy(spec, data, size);
        spec[size] = 0;
        ts_err_init(&err);
        /* keep the built-ins small: only specs that set every size are tried */
        if (!strncmp(spec, "matmul:", 7) && ts_wl_builtin(spec, &g, &err) == TS_OK)
            ts_graph_destroy(g);
        ts_err_free(&err);
    }
    free(params);
    return 0;
}
