/* core/trace.h — a streaming writer of Chrome / Perfetto trace-event JSON.
 *
 * Process = chip, thread = tile or unit. Slices are complete ("X") events, counters are "C"
 * events. Timestamps are given in cycles and written in microseconds using the clock. When the
 * file would pass max_bytes, further events are dropped and counted; the trace stays valid JSON
 * and records how many were dropped. Written to a temporary file, renamed on close.
 */
#ifndef TS_CORE_TRACE_H
#define TS_CORE_TRACE_H

#include <stdint.h>
#include "core/err.h"

typedef struct ts_trace ts_trace; /* opaque */

/* max_bytes 0 = 200 MB default. */
ts_status ts_trace_open(ts_trace **out, const char *path, double clock_hz, uint64_t max_bytes, ts_err *err);
void ts_trace_process(ts_trace *t, int pid, const char *name);
void ts_trace_thread(ts_trace *t, int pid, int tid, const char *name);
/* A slice [start, start+dur) cycles; args_json is NULL or a JSON object text like {"superstep":3}. */
void ts_trace_slice(ts_trace *t, int pid, int tid, const char *name, const char *cat,
                    uint64_t start, uint64_t dur, const char *args_json);
void ts_trace_counter(ts_trace *t, int pid, const char *name, uint64_t at, double value);
/* A layer of a lowered model, named label ("Conv conv1"), known before the run: every later slice
 * of the chip (process 0) that belongs to it gets the argument "layer": label. With key
 * TS_TRACE_BY_SUPERSTEP a slice belongs to it when its arguments' "superstep" lies in [lo, hi]
 * (the IPU's plan counts supersteps); with TS_TRACE_BY_CYCLE when its start cycle does (the
 * TSP's static schedule). Layers that overlap (the TSP's) are joined: "Conv a, Relu b". */
typedef enum { TS_TRACE_BY_SUPERSTEP, TS_TRACE_BY_CYCLE } ts_trace_key;
ts_status ts_trace_layer(ts_trace *t, ts_trace_key key, uint64_t lo, uint64_t hi, const char *label);
uint64_t ts_trace_dropped(const ts_trace *t);
/* Bytes written so far, and the size limit. */
uint64_t ts_trace_bytes(const ts_trace *t);
uint64_t ts_trace_limit(const ts_trace *t);
/* Finish the JSON and rename into place. Frees t. */
ts_status ts_trace_close(ts_trace *t, ts_err *err);
/* Discard: remove the temporary file. Frees t. */
void ts_trace_abort(ts_trace *t);

#endif
