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
 * reports flows), one value per window.
 *
 * Time is coarsened to stay under the limit: a trace window is one activity window at first,
 * and four times as many each time the file passes half of what was left of the limit (1/2, 3/4,
 * 7/8 ...), so a long run is covered whole, at a coarser grain toward its end (act_trace.c says
 * how long a run fits: about (L / E)^2 / 2 activity windows when every track changes state in
 * every window, E the bytes of one trace window). Events the family writes itself share the
 * limit; past it, the trace's own bound drops them, and ours with them.
 */
#ifndef TS_CORE_ACT_TRACE_H
#define TS_CORE_ACT_TRACE_H

#include <stdint.h>
#include "core/activity.h"
#include "core/err.h"
#include "core/trace.h"

#define TS_ACT_TRACE_TRACK_BYTES ((uint64_t)64 * 1024) /* budget per track in the size limit */

typedef struct ts_act_trace ts_act_trace; /* opaque */

/* Write into t (borrowed), within its size limit. The tracks are laid out at the first frame,
 * when the family has declared its layout. */
ts_status ts_act_trace_create(ts_act_trace **out, ts_trace *t, ts_err *err);
/* Add one window (call from the frame callback, in order). */
ts_status ts_act_trace_frame(ts_act_trace *x, const ts_activity *a, const ts_act_frame *f, ts_err *err);
/* Write the windows still merged and close the open slices (after the run; the sampler of the
 * frames must still be alive). */
void ts_act_trace_finish(ts_act_trace *x);
void ts_act_trace_destroy(ts_act_trace *x);
/* Tracks written and the block size in layout cells (after the first frame). */
uint32_t ts_act_trace_tracks(const ts_act_trace *x);
void ts_act_trace_block(const ts_act_trace *x, uint32_t *bw, uint32_t *bh);
/* Activity windows per trace window now (1, doubling as the file fills). */
uint32_t ts_act_trace_merge(const ts_act_trace *x);

#endif
