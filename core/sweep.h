/* core/sweep.h — design-space sweeps: the spec, its points, and the rows they give.
 *
 * A sweep spec (YAML, see docs/sweep.md) names a base chip config, one or more workloads, axes
 * (config keys with a list of values, a range {from, to, step} or a geometric series
 * {from, to, factor}), how axes combine (cartesian or zip), filters over axis values and the
 * report fields to collect. Loading checks every key and every axis value against the family's
 * schema (found through the base config) and reports mistakes as `file:line:col: what is wrong`.
 *
 * Points are numbered before filtering (workloads outermost, then the axes in the order written,
 * the last axis fastest), so a point keeps its id when a filter changes. This module knows no
 * chip and runs nothing: the caller applies a point's overrides (ts_sweep_point_sets) as
 * `--set` values, runs it, and hands the JSON report back to ts_sweep_csv_row.
 */
#ifndef TS_CORE_SWEEP_H
#define TS_CORE_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"

typedef struct ts_sweep ts_sweep; /* opaque */

/* Load a spec from a file. copts resolves the base config (its schema checks the axes); its
 * `sets` are ignored. A relative config or workload path is taken beside the spec when such a
 * file exists there. */
ts_status ts_sweep_load(ts_sweep **out, const char *path, const ts_config_opts *copts, ts_err *err);
/* Load from text; `name` is the file name in messages and `dir` the directory relative paths are
 * taken from ("" or NULL: the current one). */
ts_status ts_sweep_load_string(ts_sweep **out, const char *name, const char *dir, const char *text,
                               size_t len, const ts_config_opts *copts, ts_err *err);
void ts_sweep_destroy(ts_sweep *s);

/* The base config as the config loader should be given it (a path or a built-in name). */
const char *ts_sweep_config(const ts_sweep *s);
size_t ts_sweep_nworkloads(const ts_sweep *s);
/* Workload i as written in the spec (for rows) and as the loader should be given it (path). */
const char *ts_sweep_workload_name(const ts_sweep *s, size_t i);
const char *ts_sweep_workload_path(const ts_sweep *s, size_t i);
size_t ts_sweep_naxes(const ts_sweep *s);
const char *ts_sweep_axis_key(const ts_sweep *s, size_t i);
size_t ts_sweep_nmetrics(const ts_sweep *s);
const char *ts_sweep_metric(const ts_sweep *s, size_t i);
/* `max_cycles` of the spec, 0 for no limit. */
uint64_t ts_sweep_max_cycles(const ts_sweep *s);

/* Points that pass the filters, in increasing id order. */
size_t ts_sweep_npoints(const ts_sweep *s);
/* Number of points before filtering (ids run from 0 to this minus one). */
size_t ts_sweep_ntotal(const ts_sweep *s);
uint64_t ts_sweep_point_id(const ts_sweep *s, size_t i);
size_t ts_sweep_point_workload(const ts_sweep *s, size_t i);
/* Value of axis a at point i: canonical text (numbers in the key's base unit). Borrowed. */
const char *ts_sweep_point_value(const ts_sweep *s, size_t i, size_t a);
/* Index of the point with this id, or -1 when the spec has no such point (or it is filtered). */
long ts_sweep_find(const ts_sweep *s, uint64_t id);
/* The point's overrides, one "key=value" per axis, each NUL-terminated, one after the other in
 * out (cleared first); offsets[a] is where axis a's string starts. offsets has naxes entries. An
 * axis that is a setting of the lowering (ts_sweep_axis_is_setting) gives an empty string. */
void ts_sweep_point_sets(const ts_sweep *s, size_t i, ts_buf *out, size_t *offsets);
/* Whether axis a sweeps a setting of the lowering (`planner`, `max_tiles`) rather than a config key. */
bool ts_sweep_axis_is_setting(const ts_sweep *s, size_t a);
/* The lowering settings a spec may pin or sweep: the mapping of its models (`planner`,
 * `max_tiles`). ts_sweep_setting_name(k) names setting k < TS_SWEEP_SETTINGS. */
#define TS_SWEEP_SETTINGS 2
const char *ts_sweep_setting_name(size_t k);
/* The value of setting k point i compiles with: its axis value, else the spec's pin, else NULL
 * (the compiler chooses). Borrowed. */
const char *ts_sweep_point_setting(const ts_sweep *s, size_t i, size_t k);
/* The planner point i compiles with (setting 0). Borrowed. */
const char *ts_sweep_point_planner(const ts_sweep *s, size_t i);
/* Whether a lowering may read config key `key`. False for the clock, `energy.*` and `power.*`:
 * plans are made in cycles and priced after the run. */
bool ts_sweep_key_lowered(const char *key);
/* The compile cache key of point i into out (cleared first): its workload, its planner and the
 * values of the axes a lowering may read. Points with equal keys compile to the same program, so
 * a sweep compiles each model once per key. */
void ts_sweep_compile_key(const ts_sweep *s, size_t i, ts_buf *out);

/* Checks the caller makes for a spec once it has loaded (this module knows no workload): ud is
 * passed back; either function may be NULL. */
typedef struct ts_sweep_checks {
    void *ud;
    /* A workload as ts_sweep_workload_path gives it: TS_OK when it loads (a program, or a model
     * with known parameters), else TS_EINPUT with why (a did-you-mean where one fits). */
    ts_status (*workload)(void *ud, const char *path, ts_err *err);
    /* A lowering setting (`planner`, `max_tiles`) and one value of it. */
    ts_status (*setting)(void *ud, const char *name, const char *value, ts_err *err);
} ts_sweep_checks;
/* Run the checks over every workload and every setting value the spec names; the first failure
 * is TS_EINPUT at the spec's `file:line:col` of the workload or setting. */
ts_status ts_sweep_check(const ts_sweep *s, const ts_sweep_checks *chk, ts_err *err);

/* CSV: header "point,workload,<axes>,<metrics>,error\n". */
void ts_sweep_csv_header(const ts_sweep *s, ts_buf *out);
/* The leading fields of point i's row: "id,workload,<axis values>," (what a row must begin with). */
void ts_sweep_csv_prefix(const ts_sweep *s, size_t i, ts_buf *out);
/* One row with its newline. With error NULL, metrics are looked up in report_json; a metric
 * missing from the report makes the row an error row naming it. With an error, metrics are empty. */
void ts_sweep_csv_row(const ts_sweep *s, size_t i, const char *report_json, const char *error,
                      ts_buf *out);
/* Append a CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180). */
void ts_csv_field(ts_buf *out, const char *s);
/* Split one CSV line (without its newline) into fields, unquoted; each field is NUL-terminated in
 * out, one after the other. Returns the number of fields, or -1 for a malformed line. */
long ts_csv_split(const char *line, size_t len, ts_buf *out);

/* Look up a dotted path in JSON text. Object keys may themselves hold dots ("stats.a.b" finds
 * member "a.b" of "stats"); an object with a "value" member stands for that value. The scalar
 * found is appended to out: integers in full, reals as ts_buf_json_num writes them, strings unescaped (\u escapes decoded to UTF-8), null as nothing. Returns 0,
 * or -1 when the path is absent, names an array or object, or the JSON is malformed. */
int ts_json_lookup(const char *json, size_t len, const char *path, ts_buf *out);
/* Append JSON text on one line, as jansson writes it compact (reals with TS_JSON_DIGITS significant digits);
 * "null" when the text is not JSON. */
void ts_json_compact(const char *json, size_t len, ts_buf *out);

#endif
