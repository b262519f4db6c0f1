/* core/act_trace.h — activity windows written into a trace: unit tracks and chip counters.
 *
 * Process 1 of the trace ("activity") gets one track per unit of the family's layout, or per
 * block of units on big layouts: the block is the family's group (ts_activity_group: a TSP slice
 * is one column of superlanes) grown in powers of two until the tracks fit the size limit at
 * TS_ACT_TRACE_TRACK_BYTES each (200 MB: 3,051 tracks; the 745,500 PEs of `wse2` become blocks of
 * 16 x 16). A track holds one slice per run of windows in which its block's busiest state other
 * than idle (over its units' cycles, as the pictures colour it) stays the same; idle slices are
 * not written, named by that state, with the
 * state's share of the cycles in args. Counter tracks on process 1: network bytes per cycle,
 * power (W, when the windows are priced) and bytes per cycle east and west (when the family
 * reports flows), one value per window. The trace's own size bound drops what does not fit.
 */
#ifndef TS_CORE_ACT_TRACE_H
#define TS_CORE_ACT_TRACE_H

#include <stdint.h>
#include "core/activity.h"
#include "core/err.h"
#include "core/trace.h"

#define TS_ACT_TRACE_TRACK_BYTES ((uint64_t)64 * 1024) /* budget per track in the size limit */

typedef struct ts_act_trace ts_act_trace; /* opaque */

/* Write into t (borrowed) with the size limit max_bytes (0: the trace's default, 200 MB). The
 * tracks are laid out at the first frame, when the family has declared its layout. */
ts_status ts_act_trace_create(ts_act_trace **out, ts_trace *t, uint64_t max_bytes, ts_err *err);
/* Add one window (call from the frame callback, in order). */
ts_status ts_act_trace_frame(ts_act_trace *x, const ts_activity *a, const ts_act_frame *f, ts_err *err);
/* Close the open slices (after the run). */
void ts_act_trace_finish(ts_act_trace *x);
void ts_act_trace_destroy(ts_act_trace *x);
/* Tracks written and the block size in layout cells (after the first frame). */
uint32_t ts_act_trace_tracks(const ts_act_trace *x);
void ts_act_trace_block(const ts_act_trace *x, uint32_t *bw, uint32_t *bh);

#endif
