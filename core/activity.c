/* core/activity.c — activity sampling: a ring of open windows, flushed in order (see activity.h).
 *
 * Window k covers cycles [kN, (k+1)N). The ring holds windows w0 .. w0 + cap - 1, w0 being the
 * first not yet flushed; each holds TS_ACT_NSTATES x nunits uint32 counters (state-major, so a
 * frame hands out one array per state) and a byte count. A span inside one window costs one add.
 */
#include "core/activity.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"

typedef struct act_win {
    uint32_t *cnt; /* owned: cnt[s * nunits + u] */
    uint64_t bytes;
    double joules; /* dynamic energy spread into the window so far */
    uint64_t flow[TS_ACT_NDIRS];
} act_win;

struct ts_activity {
    uint64_t window;
    ts_act_frame_fn fn;
    void *ud;
    char *name;          /* owned layout name */
    char title[160];     /* the pictures' title line */
    char (*col_label)[12]; /* owned, gw labels ("" for none), or NULL */
    uint32_t nunits, gw, gh;
    uint32_t *x, *y;     /* owned, per unit */
    uint32_t *at;        /* owned: at[y * gw + x] = the unit there, UINT32_MAX for none */
    ts_act_describe_fn describe;
    void *describe_ud;
    act_win *ring;       /* owned */
    size_t cap;
    uint64_t w0;         /* absolute index of the first window not flushed */
    uint64_t *total;     /* owned: total[s * nunits + u] */
    uint64_t total_bytes, frames, cycles;
    ts_act_superstep *ss; size_t nss, cap_ss;
    size_t ss_seen;      /* supersteps ending at or before the last flushed window's end */
    ts_act_energy_fn efn; /* NULL: windows are not priced */
    void *eud;
    ts_act_energy e;     /* the last answer of efn */
    uint64_t e_upto;     /* cycle of the last answer */
    double total_joules, seconds; /* over flushed windows, when priced */
    double flow_peak;    /* 0: no flows reported */
    uint32_t grp_w, grp_h; /* ts_activity_group, 0 for 1 */
    const char *grp_label; /* static, NULL for "unit" */
    const char *idx_one, *idx_many; /* ts_activity_name_by_index, NULL when not */
    uint64_t total_flow[TS_ACT_NDIRS];
    bool nomem, finished, stopped;
};

const char *ts_act_state_name(ts_act_state s)
{
    static const char *const names[TS_ACT_NSTATES] = {"compute", "network", "sync", "memory", "idle"};
    return (unsigned)s < TS_ACT_NSTATES ? names[s] : "?";
}

ts_status ts_activity_create(ts_activity **out, uint64_t window, ts_act_frame_fn fn, void *ud, ts_err *err)
{
    *out = NULL;
    if (window < 1 || window > UINT32_MAX) /* counts per window are 32-bit */
        return ts_err_set(err, TS_EINPUT, "activity window of %" PRIu64 " cycles is not in 1 .. %" PRIu32,
                          window, UINT32_MAX);
    ts_activity *a = ts_calloc(1, sizeof *a);
    if (!a)
        return ts_err_set(err, TS_ENOMEM, "out of memory creating the activity sampler");
    a->window = window;
    a->fn = fn;
    a->ud = ud;
    *out = a;
    return TS_OK;
}

static void free_ring(ts_activity *a)
{
    for (size_t i = 0; i < a->cap; i++)
        ts_free(a->ring[i].cnt);
    ts_free(a->ring);
    a->ring = NULL;
    a->cap = 0;
}

void ts_activity_destroy(ts_activity *a)
{
    if (!a)
        return;
    free_ring(a);
    ts_free(a->name);
    ts_free(a->col_label);
    ts_free(a->x);
    ts_free(a->y);
    ts_free(a->at);
    ts_free(a->total);
    ts_free(a->ss);
    ts_free(a);
}

ts_status ts_activity_layout(ts_activity *a, const char *name, uint32_t nunits, uint32_t grid_w,
                             uint32_t grid_h, const uint32_t *x, const uint32_t *y, ts_err *err)
{
    if (a->name)
        return ts_err_set(err, TS_EINTERNAL, "activity layout declared twice");
    for (uint32_t u = 0; u < nunits; u++)
        if (x[u] >= grid_w || y[u] >= grid_h)
            return ts_err_set(err, TS_EINTERNAL, "unit %u at (%u, %u) is outside the %ux%u layout grid", u, x[u],
                              y[u], grid_w, grid_h);
    a->name = ts_strdup(name ? name : "");
    a->x = ts_malloc((nunits ? nunits : 1) * sizeof *a->x);
    a->y = ts_malloc((nunits ? nunits : 1) * sizeof *a->y);
    a->total = ts_calloc((size_t)TS_ACT_NSTATES * (nunits ? nunits : 1), sizeof *a->total);
    size_t cells = (size_t)grid_w * grid_h;
    a->at = ts_malloc((cells ? cells : 1) * sizeof *a->at);
    if (!a->name || !a->x || !a->y || !a->total || !a->at) {
        ts_free(a->name);
        ts_free(a->x);
        ts_free(a->y);
        ts_free(a->total);
        ts_free(a->at);
        a->name = NULL;
        a->x = a->y = a->at = NULL;
        a->total = NULL;
        return ts_err_set(err, TS_ENOMEM, "out of memory for the activity layout");
    }
    memcpy(a->x, x, nunits * sizeof *x);
    memcpy(a->y, y, nunits * sizeof *y);
    for (size_t i = 0; i < (size_t)grid_w * grid_h; i++)
        a->at[i] = UINT32_MAX;
    for (uint32_t u = nunits; u-- > 0;) /* the lowest unit wins a shared cell */
        a->at[(size_t)y[u] * grid_w + x[u]] = u;
    a->nunits = nunits;
    a->gw = grid_w;
    a->gh = grid_h;
    return TS_OK;
}

/* Make the ring hold window k (absolute). Returns the slot, or NULL when out of memory. */
static act_win *win_at(ts_activity *a, uint64_t k)
{
    if (k - a->w0 < a->cap)
        return &a->ring[k % a->cap];
    if (a->nomem || !a->total)
        return NULL;
    size_t need = (size_t)(k - a->w0) + 1, cap = a->cap ? a->cap : 2;
    while (cap < need)
        cap *= 2;
    act_win *ring = ts_calloc(cap, sizeof *ring);
    if (!ring) {
        a->nomem = true;
        return NULL;
    }
    size_t per = (size_t)TS_ACT_NSTATES * (a->nunits ? a->nunits : 1);
    for (size_t i = 0; i < a->cap; i++) /* move the open windows to their new slots */
        ring[(a->w0 + i) % cap] = a->ring[(a->w0 + i) % a->cap];
    for (size_t i = a->cap; i < cap; i++) {
        act_win *w = &ring[(a->w0 + i) % cap];
        w->cnt = ts_calloc(per, sizeof *w->cnt);
        if (!w->cnt) {
            for (size_t j = a->cap; j < i; j++)
                ts_free(ring[(a->w0 + j) % cap].cnt);
            ts_free(ring);
            a->nomem = true;
            return NULL;
        }
    }
    ts_free(a->ring);
    a->ring = ring;
    a->cap = cap;
    return &a->ring[k % cap];
}

void ts_activity_span(ts_activity *a, uint32_t u, ts_act_state s, uint64_t start, uint64_t end)
{
    uint64_t lo = a->w0 * a->window;
    if (start < lo)
        start = lo;
    if (end <= start || u >= a->nunits || a->finished)
        return;
    uint64_t k = start / a->window, k1 = (end - 1) / a->window;
    size_t off = (size_t)s * a->nunits + u;
    if (k == k1 && k - a->w0 < a->cap) { /* the common case: one add */
        a->ring[k % a->cap].cnt[off] += (uint32_t)(end - start);
        return;
    }
    for (; k <= k1; k++) {
        act_win *w = win_at(a, k);
        if (!w)
            return;
        uint64_t ws = k * a->window, we = ws + a->window;
        uint64_t b = start > ws ? start : ws, e = end < we ? end : we;
        w->cnt[off] += (uint32_t)(e - b);
    }
}

void ts_activity_bytes(ts_activity *a, uint64_t at, uint64_t bytes)
{
    if (a->finished || at < a->w0 * a->window)
        return;
    act_win *w = win_at(a, at / a->window);
    if (w)
        w->bytes += bytes;
}

void ts_activity_group(ts_activity *a, uint32_t gw, uint32_t gh, const char *label)
{
    a->grp_w = gw;
    a->grp_h = gh;
    a->grp_label = label;
}

void ts_activity_name_by_index(ts_activity *a, const char *one, const char *many)
{
    a->idx_one = one;
    a->idx_many = many;
}

void ts_activity_index_names(const ts_activity *a, const char **one, const char **many)
{
    *one = a->idx_one;
    *many = a->idx_many;
}

void ts_activity_group_of(const ts_activity *a, uint32_t *gw, uint32_t *gh, const char **label)
{
    *gw = a->grp_w ? a->grp_w : 1;
    *gh = a->grp_h ? a->grp_h : 1;
    *label = a->grp_label ? a->grp_label : "unit";
}

void ts_activity_flows(ts_activity *a, double peak_bytes_per_cycle)
{
    a->flow_peak = peak_bytes_per_cycle > 0 ? peak_bytes_per_cycle : 1;
}

void ts_activity_flow(ts_activity *a, uint64_t at, ts_act_dir d, uint64_t bytes)
{
    if (a->finished || at < a->w0 * a->window || (unsigned)d >= TS_ACT_NDIRS)
        return;
    act_win *w = win_at(a, at / a->window);
    if (w)
        w->flow[d] += bytes;
}

double ts_activity_flow_peak(const ts_activity *a) { return a->flow_peak; }

uint64_t ts_activity_total_flow(const ts_activity *a, ts_act_dir d)
{
    return (unsigned)d < TS_ACT_NDIRS ? a->total_flow[d] : 0;
}

ts_status ts_activity_superstep(ts_activity *a, const ts_act_superstep *s, ts_err *err)
{
    if (a->nss == a->cap_ss) {
        void *v = a->ss;
        if (ts_grow(&v, &a->cap_ss, a->nss + 1, sizeof *a->ss))
            return ts_err_set(err, TS_ENOMEM, "out of memory for the activity timeline");
        a->ss = v;
    }
    a->ss[a->nss++] = *s;
    return TS_OK;
}

/* Hand window w0 (of `cycles` cycles) to the callback, add it to the totals, and clear it. */
static ts_status flush_one(ts_activity *a, uint64_t cycles, ts_err *err)
{
    act_win *w = win_at(a, a->w0);
    if (!w)
        return ts_err_set(err, TS_ENOMEM, "out of memory for activity windows");
    uint64_t start = a->w0 * a->window, end = start + cycles;
    while (a->ss_seen < a->nss) {
        const ts_act_superstep *s = &a->ss[a->ss_seen];
        if (s->start + s->compute + s->exchange + s->sync > end)
            break;
        a->ss_seen++;
    }
    size_t per = (size_t)TS_ACT_NSTATES * a->nunits;
    uint32_t *idle = w->cnt + (size_t)TS_ACT_IDLE * a->nunits;
    for (uint32_t u = 0; u < a->nunits; u++) { /* cycles recorded in no state are idle */
        uint64_t sum = 0;
        for (int s = 0; s < TS_ACT_NSTATES; s++)
            sum += w->cnt[(size_t)s * a->nunits + u];
        if (sum < cycles)
            idle[u] += (uint32_t)(cycles - sum);
    }
    for (size_t i = 0; i < per; i++)
        a->total[i] += w->cnt[i];
    a->total_bytes += w->bytes;
    a->cycles += cycles;
    double joules = 0, watts = 0;
    if (a->efn && a->e.clock_hz > 0) {
        double secs = (double)cycles / a->e.clock_hz;
        joules = w->joules + a->e.static_w * secs;
        watts = joules / secs;
        a->seconds += secs;
    }
    a->total_joules += joules;
    for (int d = 0; d < TS_ACT_NDIRS; d++)
        a->total_flow[d] += w->flow[d];
    ts_status rc = TS_OK;
    if (a->fn && !a->stopped) {
        ts_act_frame f = {.index = a->frames, .start = start, .cycles = cycles, .nunits = a->nunits,
                          .supersteps = a->ss_seen, .bytes = w->bytes, .priced = a->efn != NULL,
                          .joules = joules, .watts = watts};
        for (int s = 0; s < TS_ACT_NSTATES; s++)
            f.state[s] = w->cnt + (size_t)s * a->nunits;
        memcpy(f.flow, w->flow, sizeof f.flow);
        rc = a->fn(a->ud, a, &f, err);
        if (rc != TS_OK)
            a->stopped = true;
    }
    a->frames++;
    memset(w->cnt, 0, per * sizeof *w->cnt);
    w->bytes = 0;
    w->joules = 0;
    memset(w->flow, 0, sizeof w->flow);
    a->w0++;
    return rc;
}

void ts_activity_energy(ts_activity *a, ts_act_energy_fn fn, void *ud)
{
    a->efn = fn;
    a->eud = ud;
}

double ts_activity_total_joules(const ts_activity *a) { return a->total_joules; }
double ts_activity_seconds(const ts_activity *a) { return a->seconds; }

static ts_status flush_upto(ts_activity *a, uint64_t upto, ts_err *err);

/* Window k's share of [from, upto) for spreading energy: its cycles inside the range, times (when
 * by_work) the unit-cycles its units worked (compute, network, memory) per cycle recorded in it
 * (up to upto), so that energy goes where the units worked (a superstep's sync wait gets little). */
static double weight(const ts_activity *a, uint64_t k, uint64_t from, uint64_t upto, bool by_work)
{
    uint64_t ws = k * a->window, we = ws + a->window;
    uint64_t b = from > ws ? from : ws, e = upto < we ? upto : we;
    double inside = (double)(e - b);
    if (!by_work)
        return inside;
    const uint32_t *c = a->ring[k % a->cap].cnt;
    uint64_t work = 0;
    for (uint32_t u = 0; u < a->nunits; u++)
        work += (uint64_t)c[(size_t)TS_ACT_COMPUTE * a->nunits + u] + c[(size_t)TS_ACT_NETWORK * a->nunits + u] +
                c[(size_t)TS_ACT_MEMORY * a->nunits + u];
    return inside * (double)work / (double)(e - ws); /* the counts cover the window up to e */
}

/* Ask for the energy so far and spread what was spent since the last ask over the cycles
 * [e_upto, upto), window by window, in proportion to the work done in each (weight). */
static ts_status price(ts_activity *a, uint64_t upto, ts_err *err)
{
    ts_act_energy now = a->e;
    ts_status rc = a->efn(a->eud, &now, err);
    if (rc != TS_OK)
        return rc;
    double spent = now.joules - a->e.joules;
    uint64_t lo = a->w0 * a->window, from = a->e_upto > lo ? a->e_upto : lo;
    a->e = now;
    if (upto <= from) { /* nothing between: the window holding `from` gets it */
        act_win *w = win_at(a, from / a->window);
        if (!w)
            return ts_err_set(err, TS_ENOMEM, "out of memory for activity windows");
        w->joules += spent;
        return TS_OK;
    }
    a->e_upto = upto;
    uint64_t k0 = from / a->window, k1 = (upto - 1) / a->window;
    if (!win_at(a, k1)) /* every window in between is then in the ring */
        return ts_err_set(err, TS_ENOMEM, "out of memory for activity windows");
    double total = 0;
    for (uint64_t k = k0; k <= k1; k++)
        total += weight(a, k, from, upto, true);
    bool by_work = total > 0; /* else nobody worked: by cycles */
    if (!by_work)
        total = (double)(upto - from);
    for (uint64_t k = k0; k <= k1; k++)
        a->ring[k % a->cap].joules += spent * (weight(a, k, from, upto, by_work) / total);
    return TS_OK;
}

ts_status ts_activity_advance(ts_activity *a, uint64_t upto, ts_err *err)
{
    if (a->finished || a->stopped)
        return TS_OK;
    if (a->nomem)
        return ts_err_set(err, TS_ENOMEM, "out of memory for activity windows");
    if (a->efn && (a->w0 + 1) * a->window <= upto) { /* a window ends: price up to here first */
        ts_status rc = price(a, upto, err);
        if (rc != TS_OK) {
            a->stopped = true;
            return rc;
        }
    }
    return flush_upto(a, upto, err);
}

/* Flush each window that ends at or before upto (already priced). */
static ts_status flush_upto(ts_activity *a, uint64_t upto, ts_err *err)
{
    while ((a->w0 + 1) * a->window <= upto) {
        ts_status rc = flush_one(a, a->window, err);
        if (rc != TS_OK)
            return rc;
    }
    return TS_OK;
}

ts_status ts_activity_finish(ts_activity *a, uint64_t end, ts_err *err)
{
    if (a->finished || a->stopped)
        return TS_OK;
    if (a->efn) {
        ts_status rc = price(a, end, err);
        if (rc != TS_OK) {
            a->stopped = true;
            return rc;
        }
    }
    if (a->nomem)
        return ts_err_set(err, TS_ENOMEM, "out of memory for activity windows");
    ts_status rc = flush_upto(a, end, err);
    if (rc == TS_OK && end > a->w0 * a->window)
        rc = flush_one(a, end - a->w0 * a->window, err);
    a->finished = true;
    a->ss_seen = a->nss;
    return rc;
}

uint64_t ts_activity_window(const ts_activity *a) { return a->window; }
uint32_t ts_activity_nunits(const ts_activity *a) { return a->nunits; }
const char *ts_activity_layout_name(const ts_activity *a) { return a->name ? a->name : ""; }

void ts_activity_set_title(ts_activity *a, const char *title)
{
    snprintf(a->title, sizeof a->title, "%s", title ? title : "");
}

const char *ts_activity_title(const ts_activity *a) { return a->title; }

ts_status ts_activity_column_labels(ts_activity *a, const char *const *labels, ts_err *err)
{
    if (!a->gw)
        return ts_err_set(err, TS_EINTERNAL, "column labels before the activity layout");
    if (!a->col_label && !(a->col_label = ts_calloc(a->gw, sizeof *a->col_label)))
        return ts_err_set(err, TS_ENOMEM, "out of memory for %u column labels", a->gw);
    for (uint32_t x = 0; x < a->gw; x++)
        snprintf(a->col_label[x], sizeof a->col_label[x], "%s", labels[x] ? labels[x] : "");
    return TS_OK;
}

const char *ts_activity_column_label(const ts_activity *a, uint32_t x)
{
    return a->col_label && x < a->gw && a->col_label[x][0] ? a->col_label[x] : NULL;
}

void ts_activity_grid(const ts_activity *a, uint32_t *w, uint32_t *h)
{
    *w = a->gw;
    *h = a->gh;
}

void ts_activity_pos(const ts_activity *a, uint32_t u, uint32_t *x, uint32_t *y)
{
    *x = u < a->nunits ? a->x[u] : 0;
    *y = u < a->nunits ? a->y[u] : 0;
}

const ts_act_superstep *ts_activity_supersteps(const ts_activity *a, size_t *n)
{
    *n = a->nss;
    return a->ss;
}

uint64_t ts_activity_total(const ts_activity *a, uint32_t u, ts_act_state s)
{
    if (u >= a->nunits || (unsigned)s >= TS_ACT_NSTATES)
        return 0;
    return a->total[(size_t)s * a->nunits + u];
}

uint64_t ts_activity_cycles(const ts_activity *a) { return a->cycles; }
uint64_t ts_activity_frames(const ts_activity *a) { return a->frames; }
uint64_t ts_activity_total_bytes(const ts_activity *a) { return a->total_bytes; }

void ts_activity_describer(ts_activity *a, ts_act_describe_fn fn, void *ud)
{
    a->describe = fn;
    a->describe_ud = ud;
}

bool ts_activity_describe(const ts_activity *a, uint32_t u, char *buf, size_t n)
{
    if (n)
        buf[0] = 0;
    if (!a->describe || u >= a->nunits || !n)
        return false;
    a->describe(a->describe_ud, u, buf, n);
    return true;
}

uint32_t ts_activity_unit_at(const ts_activity *a, uint32_t x, uint32_t y)
{
    if (!a->at || x >= a->gw || y >= a->gh)
        return UINT32_MAX;
    return a->at[(size_t)y * a->gw + x];
}
