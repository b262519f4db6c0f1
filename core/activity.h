/* core/activity.h — what every unit of a chip was doing, sampled in windows of N cycles.
 *
 * A family reports, per unit (tile, PE, slice), spans of cycles in one of five states: compute,
 * network (exchange, stream, fabric), sync wait, memory stall and idle. The activity object adds
 * each span to the window(s) it overlaps: one add when the span lies inside one window, which is
 * the common case, so recording costs about one add per state change; models that skip cycles
 * record spans, never cycles. Counters are struct-of-arrays: per window, one array of per-unit
 * cycle counts for each state.
 *
 * When the family has recorded every unit up to cycle C it calls ts_activity_advance(C); each
 * window that ends at or before C is then complete and handed to the frame callback, in order.
 * ts_activity_finish flushes the last, partial window at the end of the run. The family also
 * reports chip counters (supersteps with their compute / exchange / sync split, bytes moved, and
 * bytes by direction where it has streams); the kernel prices each window (energy and power)
 * through ts_activity_energy when the run has an energy table.
 *
 * The unit geometry (where each unit sits on the die: x, y in a grid of w x h cells, and a
 * layout name) is declared once by the family at create, with ts_activity_layout.
 *
 * Not thread-safe: a family records from one thread at a time (the IPU records between rounds).
 * A family whose run ends with an error stops recording; what was flushed stays valid.
 */
#ifndef TS_CORE_ACTIVITY_H
#define TS_CORE_ACTIVITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/err.h"

typedef struct ts_activity ts_activity; /* opaque (also declared in core/sim.h) */

typedef enum ts_act_state {
    TS_ACT_COMPUTE = 0, /* issuing or able to issue work of its own */
    TS_ACT_NETWORK,     /* exchange, stream or fabric activity */
    TS_ACT_SYNC,        /* waiting at a barrier */
    TS_ACT_MEMORY,      /* stalled on memory */
    TS_ACT_IDLE,        /* nothing to do (no program, halted) */
    TS_ACT_NSTATES
} ts_act_state;

/* Short lowercase name of a state ("compute", "network", "sync", "memory", "idle"). */
const char *ts_act_state_name(ts_act_state s);

/* Directions of flow on the die (x grows east, y grows south). */
typedef enum ts_act_dir { TS_ACT_EAST = 0, TS_ACT_WEST, TS_ACT_NORTH, TS_ACT_SOUTH, TS_ACT_NDIRS } ts_act_dir;

/* One BSP superstep, for the timeline (cycles). */
typedef struct ts_act_superstep {
    uint64_t start, compute, exchange, sync;
} ts_act_superstep;

/* One complete window, handed to the frame callback. Pointers are borrowed for the call. */
typedef struct ts_act_frame {
    uint64_t index;       /* 0, 1, 2... */
    uint64_t start;       /* first cycle of the window */
    uint64_t cycles;      /* its length: N, or less for the last window */
    uint32_t nunits;
    const uint32_t *state[TS_ACT_NSTATES]; /* state[s][u]: cycles unit u spent in state s */
    uint64_t supersteps;  /* supersteps that ended at or before the window's end */
    uint64_t bytes;       /* bytes moved on the network during the window */
    uint64_t flow[TS_ACT_NDIRS]; /* bytes sent each way (ts_activity_flow), when the family reports it */
    bool priced;          /* an energy source is set (ts_activity_energy): joules and watts hold */
    double joules;        /* energy of the window: its events priced, plus static power x its time */
    double watts;         /* joules / the window's time at the chip's clock */
} ts_act_frame;

/* Called once per complete window, in order. A status other than TS_OK stops recording and is
 * returned by the ts_activity_* call that flushed the window (the family then stops its run). */
typedef ts_status (*ts_act_frame_fn)(void *ud, const ts_activity *a, const ts_act_frame *f, ts_err *err);

/* Create a sampler with windows of `window` cycles (1 .. 2^32 - 1). fn may be NULL (totals only). */
ts_status ts_activity_create(ts_activity **out, uint64_t window, ts_act_frame_fn fn, void *ud, ts_err *err);
/* Frees a; NULL is a no-op. */
void ts_activity_destroy(ts_activity *a);

/* What the run has spent so far: the dynamic energy of every event up to now (J, static power
 * left out), the clock (Hz) and the static power (W). */
typedef struct ts_act_energy {
    double joules, clock_hz, static_w;
} ts_act_energy;
typedef ts_status (*ts_act_energy_fn)(void *ud, ts_act_energy *out, ts_err *err);

/* Price the windows: before a flush, ts_activity_advance(upto) asks fn for the energy so far and
 * spreads what was spent since the last ask over the windows in between, by the unit-cycles
 * worked in each (compute, network, memory; by cycles when nobody worked): a family that flushes
 * at every window's end gets each window's own events; one that flushes at a barrier gets the
 * superstep's energy where its units worked. Each frame then carries its joules and watts. The
 * energy of all windows adds up to fn's last answer plus static power x the run's time. The
 * kernel sets this when it is given an energy table (fn prices the family's results so far) and
 * clears it (fn NULL) before the model goes. */
void ts_activity_energy(ts_activity *a, ts_act_energy_fn fn, void *ud);
/* Joules of every flushed window, added up, and their time in seconds (0 when not priced). */
double ts_activity_total_joules(const ts_activity *a);
double ts_activity_seconds(const ts_activity *a);

/* ---- family side ---- */

/* Declare the units: nunits units, unit u at cell (x[u], y[u]) of a grid_w x grid_h grid (the
 * physical arrangement, gaps allowed), and a layout name (copied). Called once, at create. */
ts_status ts_activity_layout(ts_activity *a, const char *name, uint32_t nunits, uint32_t grid_w,
                             uint32_t grid_h, const uint32_t *x, const uint32_t *y, ts_err *err);
/* Unit u spent cycles [start, end) in state s. start must not be before the last cycle passed to
 * ts_activity_advance; spans of one unit must not overlap (not checked). A span past what the
 * window ring holds grows it. A failed allocation is remembered and returned by advance. Cycles
 * of a window that a unit spent in no span are idle (added when the window is flushed), so a
 * family may leave idle time out. */
void ts_activity_span(ts_activity *a, uint32_t u, ts_act_state s, uint64_t start, uint64_t end);
/* bytes moved on the network at cycle `at` (not before the last advance). */
void ts_activity_bytes(ts_activity *a, uint64_t at, uint64_t bytes);
/* The smallest block of layout cells a trace track stands for (default 1 x 1, "unit"): the TSP
 * groups a slice's superlanes, one column (1 x superlanes, "slice"). The label (static text)
 * names the tracks. Called at create, after the layout. */
void ts_activity_group(ts_activity *a, uint32_t gw, uint32_t gh, const char *label);
void ts_activity_group_of(const ts_activity *a, uint32_t *gw, uint32_t *gh, const char **label);
/* Name trace tracks by unit number ("tile 5", "tiles 0-18", "tiles 0-1, 19-20") instead of by
 * layout cell, as a family whose own trace numbers its units does (the IPU): `one` and `many` are
 * static text. A block whose units make more than four runs of numbers keeps the cell name. */
void ts_activity_name_by_index(ts_activity *a, const char *one, const char *many);
void ts_activity_index_names(const ts_activity *a, const char **one, const char **many);

/* The family reports bytes by direction (ts_activity_flow) along x (east, west): declared once,
 * at create, with the most bytes per cycle one way it can move (the pictures' full scale). */
void ts_activity_flows(ts_activity *a, double peak_bytes_per_cycle);
/* Bytes sent toward d at cycle `at` (not before the last advance). */
void ts_activity_flow(ts_activity *a, uint64_t at, ts_act_dir d, uint64_t bytes);
/* A superstep ended (at start + compute + exchange + sync): appended to the timeline. */
ts_status ts_activity_superstep(ts_activity *a, const ts_act_superstep *s, ts_err *err);
/* Every unit has been recorded up to cycle `upto`: flush each window that ends at or before it. */
ts_status ts_activity_advance(ts_activity *a, uint64_t upto, ts_err *err);
/* The run ended at cycle `end` (every unit recorded up to it): flush everything, including the
 * last partial window. Later calls are ignored. */
ts_status ts_activity_finish(ts_activity *a, uint64_t end, ts_err *err);

/* One unit's state in words (pc, thread states, queue depths, memory used...), for the live
 * view: at most n bytes with the terminating NUL, the family's own text. */
typedef void (*ts_act_describe_fn)(void *ud, uint32_t unit, char *buf, size_t n);
/* The family's describer (NULL: none). The family's model is behind ud, so readers may call
 * ts_activity_describe only from the frame callback, while the run is in progress. */
void ts_activity_describer(ts_activity *a, ts_act_describe_fn fn, void *ud);

/* ---- reader side (renderers, tests) ---- */

/* Unit u's state through the family's describer; false (and buf "") when there is none. */
bool ts_activity_describe(const ts_activity *a, uint32_t u, char *buf, size_t n);
/* The unit at cell (x, y) of the layout grid; UINT32_MAX for none. */
uint32_t ts_activity_unit_at(const ts_activity *a, uint32_t x, uint32_t y);

uint64_t ts_activity_window(const ts_activity *a);
uint32_t ts_activity_nunits(const ts_activity *a);
const char *ts_activity_layout_name(const ts_activity *a); /* "" before the layout is declared */
/* Labels under the layout's columns (the TSP's slice types, the IPU's tile numbers): labels[x]
 * for grid column x, NULL for none; copied, each cut at 11 bytes. Called at create, after the
 * layout; a layout without them is labelled by column number. */
ts_status ts_activity_column_labels(ts_activity *a, const char *const *labels, ts_err *err);
/* Column x's label, or NULL when the family gave none. */
const char *ts_activity_column_label(const ts_activity *a, uint32_t x);
/* A title line for the pictures (config and workload; copied, cut at 159 bytes; "" by default). */
void ts_activity_set_title(ts_activity *a, const char *title);
const char *ts_activity_title(const ts_activity *a);
void ts_activity_grid(const ts_activity *a, uint32_t *w, uint32_t *h);
/* Cell of unit u. */
void ts_activity_pos(const ts_activity *a, uint32_t u, uint32_t *x, uint32_t *y);
/* The supersteps recorded so far (borrowed, valid until the next ts_activity_superstep). */
const ts_act_superstep *ts_activity_supersteps(const ts_activity *a, size_t *n);
/* Cycles unit u spent in state s over every flushed window. */
uint64_t ts_activity_total(const ts_activity *a, uint32_t u, ts_act_state s);
/* Cycles covered by flushed windows, windows flushed, and network bytes in them. */
uint64_t ts_activity_cycles(const ts_activity *a);
uint64_t ts_activity_frames(const ts_activity *a);
uint64_t ts_activity_total_bytes(const ts_activity *a);
/* The peak declared with ts_activity_flows, 0 when the family reports no flows; and the bytes
 * sent toward d in flushed windows. */
double ts_activity_flow_peak(const ts_activity *a);
uint64_t ts_activity_total_flow(const ts_activity *a, ts_act_dir d);

#endif
