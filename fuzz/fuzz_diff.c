/* fuzz/fuzz_diff.c — libFuzzer target for tessera diff (core/report.c, ts_report_diff).
 *
 * The input is read as JSON (jansson) and, when it parses, compared with itself and with a small
 * fixed report in each format, both ways round, with and without --changed. Nothing may crash or
 * leak; a report compared with itself has no metric that differs, and its CSV has a header and
 * one line per metric.
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char fixed[] = "{\"schema_version\": 1, \"cycles\": 10, \"energy\": {\"total_j\": 0.5},"
                            " \"stats\": {\"layers\": {\"kind\": \"table\", \"table\": {\"columns\": [{\"name\": \"node\"},"
                            " {\"name\": \"cycles\"}], \"rows\": [[0, 4], [1, 6]], \"labels\": {\"columns\": [\"name\"],"
                            " \"rows\": [[\"a\"], [\"b\"]]}}}}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *in = json_loadb((const char *)data, size, 0, NULL), *ref = json_loads(fixed, 0, NULL);
    if (!in || !ref) {
        json_decref(in);
        json_decref(ref);
        return 0;
    }
    const char *names[2] = {"a.json", "b.json"};
    ts_buf b = TS_BUF_INIT;
    ts_err err;
    ts_err_init(&err);
    for (int fmt = TS_FMT_TEXT; fmt <= TS_FMT_CSV; fmt++)
        for (int changed = 0; changed < 2; changed++) {
            ts_report_diff(in, ref, names, (ts_format)fmt, changed, &b, &err);
            ts_buf_reset(&b);
            ts_report_diff(ref, in, names, (ts_format)fmt, changed, &b, &err);
            ts_buf_reset(&b);
            ts_status st = ts_report_diff(in, in, names, (ts_format)fmt, changed, &b, &err);
            /* itself with --changed in CSV: the header alone */
            if (st == TS_OK && !b.oom && fmt == TS_FMT_CSV && changed && strcmp(ts_buf_str(&b), "metric,a,b,ratio\n"))
                abort();
            ts_buf_reset(&b);
        }
    ts_err_free(&err);
    ts_buf_free(&b);
    json_decref(in);
    json_decref(ref);
    return 0;
}
