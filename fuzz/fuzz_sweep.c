/* fuzz/fuzz_sweep.c — libFuzzer target for sweep specs (core/sweep.c).
 *
 * The input is loaded as a sweep spec against the registered families and built-in configs
 * (`config: ipu_tiny4` reaches a real schema). A spec that loads has every point's overrides
 * and CSV row formatted; the same bytes are also read as a JSON report (metric look-up) and a
 * CSV line. Nothing may crash or leak, and a CSV row must split back into its columns. A spec
 * may expand to at most 10,000 points (core/limit.h; the CLI's default is a million, which takes
 * the instrumented build seconds to list).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arch/registry.h"
#include "configs/builtin.h"
#include "core/buf.h"
#include "core/limit.h"
#include "core/sweep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ts_limit_set(TS_LIMIT_SWEEP_POINTS, 10000);
    const char *text = (const char *)data;
    ts_config_opts o = {ts_registry_schema, ts_builtin_find, NULL, 0};
    ts_sweep *s = NULL;
    ts_err err;
    ts_err_init(&err);
    ts_buf b = TS_BUF_INIT, f = TS_BUF_INIT;
    if (ts_sweep_load_string(&s, "fuzz.yaml", "", text, size, &o, &err) == TS_OK) {
        size_t na = ts_sweep_naxes(s), nm = ts_sweep_nmetrics(s);
        size_t *off = malloc((na + 1) * sizeof *off);
        for (size_t i = 0; i < ts_sweep_npoints(s) && i < 64 && off; i++) {
            ts_sweep_point_sets(s, i, &b, off);
            ts_buf_reset(&b);
            ts_sweep_csv_row(s, i, "{\"cycles\": 1, \"energy\": {\"total_j\": 2}}", NULL, &b);
            long n = ts_csv_split(b.data, b.len - 1, &f);
            if (!b.oom && !f.oom && n != (long)(na + nm + 3))
                abort(); /* point, workload, axes, metrics, error */
            ts_buf_reset(&b);
        }
        free(off);
        ts_sweep_destroy(s);
    }
    ts_err_free(&err);
    ts_json_lookup(text, size, "stats.a.b", &b);
    ts_json_lookup(text, size, "energy.total_j", &b);
    ts_json_compact(text, size, &b);
    ts_csv_split(text, size, &f);
    ts_buf_free(&b);
    ts_buf_free(&f);
    return 0;
}
