/* core/report.h — results written for people (text), tools (JSON) and sweeps (CSV).
 *
 * The JSON schema is versioned and documented in docs/report-schema.md; the CSV has one header
 * line and one row per run, every scalar of the JSON (ts_report_csv_header). Files are written to a
 * temporary name and renamed.
 */
#ifndef TS_CORE_REPORT_H
#define TS_CORE_REPORT_H

#include <stdbool.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/results.h"

#define TS_REPORT_SCHEMA_VERSION 1

typedef enum ts_format { TS_FMT_TEXT, TS_FMT_JSON, TS_FMT_CSV } ts_format;

/* Parse "text", "json" or "csv"; -1 if none. */
int ts_format_parse(const char *s);

void ts_report_text(const ts_results *r, ts_buf *out);
/* The JSON report as a jansson tree (a new reference; NULL when out of memory), and as text: two
 * spaces per level, reals with TS_JSON_DIGITS significant digits, a newline at the end. */
struct json_t *ts_report_json_tree(const ts_results *r);
void ts_report_json(const ts_results *r, ts_buf *out);
/* CSV header line (with newline) and one row (with newline): the 17 columns of schema 1, then
 * every other scalar of the JSON report under its dotted path (docs/report-schema.md); the header
 * names the columns of r's report. */
void ts_report_csv_header(const ts_results *r, ts_buf *out);
void ts_report_csv_row(const ts_results *r, ts_buf *out);

/* Two JSON reports a and b (jansson trees, as ts_report_json writes them), named names[0] and
 * names[1], side by side in fmt: every metric (dotted path, as the CSV names it; a table statistic
 * cell by cell as "stats.NAME[KEY].COLUMN", KEY the row's first cell) with its value in each and
 * the ratio B/A (none when either is not a number or A is 0; 1 when both are 0). Arrays are left
 * out. With changed, only metrics that differ. TS_EINPUT when either is not a report. */
ts_status ts_report_diff(const struct json_t *a, const struct json_t *b, const char *const names[2],
                         ts_format fmt, bool changed, ts_buf *out, ts_err *err);

/* Render in fmt and write atomically to path ("-" or NULL = stdout; CSV includes the header). */
ts_status ts_report_write(const ts_results *r, ts_format fmt, const char *path, ts_err *err);

#endif
