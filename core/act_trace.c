/* core/act_trace.c — activity windows as trace tracks (see act_trace.h).
 *
 * Per track (block) the writer keeps the open slice: its state, first cycle, and the block's
 * cycles in that state and in all states since it opened. A trace window whose busiest state is
 * the open slice's extends it; another state closes it (idle slices are not written) and opens
 * one. A trace window is `merge` activity windows added up; merge grows four times each time
 * the file reaches half of what was left of the limit (at 1/2, 3/4, 7/8 ... of it, less a reserve
 * for closing the slices). A trace window writes at most E bytes (a slice on every track and the
 * counters), so phase k, with (L/2) / 2^k bytes and trace windows of 4^k activity windows, lasts
 * at least (L / 2E) x 2^k activity windows: the phases together cover about (L / E)^2 / 2
 * activity windows before a phase cannot hold one trace window, even when every track changes
 * state in every window (at 200 MB and 3,051 tracks, E is about 0.4 MB: some 10^5 windows). Past
 * that, the trace's own bound drops the rest (a clean prefix).
 */
#include "core/act_trace.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/buf.h"

#define TRACE_DEFAULT_MAX ((uint64_t)200 * 1000 * 1000) /* as core/trace.c */
#define PID 1

typedef struct track {
    int state;            /* open slice's state, -1 none */
    uint64_t start;       /* its first cycle */
    uint64_t in_state, all; /* block cycles in that state / in any state since start */
} track;

struct ts_act_trace {
    ts_trace *t;          /* borrowed */
    uint64_t max_bytes;
    bool laid_out;
    uint32_t bw, bh;      /* block size in cells */
    uint32_t nbx, nby;    /* blocks across and down */
    uint32_t ntracks;
    uint32_t *tid_of;     /* owned: per block, its track id (0: no unit there) */
    uint32_t *block_of;   /* owned: per unit, its block */
    track *tr;            /* owned: per block */
    uint64_t *acc;        /* owned: per block x state, the windows merged so far */
    uint64_t acc_start, acc_cycles, acc_bytes, acc_flow[2];
    uint32_t nacc, merge; /* activity windows in acc, and per trace window */
    uint64_t next_double; /* file size at which merge grows */
    uint64_t usable;      /* the limit less the reserve for closing the slices */
    double joules0, secs0; /* the sampler's priced totals at the last trace window */
    const ts_activity *last; /* borrowed: the sampler of the last frame */
    uint64_t end;         /* the last window's end */
};

ts_status ts_act_trace_create(ts_act_trace **out, ts_trace *t, ts_err *err)
{
    *out = ts_calloc(1, sizeof **out);
    if (!*out)
        return ts_err_set(err, TS_ENOMEM, "out of memory for the activity trace");
    (*out)->t = t;
    (*out)->max_bytes = ts_trace_limit(t) ? ts_trace_limit(t) : TRACE_DEFAULT_MAX;
    (*out)->merge = 1;
    return TS_OK;
}

uint32_t ts_act_trace_merge(const ts_act_trace *x) { return x->merge; }

void ts_act_trace_destroy(ts_act_trace *x)
{
    if (!x)
        return;
    ts_free(x->tid_of);
    ts_free(x->block_of);
    ts_free(x->tr);
    ts_free(x->acc);
    ts_free(x);
}

uint32_t ts_act_trace_tracks(const ts_act_trace *x) { return x->ntracks; }

void ts_act_trace_block(const ts_act_trace *x, uint32_t *bw, uint32_t *bh)
{
    *bw = x->bw;
    *bh = x->bh;
}

/* Blocks of bw x bh cells holding at least one unit. */
static uint64_t count_blocks(const ts_activity *a, uint32_t bw, uint32_t bh, uint8_t *seen, uint32_t nbx,
                             uint32_t nby)
{
    memset(seen, 0, (size_t)nbx * nby);
    uint64_t n = 0;
    for (uint32_t u = 0; u < ts_activity_nunits(a); u++) {
        uint32_t x, y;
        ts_activity_pos(a, u, &x, &y);
        uint8_t *s = &seen[(size_t)(y / bh) * nbx + x / bw];
        n += !*s;
        *s = 1;
    }
    return n;
}

/* Name block b by the numbers of its units ("tiles 0-1, 19-20") when the family asks for it and
 * they make at most four runs; false to name it by its cells. */
#define NAME_RUNS 4
static bool name_by_index(const ts_act_trace *x, const ts_activity *a, size_t b, char *name, size_t size)
{
    const char *one, *many;
    ts_activity_index_names(a, &one, &many);
    if (!one)
        return false;
    uint32_t lo[NAME_RUNS], hi[NAME_RUNS], runs = 0, n = ts_activity_nunits(a);
    for (uint32_t u = 0; u < n; u++) {
        if (x->block_of[u] != b)
            continue;
        if (runs && hi[runs - 1] + 1 == u) {
            hi[runs - 1] = u;
            continue;
        }
        if (runs == NAME_RUNS)
            return false;
        lo[runs] = hi[runs] = u;
        runs++;
    }
    if (!runs)
        return false;
    int k = snprintf(name, size, "%s ", runs == 1 && lo[0] == hi[0] ? one : many);
    for (uint32_t r = 0; r < runs && k > 0 && (size_t)k < size; r++) {
        k += snprintf(name + k, size - (size_t)k, "%s%u", r ? ", " : "", lo[r]);
        if (hi[r] > lo[r] && (size_t)k < size)
            k += snprintf(name + k, size - (size_t)k, "-%u", hi[r]);
    }
    return true;
}

/* Choose the blocks (the family's group, doubled until the tracks fit), name the tracks. */
static ts_status lay_out(ts_act_trace *x, const ts_activity *a, ts_err *err)
{
    uint32_t gw, gh, n = ts_activity_nunits(a);
    const char *label;
    ts_activity_grid(a, &gw, &gh);
    ts_activity_group_of(a, &x->bw, &x->bh, &label);
    uint64_t limit = x->max_bytes / TS_ACT_TRACE_TRACK_BYTES;
    if (limit < 1)
        limit = 1;
    uint8_t *seen = ts_malloc((size_t)((gw + x->bw - 1) / x->bw) * ((gh + x->bh - 1) / x->bh) + 1);
    if (!seen)
        return ts_err_set(err, TS_ENOMEM, "out of memory laying out trace tracks");
    const char *one, *many;
    ts_activity_index_names(a, &one, &many);
    bool numbered = one != NULL;
    for (;;) {
        x->nbx = (gw + x->bw - 1) / x->bw;
        x->nby = (gh + x->bh - 1) / x->bh;
        uint64_t k = count_blocks(a, x->bw, x->bh, seen, x->nbx, x->nby);
        if (k <= limit || (x->bw >= gw && x->bh >= gh))
            break;
        if (numbered && x->bh < gh) /* numbered units: whole columns first, runs of numbers */
            x->bh = x->bh * 2 < gh ? x->bh * 2 : gh;
        else {
            if (x->bw < gw)
                x->bw *= 2;
            if (x->bh < gh)
                x->bh *= 2;
        }
    }
    size_t nb = (size_t)x->nbx * x->nby;
    x->tid_of = ts_calloc(nb ? nb : 1, sizeof *x->tid_of);
    x->block_of = ts_malloc((n ? n : 1) * sizeof *x->block_of);
    x->tr = ts_calloc(nb ? nb : 1, sizeof *x->tr);
    x->acc = ts_calloc((nb ? nb : 1) * TS_ACT_NSTATES, sizeof *x->acc);
    if (!x->tid_of || !x->block_of || !x->tr || !x->acc) {
        ts_free(seen);
        return ts_err_set(err, TS_ENOMEM, "out of memory laying out trace tracks");
    }
    for (uint32_t u = 0; u < n; u++) {
        uint32_t ux, uy;
        ts_activity_pos(a, u, &ux, &uy);
        x->block_of[u] = (uy / x->bh) * x->nbx + ux / x->bw;
    }
    count_blocks(a, x->bw, x->bh, seen, x->nbx, x->nby);
    ts_trace_process(x->t, PID, "activity");
    char name[96];
    for (size_t b = 0; b < nb; b++) {
        x->tr[b].state = -1;
        if (!seen[b])
            continue;
        uint32_t bx = (uint32_t)(b % x->nbx) * x->bw, by = (uint32_t)(b / x->nbx) * x->bh;
        uint32_t ex = bx + x->bw - 1 < gw - 1 ? bx + x->bw - 1 : gw - 1;
        uint32_t ey = by + x->bh - 1 < gh - 1 ? by + x->bh - 1 : gh - 1;
        x->tid_of[b] = ++x->ntracks;
        if (name_by_index(x, a, b, name, sizeof name)) {
            ts_trace_thread(x->t, PID, (int)x->tid_of[b], name);
            continue;
        }
        int k = snprintf(name, sizeof name, "%s x %u", label, bx);
        if (ex > bx)
            k += snprintf(name + k, sizeof name - (size_t)k, "-%u", ex);
        if (x->bh < gh) { /* blocks of whole columns need no y */
            k += snprintf(name + k, sizeof name - (size_t)k, " y %u", by);
            if (ey > by)
                snprintf(name + k, sizeof name - (size_t)k, "-%u", ey);
        }
        ts_trace_thread(x->t, PID, (int)x->tid_of[b], name);
    }
    ts_free(seen);
    /* keep room to close every track's slice at the end (a slice is under 160 bytes) */
    uint64_t reserve = (uint64_t)x->ntracks * 160 + 4096;
    x->usable = x->max_bytes > 2 * reserve ? x->max_bytes - reserve : x->max_bytes / 2;
    uint64_t now = ts_trace_bytes(x->t);
    x->next_double = now < x->usable ? now + (x->usable - now) / 2 : now;
    x->laid_out = true;
    return TS_OK;
}

static void close_slice(ts_act_trace *x, size_t b, uint64_t end)
{
    track *r = &x->tr[b];
    if (r->state >= 0 && r->state != TS_ACT_IDLE && end > r->start) {
        /* the share of the slice's unit-cycles in its state, to 3 decimals */
        double share = r->all ? (double)r->in_state / (double)r->all : 0.0;
        json_t *a = json_object();
        json_object_set_new(a, "share", ts_json_num(round(share * 1000) / 1000));
        ts_buf args = TS_BUF_INIT;
        ts_buf_json(&args, a, JSON_COMPACT | JSON_REAL_PRECISION(TS_JSON_DIGITS));
        json_decref(a);
        ts_trace_slice(x->t, PID, (int)x->tid_of[b], ts_act_state_name((ts_act_state)r->state), "activity",
                       r->start, end - r->start, ts_buf_str(&args));
        ts_buf_free(&args);
    }
    r->state = -1;
}

/* Write the merged windows in acc as one trace window: extend or switch each track's slice,
 * one value per counter; then double merge if the file has passed the mark. */
static void emit(ts_act_trace *x, const ts_activity *a)
{
    size_t nb = (size_t)x->nbx * x->nby;
    for (size_t b = 0; b < nb; b++) {
        if (!x->tid_of[b])
            continue;
        const uint64_t *s = x->acc + b * TS_ACT_NSTATES;
        int best = TS_ACT_IDLE; /* the busiest state other than idle, as the pictures colour it */
        uint64_t all = 0;
        for (int k = 0; k < TS_ACT_NSTATES; k++) {
            all += s[k];
            if (k != TS_ACT_IDLE && s[k] && (best == TS_ACT_IDLE || s[k] > s[best]))
                best = k;
        }
        track *r = &x->tr[b];
        if (r->state != best) {
            close_slice(x, b, x->acc_start);
            r->state = best;
            r->start = x->acc_start;
            r->in_state = r->all = 0;
        }
        r->in_state += s[best];
        r->all += all;
    }
    double cyc = x->acc_cycles ? (double)x->acc_cycles : 1.0;
    ts_trace_counter(x->t, PID, "network bytes per cycle", x->acc_start, (double)x->acc_bytes / cyc);
    double secs = ts_activity_seconds(a) - x->secs0, joules = ts_activity_total_joules(a) - x->joules0;
    if (secs > 0)
        ts_trace_counter(x->t, PID, "power W", x->acc_start, joules / secs);
    x->secs0 = ts_activity_seconds(a);
    x->joules0 = ts_activity_total_joules(a);
    if (ts_activity_flow_peak(a) > 0) {
        ts_trace_counter(x->t, PID, "east bytes per cycle", x->acc_start, (double)x->acc_flow[0] / cyc);
        ts_trace_counter(x->t, PID, "west bytes per cycle", x->acc_start, (double)x->acc_flow[1] / cyc);
    }
    memset(x->acc, 0, nb * TS_ACT_NSTATES * sizeof *x->acc);
    x->nacc = 0;
    x->acc_cycles = x->acc_bytes = x->acc_flow[0] = x->acc_flow[1] = 0;
    while (ts_trace_bytes(x->t) >= x->next_double && x->merge < (1u << 30)) {
        x->merge *= 4;
        x->next_double += (x->usable - x->next_double) / 2;
    }
}

ts_status ts_act_trace_frame(ts_act_trace *x, const ts_activity *a, const ts_act_frame *f, ts_err *err)
{
    if (!x->laid_out) {
        ts_status rc = lay_out(x, a, err);
        if (rc != TS_OK)
            return rc;
    }
    if (!x->nacc)
        x->acc_start = f->start;
    for (uint32_t u = 0; u < f->nunits; u++) {
        uint64_t *s = x->acc + (size_t)x->block_of[u] * TS_ACT_NSTATES;
        for (int k = 0; k < TS_ACT_NSTATES; k++)
            s[k] += f->state[k][u];
    }
    x->acc_cycles += f->cycles;
    x->acc_bytes += f->bytes;
    x->acc_flow[0] += f->flow[TS_ACT_EAST];
    x->acc_flow[1] += f->flow[TS_ACT_WEST];
    x->end = f->start + f->cycles;
    x->last = a;
    if (++x->nacc >= x->merge)
        emit(x, a);
    return TS_OK;
}

void ts_act_trace_finish(ts_act_trace *x)
{
    if (!x || !x->laid_out)
        return;
    if (x->nacc)
        emit(x, x->last);
    for (size_t b = 0; b < (size_t)x->nbx * x->nby; b++)
        if (x->tid_of[b])
            close_slice(x, b, x->end);
}
