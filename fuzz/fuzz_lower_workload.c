/* fuzz/fuzz_lower_workload.c — libFuzzer target for the lowerings, fed by YAML workloads.
 *
 * The input is split at the first NUL byte, as in fuzz_workload.c: before it a workload file,
 * after it parameter overrides ("m=4,dtype=f16"); its last byte picks the IPU's planner. A
 * workload that builds under the small limits of lower_common.h is lowered for ipu_tiny4,
 * tsp_small and wse_4x4, and each program that compiles runs for at most 200,000 cycles. Errors
 * are fine; a crash, a hang, a leak, undefined behaviour or an internal error is not.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "fuzz/lower_common.h"
#include "fuzz/split.h"
#include "workloads/workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const planners[] = {"lcs", "t10", "split", "auto"};
    ts_fuzz_lower_init();
    size_t ylen;
    char *params;
    if (!ts_fuzz_split(data, size, &ylen, &params))
        return 0;
    ts_err err;
    ts_err_init(&err);
    ts_graph *g = NULL;
    if (ts_wl_load_text((const char *)data, ylen, "fuzz.yaml", params, &g, &err) == TS_OK) {
        ts_fuzz_lower_all(g, planners[size ? data[size - 1] & 3 : 0]);
        ts_graph_destroy(g);
    }
    ts_err_free(&err);
    free(params);
    return 0;
}
