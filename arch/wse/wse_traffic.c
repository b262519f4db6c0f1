/* arch/wse/wse_traffic.c — synthetic traffic programs (see wse_traffic.h and docs/noc.md). */
#include "arch/wse/wse_traffic.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/wse/wse.h"
#include "arch/wse/wse_int.h" /* the stamp's bit fields (WSE_TR_*) */
#include "arch/wse/wse_isa.h"
#include "core/alloc.h"
#include "core/spec.h"

static const char *const pattern_names[WSE_TR_NPATTERNS] = {
    "uniform", "transpose", "bitcomp", "bitrev", "shuffle", "tornado", "neighbour", "hotspot",
};

const char *ts_wse_traffic_pattern_name(int pattern)
{
    return pattern >= 0 && pattern < WSE_TR_NPATTERNS ? pattern_names[pattern] : "?";
}

void ts_wse_traffic_defaults(ts_wse_traffic *t)
{
    *t = (ts_wse_traffic){.pattern = WSE_TR_UNIFORM, .rate = 0.05, .flits = 1, .warmup = 1000, .measure = 4000,
                          .seed = 1, .hot = 0.2};
}

/* ------------------------------------------------------------------------------------------ */
/* the spec */

ts_status ts_wse_traffic_parse(ts_wse_traffic *t, const char *spec, ts_err *err)
{
    char text[256];
    if ((size_t)snprintf(text, sizeof text, "traffic:%s", spec) >= sizeof text)
        return ts_err_set(err, TS_EINPUT, "traffic: the spec '%.40s...' is too long", spec);
    static const char *const routes[] = {"xy", "yx"};
    ts_spec s;
    uint64_t flits;
    int yx;
    if (ts_spec_parse(&s, text, err) ||
        ts_spec_choice(&s, "pattern", pattern_names, WSE_TR_NPATTERNS, t->pattern, &t->pattern, err) ||
        ts_spec_f64(&s, "rate", t->rate, 1e-9, 1, &t->rate, err) || ts_spec_f64(&s, "hot", t->hot, 0, 1, &t->hot, err) ||
        ts_spec_u64(&s, "flits", t->flits, 1, 64, &flits, err) ||
        ts_spec_u64(&s, "warmup", t->warmup, 0, 1u << 30, &t->warmup, err) ||
        ts_spec_u64(&s, "measure", t->measure, 1, 1u << 30, &t->measure, err) ||
        ts_spec_u64(&s, "seed", t->seed, 0, UINT64_MAX >> 1, &t->seed, err) ||
        ts_spec_choice(&s, "route", routes, 2, t->yx, &yx, err) || ts_spec_done(&s, err))
        return TS_EINPUT;
    t->flits = (uint32_t)flits;
    t->yx = yx != 0;
    if (t->warmup + t->measure > WSE_TR_T_MASK)
        return ts_err_set(err, TS_EINPUT, "traffic: warmup + measure is %llu cycles, more than the stamp's %u",
                          (unsigned long long)(t->warmup + t->measure), WSE_TR_T_MASK);
    return TS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* patterns */

static uint32_t nbits(uint32_t n)
{
    uint32_t b = 0;
    while ((1u << b) < n)
        b++;
    return b;
}

uint32_t ts_wse_traffic_dest(int pattern, uint32_t w, uint32_t h, uint32_t id)
{
    uint32_t x = id % w, y = id / w, b = nbits(w * h), r = 0;
    switch (pattern) {
    case WSE_TR_TRANSPOSE: return x * w + y;
    case WSE_TR_BITCOMP: return (h - 1 - y) * w + (w - 1 - x);
    case WSE_TR_BITREV:
        for (uint32_t i = 0; i < b; i++)
            r |= (id >> i & 1) << (b - 1 - i);
        return r;
    case WSE_TR_SHUFFLE: return b ? ((id << 1) | (id >> (b - 1))) & ((1u << b) - 1) : id;
    case WSE_TR_TORNADO: return (y + (h + 1) / 2 - 1) % h * w + (x + (w + 1) / 2 - 1) % w;
    case WSE_TR_NEIGHBOUR: return (y + 1) % h * w + (x + 1) % w;
    default: return id;
    }
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static double unit(uint64_t *s) { return (double)(rnd(s) >> 11) / 9007199254740992.0; }

/* A packet: created at cycle `at` by PE src for PE dst. */
typedef struct pkt {
    uint64_t at;
    uint32_t src, dst;
    uint32_t vc;    /* destination routing: its virtual channel, drawn per packet */
} pkt;

/* Every packet of the run, by source then creation cycle: a Bernoulli process per source of
 * rate / flits packets a cycle over warmup + measure cycles (geometric gaps). */
static ts_status schedule(uint32_t w, uint32_t h, uint32_t vcs, const ts_wse_traffic *t, pkt **out, size_t *n,
                          ts_err *err)
{
    uint32_t npes = w * h, hot = h / 2 * w + w / 2;
    double p = t->rate / t->flits;
    uint64_t end = t->warmup + t->measure, st = t->seed * 0x9E3779B97F4A7C15ull + 88172645463325252ull;
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    /* every packet is unrolled into its core's code (a few instructions of 32 bytes): bound the
     * whole program, not only each PE's share, so a big mesh cannot ask for gigabytes */
    double expect = (double)npes * (double)end * p;
    if (expect > WSE_TR_MAX_PACKETS)
        return ts_err_set(err, TS_EINPUT, "traffic: about %.3g packets over %u PEs, more than the %u a program "
                          "holds: lower rate, warmup or measure, or use a smaller mesh", expect, npes,
                          WSE_TR_MAX_PACKETS);
    for (uint32_t s = 0; s < npes; s++) {
        uint32_t fixed = ts_wse_traffic_dest(t->pattern, w, h, s), k = 0;
        for (uint64_t at = 0;; k++) {
            double u = unit(&st);
            at += p >= 1 ? 0 : (uint64_t)floor(log1p(-u) / log1p(-p));
            if (at >= end)
                break;
            if (*n >= 2 * (size_t)WSE_TR_MAX_PACKETS) /* far above the expectation checked above */
                return ts_err_set(err, TS_EINPUT, "traffic: more than %u packets", 2 * WSE_TR_MAX_PACKETS);
            if (k >= WSE_TR_MAX_PACKETS_PER_PE)
                return ts_err_set(err, TS_EINPUT, "traffic: more than %u packets per PE: lower rate or measure",
                                  WSE_TR_MAX_PACKETS_PER_PE);
            uint32_t d = fixed;
            if (t->pattern == WSE_TR_UNIFORM || t->pattern == WSE_TR_HOTSPOT) {
                if (npes < 2)
                    break;
                if (t->pattern == WSE_TR_HOTSPOT && s != hot && unit(&st) < t->hot)
                    d = hot;
                else
                    d = (s + 1 + (uint32_t)(rnd(&st) % (npes - 1))) % npes;
            }
            if (d == s)
                break; /* a PE the pattern maps onto itself sends nothing */
            if (*n == cap && ts_grow((void **)out, &cap, *n + 1, sizeof **out))
                return ts_err_set(err, TS_ENOMEM, "out of memory building the traffic program");
            (*out)[(*n)++] = (pkt){at, s, d, vcs > 1 ? (uint32_t)(rnd(&st) % vcs) : 0};
            at++;
        }
    }
    return TS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* colours: one per destination, shared where trees agree */

enum { P_N = 1, P_S = 2, P_E = 4, P_W = 8, P_R = 16 };

typedef struct hop {
    uint32_t pe;
    uint8_t tx, rx;
} hop;

typedef struct colouring {
    uint32_t w, h, C;
    uint8_t *tx, *rx; /* owned: npes * C: the route of colour k at a PE (tx 0: unused) */
    hop *path; size_t npath, cap;
} colouring;

/* Append the hops of the path from s to d (X then Y, or Y then X) to c->path; false on no memory. */
static bool add_path(colouring *c, uint32_t s, uint32_t d, bool yx)
{
    int64_t x = s % c->w, y = s / c->w, dx = d % c->w, dy = d / c->w;
    uint8_t rx = P_R;
    for (;;) {
        uint8_t tx = P_R;
        bool xfirst = !yx || y == dy;
        if (xfirst && x != dx)
            tx = x < dx ? P_E : P_W;
        else if (y != dy)
            tx = y < dy ? P_S : P_N;
        else if (x != dx)
            tx = x < dx ? P_E : P_W;
        if (c->npath == c->cap && ts_grow((void **)&c->path, &c->cap, c->npath + 1, sizeof *c->path))
            return false;
        c->path[c->npath++] = (hop){(uint32_t)(y * c->w + x), tx, rx};
        if (tx == P_R)
            return true;
        x += (tx == P_E) - (tx == P_W);
        y += (tx == P_S) - (tx == P_N);
        rx = tx == P_E ? P_W : tx == P_W ? P_E : tx == P_S ? P_N : P_S; /* arrives from the opposite side */
    }
}

/* The lowest colour whose routes agree with every hop of c->path (merging is fine: two trees that
 * agree where they meet part only at a PE where they disagree), or -1. */
static int pick_colour(const colouring *c)
{
    for (uint32_t k = 0; k < c->C; k++) {
        bool ok = true;
        for (size_t i = 0; i < c->npath && ok; i++) {
            uint8_t have = c->tx[(size_t)c->path[i].pe * c->C + k];
            ok = !have || have == c->path[i].tx;
        }
        if (ok)
            return (int)k;
    }
    return -1;
}

/* Colour each destination's tree (packets sorted by destination); col[d] -1 for no packets. */
static ts_status colour_trees(colouring *c, const pkt *pk, size_t n, bool yx, int *col, ts_err *err)
{
    for (size_t i = 0; i < n;) {
        uint32_t d = pk[i].dst;
        c->npath = 0;
        for (; i < n && pk[i].dst == d; i++)
            if ((i == 0 || pk[i - 1].dst != d || pk[i - 1].src != pk[i].src) && !add_path(c, pk[i].src, d, yx))
                return ts_err_set(err, TS_ENOMEM, "out of memory building the traffic program");
        int k = pick_colour(c);
        if (k < 0)
            return ts_err_set(err, TS_EINPUT, "traffic: the packets for PE (%u, %u) find no free colour among %u: "
                              "with routes static per colour this pattern needs more (uniform traffic needs one per "
                              "PE); use a smaller mesh or more fabric.colours", d % c->w, d / c->w, c->C);
        col[d] = k;
        for (size_t j = 0; j < c->npath; j++) {
            size_t at = (size_t)c->path[j].pe * c->C + (size_t)k;
            c->tx[at] = c->path[j].tx;
            c->rx[at] |= c->path[j].rx;
        }
    }
    return TS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* code */

static int emit(ts_stream *s, int op, int a0, int a1, int a2, int a3)
{
    ts_insn *in = ts_stream_emit(s, (uint16_t)op);
    if (!in)
        return -1;
    in->a[0] = a0;
    in->a[1] = a1;
    in->a[2] = a2;
    in->a[3] = a3;
    return 0;
}

/* Take n wavelets of colour k on microthread th into one word (the cores' ejection, a wavelet a cycle). */
static int take(ts_stream *s, int k, int th, uint64_t n)
{
    for (; n; ) {
        int m = n > 65535 ? 65535 : (int)n;
        n -= (uint64_t)m;
        if (emit(s, WSE_OP_DSDIN, 0, k, m, 0) || emit(s, WSE_OP_DSDM, 1, 0, m, 0) ||
            emit(s, WSE_OP_FMOVS, 1, 0, th, -1))
            return -1;
    }
    return 0;
}

/* PE src's code: its packets pk[0 .. n) at their creation cycles. Each packet loads its stamp
 * (one `li`, two for several flits: the last flit's differs), waits for its cycle and sends its
 * flits; a packet whose cycle has passed (the core was stalled on a full ramp) goes at once, so
 * its latency counts the time it waited at the source. */
static int sends(ts_stream *s, const ts_wse_traffic *t, uint32_t w, const pkt *pk, size_t n, const int *col,
                 bool bydest, uint64_t cursor)
{
    uint64_t end = t->warmup + t->measure;
    for (size_t i = 0; i < n; i++) {
        uint32_t sx = pk[i].src % w, sy = pk[i].src / w, dx = pk[i].dst % w, dy = pk[i].dst / w;
        uint32_t dist = (sx > dx ? sx - dx : dx - sx) + (sy > dy ? sy - dy : dy - sy);
        uint32_t stamp = (uint32_t)(pk[i].at & WSE_TR_T_MASK) << WSE_TR_T_SHIFT |
                         (dist & WSE_TR_DIST_MASK) << WSE_TR_DIST_SHIFT |
                         (pk[i].at >= t->warmup && pk[i].at < end ? WSE_TR_MEASURED : 0);
        if (bydest && emit(s, WSE_OP_LI, 3, (int)pk[i].dst, 0, 0))
            return -1;
        if (t->flits > 1 && emit(s, WSE_OP_LI, 1, (int)(int32_t)stamp, 0, 0))
            return -1;
        if (emit(s, WSE_OP_LI, 2, (int)(int32_t)(stamp | WSE_TR_LAST), 0, 0))
            return -1;
        cursor += (t->flits > 1 ? 2u : 1u) + bydest;
        for (; cursor < pk[i].at; ) {
            uint64_t g = pk[i].at - cursor > 1000000 ? 1000000 : pk[i].at - cursor;
            if (emit(s, WSE_OP_WAIT, (int)g, 0, 0, 0))
                return -1;
            cursor += g;
        }
        for (uint32_t f = 0; f < t->flits; f++)
            if (bydest ? emit(s, WSE_OP_SENDTO, (int)pk[i].vc, 3, f + 1 < t->flits ? 1 : 2, 0)
                       : emit(s, WSE_OP_SEND, col[pk[i].dst], f + 1 < t->flits ? 1 : 2, 0, 0))
                return -1;
        cursor += t->flits;
    }
    return 0;
}

static int cmp_dst(const void *a, const void *b)
{
    const pkt *x = a, *y = b;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    return x->src < y->src ? -1 : x->src > y->src;
}

/* Every PE's stream: its routes, its stamps, its first takes, its sends, the rest of its takes.
 * Colour routing: a PE takes its one colour, col[id], on microthread 0; destination routing
 * (nvc virtual channels): channel v on microthread v. nin[id * nvc + v]: flits it takes. */
static ts_status emit_all(ts_program *p, const colouring *c, const ts_wse_traffic *t, const pkt *pk, size_t n,
                          const int *col, uint32_t nvc, const uint64_t *nin, ts_err *err)
{
    uint32_t npes = c->w * c->h;
    uint64_t end = t->warmup + t->measure;
    bool bydest = nvc > 0;
    uint32_t nq = bydest ? nvc : 1;
    for (uint32_t id = 0, i = 0; id < npes; id++) {
        ts_stream *s = ts_program_stream(p, WSE_KIND_PE, id);
        if (!s)
            goto oom;
        for (uint32_t k = 0; k < c->C && !bydest; k++) {
            size_t at = (size_t)id * c->C + k;
            if (c->tx[at] && emit(s, WSE_OP_ROUTE, (int)k, c->rx[at], c->tx[at], 0))
                goto oom;
        }
        uint64_t cursor = 0;
        for (uint32_t v = 0; v < nq; v++) {
            uint64_t left = nin[(size_t)id * nq + v];
            int k = bydest ? (int)v : col[id];
            if (left && emit(s, WSE_OP_STAMP, k, (int)t->warmup, (int)end, 0))
                goto oom;
        }
        for (uint32_t v = 0; v < nq; v++) {
            uint64_t left = nin[(size_t)id * nq + v];
            if (left && take(s, bydest ? (int)v : col[id], (int)v, left > 65535 ? 65535 : left))
                goto oom;
            cursor += left ? 3 : 0;
        }
        uint32_t j = i;
        while (j < n && pk[j].src == id)
            j++;
        if (j > i && sends(s, t, c->w, pk + i, j - i, col, bydest, cursor))
            goto oom;
        for (uint32_t v = 0; v < nq; v++) {
            uint64_t left = nin[(size_t)id * nq + v];
            if (left > 65535 && take(s, bydest ? (int)v : col[id], (int)v, left - 65535))
                goto oom;
        }
        i = j;
    }
    return TS_OK;
oom:
    return ts_err_set(err, TS_ENOMEM, "out of memory building the traffic program");
}

ts_status ts_wse_traffic_program(ts_program **out, const ts_wse_cfg *cfg, const ts_wse_traffic *t, ts_err *err)
{
    *out = NULL;
    uint32_t w = (uint32_t)cfg->width, h = (uint32_t)cfg->height, colours = (uint32_t)cfg->colours;
    uint32_t nvc = cfg->routing == WSE_ROUTE_COLOUR ? 0 : (uint32_t)cfg->vcs, nq = nvc ? nvc : 1;
    if (!w || !h || (uint64_t)w * h > (1u << 24) || colours > 32)
        return ts_err_set(err, TS_EINPUT, "traffic: a %u x %u mesh is not one traffic runs on", w, h);
    if (nvc > cfg->microthreads || !cfg->microthreads)
        return ts_err_set(err, TS_EINPUT, "traffic: a core takes each virtual channel on a microthread of its own: "
                          "%u channels (fabric.vcs) need as many pe.microthreads, not %llu", nq,
                          (unsigned long long)cfg->microthreads);
    uint32_t npes = w * h;
    if (t->pattern == WSE_TR_TRANSPOSE && w != h)
        return ts_err_set(err, TS_EINPUT, "traffic: transpose needs a square mesh, not %u x %u", w, h);
    if ((t->pattern == WSE_TR_BITREV || t->pattern == WSE_TR_SHUFFLE) && (npes & (npes - 1)))
        return ts_err_set(err, TS_EINPUT, "traffic: %s needs a power-of-two number of PEs, not %u",
                          pattern_names[t->pattern], npes);
    pkt *pk = NULL, *byd = NULL;
    size_t n = 0;
    colouring c = {w, h, colours, NULL, NULL, NULL, 0, 0};
    int *col = ts_malloc(npes * sizeof *col);
    uint64_t *nin = ts_calloc((size_t)npes * nq, sizeof *nin);
    ts_program *p = ts_program_create("wse");
    ts_status rc = TS_OK;
    c.tx = ts_calloc((size_t)npes * colours, 1);
    c.rx = ts_calloc((size_t)npes * colours, 1);
    if (!col || !nin || !p || !c.tx || !c.rx) {
        rc = ts_err_set(err, TS_ENOMEM, "out of memory building the traffic program");
        goto out;
    }
    if ((rc = schedule(w, h, nvc, t, &pk, &n, err)) != TS_OK)
        goto out;
    if (n && !(byd = ts_malloc(n * sizeof *byd))) {
        rc = ts_err_set(err, TS_ENOMEM, "out of memory building the traffic program");
        goto out;
    }
    if (n) { /* no packets (a rate too low for the window): no arrays to copy or sort */
        memcpy(byd, pk, n * sizeof *byd);
        qsort(byd, n, sizeof *byd, cmp_dst);
    }
    for (size_t i = 0; i < n; i++)
        nin[(size_t)byd[i].dst * nq + byd[i].vc] += t->flits;
    if ((!nvc && (rc = colour_trees(&c, byd, n, t->yx, col, err)) != TS_OK) ||
        (rc = emit_all(p, &c, t, pk, n, col, nvc, nin, err)) != TS_OK)
        goto out;
    char name[160];
    snprintf(name, sizeof name, "traffic: %s, rate %g flits/node/cycle, %u-flit packets, warm-up %llu, measure %llu, "
             "%s", pattern_names[t->pattern], t->rate, t->flits, (unsigned long long)t->warmup,
             (unsigned long long)t->measure, nvc ? "routed by destination" : "colour routes");
    p->workload = ts_strdup(name);
    *out = p;
    p = NULL;
out:
    ts_program_destroy(p);
    ts_free(pk);
    ts_free(byd);
    ts_free(col);
    ts_free(nin);
    ts_free(c.tx);
    ts_free(c.rx);
    ts_free(c.path);
    return rc;
}

ts_status ts_wse_traffic_load(ts_program **out, const char *spec, const ts_config *cfg, ts_err *err)
{
    *out = NULL;
    if (!cfg)
        return ts_err_set(err, TS_EINPUT, "traffic needs a wafer config: give -c CONFIG");
    if (strcmp(ts_config_arch(cfg), "wse"))
        return ts_err_set(err, TS_EINPUT, "traffic runs on wafer configs (arch wse), not arch '%s'",
                          ts_config_arch(cfg));
    const ts_wse_cfg *c = ts_config_data(cfg);
    ts_wse_traffic t;
    ts_wse_traffic_defaults(&t);
    ts_status rc = ts_wse_traffic_parse(&t, spec, err);
    if (rc == TS_OK)
        rc = ts_wse_traffic_program(out, c, &t, err);
    return rc;
}
