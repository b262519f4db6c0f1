/* workloads/wse/lower_wse.c — graph to per-PE wafer-mesh programs, layer-pipelined.
 *
 * See lower_wse.h for the contract and docs/lowering-wse.md for the placement, the routes and
 * colours, the per-PE programs and their costs. In short:
 *   1. the graph is read as a chain of stages (source, one or two stages per operator, sink),
 *      with at most one skip path open at a time (fork, FIFOs, optional projection, join); a
 *      Relu after a matrix product or a join is fused into it; Flatten and Reshape only rename;
 *   2. stages are placed west to east along the top of the mesh, skip paths in the rows below;
 *      matrix products get the fewest PEs (kr x kc split of K and N) that keep up with the
 *      pipeline's time T, the smallest T for which everything fits;
 *   3. each PE's stream is emitted directly (routes first, then code), with its weights, the
 *      graph input or an operand as data segments.
 * Every stream of activations carries one f32 per wavelet in a fixed order: the graph's
 * row-major order, except images of more than one pixel, which travel pixel by pixel (N, H, W,
 * C). */
#include "workloads/wse/lower_wse.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/wse/wse_isa.h"
#include "arch/wse/wse_target.h"
#include "core/alloc.h"
#include "core/stats.h"
#include "workloads/lower/fill.h"

/* route ports and the longest DSD: arch/wse/wse_target.h */
enum { P_N = WSE_MASK_N, P_S = WSE_MASK_S, P_E = WSE_MASK_E, P_W = WSE_MASK_W, P_R = WSE_MASK_R };
enum { PIECE = WSE_DSD_MAX_LEN };

enum { K_SOURCE, K_SINK, K_MM, K_FEED, K_RELU, K_SOFTMAX, K_MAXPOOL, K_GAP, K_ADD, K_FIFO, K_JOIN };
static const char *const kind_name[] = {"source", "sink",  "matmul", "im2col", "relu", "softmax",
                                        "maxpool", "avgpool", "add",  "fifo",   "join"};

typedef struct stage {
    int kind, node;
    int prev, prev2;  /* the stages whose output it reads (prev2: a join's skip input), -1 for none */
    int lane;         /* 0: the main band along the top rows; 1: a skip path in the rows below */
    bool fork;        /* its output also goes down to a skip path */
    uint32_t x, y0, w, h, kr, kc;
    uint32_t set;     /* colour set: colours 4 set .. 4 set + 3 */
    uint32_t cin, cout, cskip;
    uint64_t in_n, out_n, macs, mem;
    /* matmul: rows M of K inputs, N outputs; wt[k * N + n]; bias[N] or NULL */
    int64_t M, K, N;
    float *wt, *bias;
    bool relu;
    /* image stages: batch, channels, size, window, strides, pads (top, left, bottom, right) */
    int64_t B, C, H, W, kh, kw, sh, sw, pt, pl, pb, pr, Ho, Wo;
    bool in_nhwc;
    uint32_t G; /* im2col and maxpool: channel groups, one PE each */
    /* softmax: rows of L */
    int64_t L;
    /* add: vals[n] in stream order, opcode, operand order; source: vals are the input */
    float *vals;
    int vop;
    bool swap;
    uint32_t kcmin; /* matmul: fewest columns its weights need */
    uint64_t chunk; /* source and sink: elements per PE */
} stage;

typedef struct lw {
    const ts_graph *g;
    const ts_wse_target *p;
    ts_err *err;
    stage *st;
    size_t n, cap;
    uint64_t T; /* the balanced pipeline's cycles by the cost model */
} lw;

/* ---- values ---- */

static float value(const ts_graph_tensor *t, int id, uint64_t i)
{
    if (t->data) {
        float f;
        memcpy(&f, (const char *)t->data + 4 * i, 4);
        return f;
    }
    return ts_fill_f32(id, i);
}

static int bits(float f)
{
    int32_t b;
    memcpy(&b, &f, 4);
    return b;
}

static uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* ---- errors ---- */

static ts_status fail(lw *L, const ts_graph_node *n, const char *fmt, ...)
{
    char b[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    return ts_err_set(L->err, TS_EINPUT, "%s '%s': %s", ts_graph_op_name(n->op), n->name, b);
}

static stage *add_stage(lw *L, int kind, int node)
{
    if (ts_grow((void **)&L->st, &L->cap, L->n + 1, sizeof *L->st))
        return NULL;
    stage *s = &L->st[L->n++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->node = node;
    s->prev = s->prev2 = -1;
    s->w = s->h = 1;
    return s;
}

/* ---- building the chain ---- */

typedef struct cur {
    int t;         /* the tensor the stream carries */
    bool nhwc;     /* streamed pixel by pixel (a 4-d Conv output with H * W > 1) */
} cur;

/* Matrix product stage from a weight (K x N after transposition) and an optional bias. */
static ts_status mm_stage(lw *L, const ts_graph_node *n, int node, int64_t M, int64_t K, int64_t N, int wid,
                          bool wtrans, double alpha, int bid, double beta, stage **out)
{
    const ts_graph_tensor *w = ts_graph_get_tensor(L->g, wid);
    stage *s = add_stage(L, K_MM, node);
    if (!s || !(s->wt = ts_malloc((size_t)(K * N) * 4)))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++)
            s->wt[k * N + j] = (float)(alpha * value(w, wid, (uint64_t)(wtrans ? j * K + k : k * N + j)));
    if (bid >= 0) {
        const ts_graph_tensor *b = ts_graph_get_tensor(L->g, bid);
        int64_t nb = ts_graph_tensor_elems(b);
        if (nb != N && nb != 1)
            return fail(L, n, "bias '%s' has %lld values, not %lld (only a per-output bias is lowered)", b->name,
                        (long long)nb, (long long)N);
        if (!(s->bias = ts_malloc((size_t)N * 4)))
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        for (int64_t j = 0; j < N; j++)
            s->bias[j] = (float)(beta * value(b, bid, (uint64_t)(nb == 1 ? 0 : j)));
    }
    s->M = M;
    s->K = K;
    s->N = N;
    s->in_n = (uint64_t)(M * K);
    s->out_n = (uint64_t)(M * N);
    s->macs = (uint64_t)(M * K * N);
    *out = s;
    return TS_OK;
}

static bool is_param(const ts_graph_tensor *t) { return t->kind == TS_TENSOR_WEIGHT || t->kind == TS_TENSOR_CONST; }

static ts_status image_dims(lw *L, const ts_graph_node *n, const ts_graph_tensor *x, stage *s)
{
    if (x->rank != 4)
        return fail(L, n, "input '%s' has rank %d; the WSE lowering takes 4-d images (N, C, H, W)", x->name,
                    x->rank);
    s->B = x->dims[0];
    s->C = x->dims[1];
    s->H = x->dims[2];
    s->W = x->dims[3];
    return TS_OK;
}

/* Line-buffer stages (im2col, maxpool): window, strides and pads from the node; the input image
 * kept as kh rows of the padded width, channels split over G PEs (the fewest that fit; a maxpool,
 * whose max is scalar, takes at least one PE per 8 channels). */
static ts_status window(lw *L, const ts_graph_node *n, const ts_graph_tensor *x, const ts_graph_tensor *y,
                        int64_t kh, int64_t kw, stage *s)
{
    ts_status rc = image_dims(L, n, x, s);
    if (rc)
        return rc;
    const ts_graph_attrs *a = &n->attrs;
    s->in_nhwc = true;
    s->kh = kh;
    s->kw = kw;
    s->sh = a->strides[0];
    s->sw = a->strides[1];
    s->pt = a->pads[0];
    s->pl = a->pads[1];
    s->pb = a->pads[2];
    s->pr = a->pads[3];
    s->Ho = y->dims[2];
    s->Wo = y->dims[3];
    s->in_n = (uint64_t)ts_graph_tensor_elems(x);
    uint64_t row = (uint64_t)(s->kh * (s->W + s->pl + s->pr)) * 4; /* bytes per channel */
    uint64_t G = 1;
    while (G <= (uint64_t)s->C && row * cdiv((uint64_t)s->C, G) + 8 > L->p->sram_bytes)
        G++;
    if (G > (uint64_t)s->C)
        return fail(L, n, "its line buffer of %lld rows of %lld pixels needs %.1f KiB for one channel, the PE has "
                    "%.1f KiB: %.1f KiB too much", (long long)s->kh, (long long)(s->W + s->pl + s->pr),
                    (row + 8) / 1024.0, L->p->sram_bytes / 1024.0, (row + 8 - L->p->sram_bytes) / 1024.0);
    if (s->kind == K_MAXPOOL && G < cdiv((uint64_t)s->C, 8))
        G = cdiv((uint64_t)s->C, 8);
    s->G = (uint32_t)G;
    s->w = s->G;
    s->mem = row * cdiv((uint64_t)s->C, G) + 8;
    return TS_OK;
}

/* A Conv's weight rows in the feeder's order: group g of channels [c0, c1) sends, per output
 * pixel, its (i, j, c) values, so k = c0 kh kw + (i kw + j) (c1 - c0) + (c - c0). */
static int permute_k(stage *mm, const stage *f)
{
    const int64_t N = mm->N, khw = f->kh * f->kw;
    float *w = mm->wt, *t = ts_malloc((size_t)(mm->K * N) * 4);
    if (!t)
        return -1;
    for (uint32_t g = 0; g < f->G; g++) {
        int64_t c0 = g * f->C / f->G, c1 = (g + 1) * f->C / f->G, cg = c1 - c0;
        for (int64_t c = c0; c < c1; c++)
            for (int64_t ij = 0; ij < khw; ij++) {
                int64_t from = c * khw + ij, to = c0 * khw + ij * cg + (c - c0);
                memcpy(t + to * N, w + from * N, (size_t)N * 4);
            }
    }
    ts_free(w);
    mm->wt = t;
    return 0;
}

static bool reads(const ts_graph_node *n, int t)
{
    for (size_t k = 0; k < n->nin; k++)
        if (n->in[k] == t)
            return true;
    return false;
}

/* A row of a stream: one image row of pixels times channels, or the last axis. */
static void stream_row(const ts_graph_tensor *t, uint64_t *row)
{
    *row = (uint64_t)(t->rank == 4 ? t->dims[1] * t->dims[3] : t->dims[t->rank - 1]);
}

/* Open a skip path from the main stream's last stage: the stream is multicast down to the rows
 * below, where FIFO PEs hold what the main path has taken in but not yet given out (else the
 * multicast would stall and the join never get its first main value). */
static ts_status fork(lw *L, const ts_graph_node *n, int from, cur c, cur *lane, int *last)
{
    const ts_graph *g = L->g;
    const ts_graph_tensor *t = ts_graph_get_tensor(g, c.t);
    int64_t kh = 1;
    for (size_t id = (size_t)from; id < ts_graph_node_count(g); id++) {
        const ts_graph_node *m = ts_graph_get_node(g, (int)id);
        if (m->op == TS_OP_CONV && m->nin > 1)
            kh = kh > ts_graph_get_tensor(g, m->in[1])->dims[2] ? kh : ts_graph_get_tensor(g, m->in[1])->dims[2];
        if (m->op == TS_OP_MAXPOOL)
            kh = kh > m->attrs.kernel[0] ? kh : m->attrs.kernel[0];
        size_t acts = 0;
        for (size_t k = 0; k < m->nin; k++)
            acts += !is_param(ts_graph_get_tensor(g, m->in[k]));
        if (acts > 1)
            break;
    }
    uint64_t row, E = (uint64_t)ts_graph_tensor_elems(t);
    stream_row(t, &row);
    uint64_t hold = (uint64_t)(kh + 2) * row, half = (L->p->sram_bytes - 16) / 8; /* two halves per PE */
    uint64_t chunk = row / 2 ? row / 2 : 1; /* released a chunk at a time: less than the main path's lag */
    if (chunk > half)
        chunk = half;
    if (!chunk)
        return fail(L, n, "a FIFO PE of %llu bytes holds nothing", (unsigned long long)L->p->sram_bytes);
    uint64_t nf = cdiv(hold, 2 * chunk) + 1;
    L->st[last[0]].fork = true;
    lane[1] = c;
    last[1] = last[0];
    for (uint64_t i = 0; i < nf; i++) {
        stage *f = add_stage(L, K_FIFO, -1);
        if (!f)
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        f->node = from;
        f->lane = 1;
        f->prev = last[1];
        f->in_n = f->out_n = E;
        f->chunk = chunk;
        f->mem = chunk * 8 + 8;
        last[1] = (int)L->n - 1;
    }
    return TS_OK;
}

/* The join: Add, Sub or Mul of the main stream and the skip path, element by element, over G
 * PEs that each keep a slice of every pixel's channels (a Relu after it is fused). */
static ts_status join(lw *L, const ts_graph_node *n, int node, cur *lane, int *last)
{
    const ts_graph *g = L->g;
    if (n->op != TS_OP_ADD && n->op != TS_OP_SUB && n->op != TS_OP_MUL)
        return fail(L, n, "joins a skip path; the WSE lowering joins with Add, Sub or Mul only");
    const ts_graph_tensor *a = ts_graph_get_tensor(g, lane[0].t), *b = ts_graph_get_tensor(g, lane[1].t);
    const ts_graph_tensor *y = ts_graph_get_tensor(g, n->out[0]);
    int64_t E = ts_graph_tensor_elems(y);
    if (ts_graph_tensor_elems(a) != E || ts_graph_tensor_elems(b) != E || lane[0].nhwc != lane[1].nhwc)
        return fail(L, n, "'%s' and '%s' must have the same shape (no broadcasting is lowered)", a->name, b->name);
    stage *s = add_stage(L, K_JOIN, node);
    if (!s)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    s->C = y->rank == 4 ? y->dims[1] : y->dims[y->rank - 1]; /* a pixel's channels (1x1 images too) */
    s->M = E / s->C;
    s->G = (uint32_t)(s->C < 8 ? s->C : 8);
    s->vop = n->op == TS_OP_ADD ? WSE_OP_FADDS : n->op == TS_OP_SUB ? WSE_OP_FSUBS : WSE_OP_FMULS;
    s->swap = n->in[0] != lane[0].t;
    s->in_n = s->out_n = (uint64_t)E;
    s->mem = (uint64_t)cdiv((uint64_t)s->C, s->G) * 4 + 8;
    s->w = s->G;
    s->lane = 0;
    s->prev = last[0];
    s->prev2 = last[1];
    last[0] = (int)L->n - 1;
    lane[0].t = n->out[0];
    return TS_OK;
}

static ts_status build(lw *L, int input, int output)
{
    const ts_graph *g = L->g;
    cur start = {input, false};
    stage *src = add_stage(L, K_SOURCE, -1);
    const ts_graph_tensor *it = ts_graph_get_tensor(g, input);
    uint64_t nin = (uint64_t)ts_graph_tensor_elems(it);
    if (!src || !(src->vals = ts_malloc(nin * 4)))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (uint64_t i = 0; i < nin; i++)
        src->vals[i] = value(it, input, i);
    src->in_n = src->out_n = nin;
    if (it->rank == 4 && it->dims[2] * it->dims[3] > 1) { /* images leave pixel by pixel */
        int64_t C = it->dims[1], HW = it->dims[2] * it->dims[3];
        float *v = ts_malloc(nin * 4);
        if (!v)
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        for (uint64_t i = 0; i < nin; i++) { /* stream index i = (n, px, c) */
            uint64_t ch = i % (uint64_t)C, px = (i / (uint64_t)C) % (uint64_t)HW, b = i / (uint64_t)(C * HW);
            v[i] = src->vals[(b * (uint64_t)C + ch) * (uint64_t)HW + px];
        }
        ts_free(src->vals);
        src->vals = v;
        start.nhwc = true;
    }
    cur lane[2] = {start, start};
    int last[2] = {0, -1};
    int fork_t = -1; /* the tensor a skip path forked from, -1 when none is open */
    for (size_t id = 0; id < ts_graph_node_count(g); id++) {
        const ts_graph_node *n = ts_graph_get_node(g, (int)id);
        int node = (int)id;
        for (size_t k = 0; k < n->nin; k++) {
            const ts_graph_tensor *t = ts_graph_get_tensor(g, n->in[k]);
            if (t->dtype != TS_DT_F32)
                return fail(L, n, "input '%s' is %s; the WSE lowering supports f32 only (built-in workloads take dtype=f32)", t->name,
                            ts_dtype_name(t->dtype));
        }
        bool r0 = reads(n, lane[0].t), r1 = fork_t >= 0 && reads(n, lane[1].t);
        if (r0 && r1) { /* the join of the skip path */
            ts_status rc = join(L, n, node, lane, last);
            if (rc)
                return rc;
            fork_t = -1;
            continue;
        }
        if (!r0 && !r1)
            return fail(L, n, "reads none of the streams open at this point ('%s'%s%s); the WSE lowering streams "
                        "chains of operators with at most one skip path", ts_graph_get_tensor(g, lane[0].t)->name,
                        fork_t >= 0 ? " and " : "", fork_t >= 0 ? ts_graph_get_tensor(g, lane[1].t)->name : "");
        const int ln = r0 ? 0 : 1;
        cur c = lane[ln];
        size_t nc = 0;
        ts_graph_consumers(g, c.t, &nc);
        if (nc > 1 && c.t != fork_t) {
            if (ln != 0 || fork_t >= 0 || nc > 2)
                return fail(L, n, "'%s' feeds %zu operators; the WSE lowering streams chains with one skip path at a "
                            "time", ts_graph_get_tensor(g, c.t)->name, nc);
            ts_status rc = fork(L, n, (int)id, c, lane, last);
            if (rc)
                return rc;
            fork_t = c.t;
        }
        size_t first = L->n;
        int other = -1;
        size_t at = 0;
        while (at < n->nin && n->in[at] != c.t)
            at++;
        for (size_t k = 0; k < n->nin; k++) {
            const ts_graph_tensor *t = ts_graph_get_tensor(g, n->in[k]);
            if (k != at && !is_param(t))
                return fail(L, n, "input '%s' is an activation besides '%s', and not the end of an open skip path",
                            t->name, ts_graph_get_tensor(g, c.t)->name);
            if (k != at && other < 0)
                other = n->in[k];
        }
        const ts_graph_tensor *x = ts_graph_get_tensor(g, c.t);
        const ts_graph_tensor *y = ts_graph_get_tensor(g, n->out[0]);
        int64_t nx = ts_graph_tensor_elems(x), ny = ts_graph_tensor_elems(y);
        stage *prev = &L->st[last[ln]];
        stage *s = NULL;
        ts_status rc;
        bool out_nhwc = false;
        switch (n->op) {
        case TS_OP_MATMUL:
        case TS_OP_GEMM: {
            const ts_graph_attrs *a = &n->attrs;
            bool gemm = n->op == TS_OP_GEMM;
            if (at != 0 || n->nin < 2)
                return fail(L, n, "the streamed input must be the first operand");
            const ts_graph_tensor *w = ts_graph_get_tensor(g, n->in[1]);
            if (!is_param(w) || w->rank != 2)
                return fail(L, n, "operand '%s' must be a 2-d weight", w->name);
            if (gemm && a->trans_a)
                return fail(L, n, "transA is not lowered");
            if (c.nhwc)
                return fail(L, n, "its input '%s' streams pixel by pixel (a Conv output); flatten it to 1 x 1 first",
                            x->name);
            bool tb = gemm && a->trans_b;
            int64_t K = tb ? w->dims[1] : w->dims[0], N = tb ? w->dims[0] : w->dims[1];
            rc = mm_stage(L, n, node, nx / K, K, N, n->in[1], tb, gemm ? a->alpha : 1.0,
                          gemm && n->nin > 2 ? n->in[2] : -1, gemm ? a->beta : 1.0, &s);
            if (rc)
                return rc;
            break;
        }
        case TS_OP_CONV: {
            const ts_graph_attrs *a = &n->attrs;
            const ts_graph_tensor *w = ts_graph_get_tensor(g, n->in[1]);
            if (at != 0 || !is_param(w))
                return fail(L, n, "the weight must be a parameter and the image the streamed input");
            if (a->group != 1 || a->dilations[0] != 1 || a->dilations[1] != 1)
                return fail(L, n, "groups and dilations are not lowered (group %lld, dilations %lld x %lld)",
                            (long long)a->group, (long long)a->dilations[0], (long long)a->dilations[1]);
            int64_t M = w->dims[0], K = x->dims[1] * w->dims[2] * w->dims[3];
            int64_t P = x->dims[0] * y->dims[2] * y->dims[3];
            out_nhwc = y->dims[2] * y->dims[3] > 1;
            bool pointwise = w->dims[2] == 1 && w->dims[3] == 1 && a->strides[0] == 1 && a->strides[1] == 1 &&
                             !a->pads[0] && !a->pads[1] && !a->pads[2] && !a->pads[3];
            stage *f = NULL;
            if (!pointwise) { /* 1 x 1, stride 1: every pixel is its own im2col row, no feeder */
                f = add_stage(L, K_FEED, node);
                if (!f)
                    return ts_err_set(L->err, TS_ENOMEM, "out of memory");
                if ((rc = window(L, n, x, y, w->dims[2], w->dims[3], f)))
                    return rc;
                f->out_n = (uint64_t)(P * K);
            }
            size_t fi = L->n - 1;
            rc = mm_stage(L, n, node, P, K, M, n->in[1], true, 1.0, n->nin > 2 ? n->in[2] : -1, 1.0, &s);
            if (rc)
                return rc;
            if (f && permute_k(s, &L->st[fi]))
                return ts_err_set(L->err, TS_ENOMEM, "out of memory");
            break;
        }
        case TS_OP_RELU:
            if ((prev->kind == K_MM || prev->kind == K_JOIN) && !prev->relu && !prev->fork) {
                prev->relu = true; /* fused: the stream is unchanged */
                lane[ln].t = n->out[0];
                continue;
            }
            s = add_stage(L, K_RELU, node);
            if (!s)
                return ts_err_set(L->err, TS_ENOMEM, "out of memory");
            s->in_n = s->out_n = (uint64_t)nx;
            out_nhwc = c.nhwc;
            break;
        case TS_OP_ADD:
        case TS_OP_SUB:
        case TS_OP_MUL: {
            const ts_graph_tensor *o = other < 0 ? NULL : ts_graph_get_tensor(g, other);
            if (!o || ts_graph_tensor_elems(o) != nx || ny != nx)
                return fail(L, n, "the operand besides the stream must be a parameter of the same shape");
            s = add_stage(L, K_ADD, node);
            if (!s || !(s->vals = ts_malloc((size_t)nx * 4)))
                return ts_err_set(L->err, TS_ENOMEM, "out of memory");
            for (int64_t i = 0; i < nx; i++) {
                int64_t e = i; /* graph index of stream element i */
                if (c.nhwc) {
                    int64_t C = x->dims[1], H = x->dims[2], W = x->dims[3];
                    int64_t ch = i % C, px = i / C;
                    e = ((px / (H * W)) * C + ch) * H * W + px % (H * W);
                }
                s->vals[i] = value(o, other, (uint64_t)e);
            }
            s->vop = n->op == TS_OP_ADD ? WSE_OP_FADDS : n->op == TS_OP_SUB ? WSE_OP_FSUBS : WSE_OP_FMULS;
            s->swap = at != 0;
            s->in_n = s->out_n = (uint64_t)nx;
            s->mem = (uint64_t)nx * 4;
            if (s->mem > L->p->sram_bytes)
                return fail(L, n, "its operand needs %.1f KiB in one PE of %.1f KiB: %.1f KiB too much",
                            s->mem / 1024.0, L->p->sram_bytes / 1024.0, (s->mem - L->p->sram_bytes) / 1024.0);
            out_nhwc = c.nhwc;
            break;
        }
        case TS_OP_SOFTMAX: {
            int64_t axis = n->attrs.axis < 0 ? n->attrs.axis + x->rank : n->attrs.axis;
            if (axis != x->rank - 1)
                return fail(L, n, "only the last axis is lowered (axis %lld of rank %d)", (long long)n->attrs.axis,
                            x->rank);
            if (c.nhwc)
                return fail(L, n, "its input streams pixel by pixel (a Conv output)");
            s = add_stage(L, K_SOFTMAX, node);
            if (!s)
                return ts_err_set(L->err, TS_ENOMEM, "out of memory");
            s->L = x->dims[x->rank - 1];
            s->in_n = s->out_n = (uint64_t)nx;
            s->mem = (uint64_t)s->L * 4 + 4;
            if (s->mem > L->p->sram_bytes)
                return fail(L, n, "a row of %lld values needs %.1f KiB in one PE of %.1f KiB: %.1f KiB too much",
                            (long long)s->L, s->mem / 1024.0, L->p->sram_bytes / 1024.0,
                            (s->mem - L->p->sram_bytes) / 1024.0);
            break;
        }
        case TS_OP_MAXPOOL:
        case TS_OP_GLOBALAVGPOOL: {
            bool mp = n->op == TS_OP_MAXPOOL;
            s = add_stage(L, mp ? K_MAXPOOL : K_GAP, node);
            if (!s)
                return ts_err_set(L->err, TS_ENOMEM, "out of memory");
            if ((rc = image_dims(L, n, x, s)))
                return rc;
            s->in_nhwc = c.nhwc;
            s->in_n = (uint64_t)nx;
            s->out_n = (uint64_t)ny;
            if (mp) {
                if (n->attrs.ceil_mode)
                    return fail(L, n, "ceil_mode is not lowered");
                if ((rc = window(L, n, x, y, n->attrs.kernel[0], n->attrs.kernel[1], s)))
                    return rc;
                out_nhwc = s->Ho * s->Wo > 1;
            } else
                s->mem = (uint64_t)s->C * 4 + 8;
            if (s->mem > L->p->sram_bytes)
                return fail(L, n, "it keeps %.1f KiB in one PE of %.1f KiB: %.1f KiB too much", s->mem / 1024.0,
                            L->p->sram_bytes / 1024.0, (s->mem - L->p->sram_bytes) / 1024.0);
            break;
        }
        case TS_OP_FLATTEN:
        case TS_OP_RESHAPE:
            if (c.nhwc)
                return fail(L, n, "its input streams pixel by pixel (a Conv output with more than one pixel)");
            lane[ln].t = n->out[0];
            continue;
        default:
            return fail(L, n, "not supported by the WSE lowering yet");
        }
        s->node = node;
        for (size_t k = first; k < L->n; k++) {
            L->st[k].lane = ln;
            L->st[k].prev = k == first ? last[ln] : (int)k - 1;
        }
        last[ln] = (int)L->n - 1;
        lane[ln].t = n->out[0];
        lane[ln].nhwc = out_nhwc;
    }
    if (fork_t >= 0)
        return ts_err_set(L->err, TS_EINPUT, "the skip path from '%s' never joins the main stream",
                          ts_graph_get_tensor(g, fork_t)->name);
    const cur end = lane[0];
    if (end.t != output)
        return ts_err_set(L->err, TS_EINPUT, "the graph output '%s' is not the end of the chain of operators",
                          ts_graph_get_tensor(g, output)->name);
    stage *k = add_stage(L, K_SINK, -1);
    if (!k)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    k->prev = last[0];
    k->in_n = k->out_n = (uint64_t)ts_graph_tensor_elems(ts_graph_get_tensor(g, output));
    k->in_nhwc = end.nhwc;
    for (size_t i = 1; i < L->n; i++)
        for (int q = 0; q < 2; q++) {
            int pi = q ? L->st[i].prev2 : L->st[i].prev;
            if ((pi >= 0 || !q) && L->st[i].in_n != L->st[pi].out_n)
                return ts_err_set(L->err, TS_EINTERNAL, "stage %zu takes %llu wavelets, stage %d gives %llu", i,
                                  (unsigned long long)L->st[i].in_n, pi, (unsigned long long)L->st[pi].out_n);
        }
    return TS_OK;
}

/* ---- placement ---- */

/* SRAM of matmul PE with ki inputs and nb outputs: weights, input row, accumulators, bias, zero, junk. */
static uint64_t mm_mem(uint64_t ki, uint64_t nb) { return ki * nb * 4 + ki * 4 + 2 * nb * 4 + 8; }

/* Cycles per input row of a kr x kc split: the MAC loop, or the stream if it is slower. */
static uint64_t mm_cost(const stage *s, uint64_t kr, uint64_t kc)
{
    uint64_t ki = cdiv((uint64_t)s->K, kr), nb = cdiv((uint64_t)s->N, kc);
    uint64_t t = ki * (nb + 3) + (kr > 1 ? nb : 0);
    uint64_t st = (uint64_t)(s->K > s->N ? s->K : s->N);
    return t > st ? t : st;
}

/* A route a PE needs only to pass a colour through (skip paths down, along and up). */
typedef struct pass {
    uint32_t pe;
    int colour, rx, tx;
    bool done;
} pass;

static int add_pass(lw *L, pass **v, size_t *n, size_t *cap, uint32_t x, uint32_t y, uint32_t colour, int rx, int tx)
{
    if (ts_grow((void **)v, cap, *n + 1, sizeof **v))
        return -1;
    (*v)[(*n)++] = (pass){.pe = y * L->p->width + x, .colour = (int)colour, .rx = rx, .tx = tx};
    return 0;
}

static int pass_cmp(const void *a, const void *b)
{
    const pass *x = a, *y = b;
    return x->pe < y->pe ? -1 : x->pe > y->pe ? 1 : x->colour - y->colour;
}

/* The fewest PEs (kr x kc, kr <= hmax, kc <= wmax) whose rows take at most T cycles by mm_cost
 * and whose blocks fit the SRAM; false when none does. */
static bool mm_pick(const stage *s, uint64_t T, uint64_t hmax, uint64_t wmax, uint64_t sram, uint64_t *kr,
                    uint64_t *kc)
{
    const uint64_t K = (uint64_t)s->K, N = (uint64_t)s->N, rows = (uint64_t)s->M;
    uint64_t best = UINT64_MAX, bcost = UINT64_MAX;
    for (uint64_t r = 1; r <= hmax; r++) {
        uint64_t ki = cdiv(K, r);
        if (mm_mem(ki, cdiv(N, wmax)) > sram || rows * mm_cost(s, r, wmax) > T)
            continue;
        uint64_t lo = 1, hi = wmax; /* smallest kc that fits and is fast enough: both monotone in kc */
        while (lo < hi) {
            uint64_t mid = (lo + hi) / 2;
            if (mm_mem(ki, cdiv(N, mid)) <= sram && rows * mm_cost(s, r, mid) <= T)
                hi = mid;
            else
                lo = mid + 1;
        }
        uint64_t cost = mm_cost(s, r, lo);
        if (r * lo < best || (r * lo == best && cost < bcost)) {
            best = r * lo;
            bcost = cost;
            *kr = r;
            *kc = lo;
        }
    }
    return best != UINT64_MAX;
}

/* Whether every matrix product, with the fewest PEs that take its rows in at most T cycles, fits
 * its rows and, on the main band, the columns left. */
static bool fits_at(const lw *L, uint64_t T, uint32_t Hm, uint64_t avail)
{
    const ts_wse_target *p = L->p;
    uint64_t cols = 0;
    for (size_t i = 0; i < L->n; i++) {
        const stage *s = &L->st[i];
        if (s->kind != K_MM)
            continue;
        uint64_t rows = s->lane ? p->height - Hm : Hm, kr = 0, kc = 0;
        uint64_t hmax = (uint64_t)s->K < rows ? (uint64_t)s->K : rows;
        uint64_t wmax = (uint64_t)s->N < avail ? (uint64_t)s->N : avail;
        if (wmax < s->kcmin || !mm_pick(s, T, hmax, wmax, p->sram_bytes, &kr, &kc))
            return false;
        cols += s->lane ? 0 : kc;
    }
    return cols <= avail;
}

static ts_status place(lw *L, uint32_t *hm_out)
{
    const ts_wse_target *p = L->p;
    bool forks = false;
    for (size_t i = 0; i < L->n; i++)
        forks |= L->st[i].fork;
    /* with skip paths the main band takes the top half of the rows, skip paths the bottom half */
    const uint32_t Hm = forks ? p->height / 2 : p->height;
    uint32_t Hm2 = Hm; /* the rows the main band ends up using */
    *hm_out = Hm;
    if (forks && (Hm < 1 || p->colours < 16))
        return ts_err_set(L->err, TS_EINPUT, "skip paths need 16 colours and 2 rows of PEs, the config has %u and %u",
                          p->colours, p->height);
    uint64_t fixed = 0, need = 0;
    for (size_t i = 0; i < L->n; i++) {
        stage *s = &L->st[i];
        if (s->kind == K_SOURCE || s->kind == K_SINK) {
            s->chunk = p->sram_bytes / 4;
            s->w = (uint32_t)cdiv(s->in_n, s->chunk);
            s->mem = (s->in_n < s->chunk ? s->in_n : s->chunk) * 4;
        }
        if (s->kind != K_MM) {
            if (!s->lane)
                fixed += s->w;
            continue;
        }
        uint64_t rows = s->lane ? p->height - Hm : Hm;
        uint64_t kr = (uint64_t)s->K < rows ? (uint64_t)s->K : rows;
        uint64_t kc = 1;
        while (kc <= (uint64_t)s->N && mm_mem(cdiv((uint64_t)s->K, kr), cdiv((uint64_t)s->N, kc)) > p->sram_bytes)
            kc++;
        const ts_graph_node *n = ts_graph_get_node(L->g, s->node);
        if (kc > (uint64_t)s->N)
            return fail(L, n, "one output column of its weights over %llu rows of PEs needs %.1f KiB per PE, the PE "
                        "has %.1f KiB: %.1f KiB too much", (unsigned long long)kr,
                        mm_mem(cdiv((uint64_t)s->K, kr), 1) / 1024.0, p->sram_bytes / 1024.0,
                        (mm_mem(cdiv((uint64_t)s->K, kr), 1) - p->sram_bytes) / 1024.0);
        s->kcmin = (uint32_t)kc;
        if (!s->lane)
            need += kc;
    }
    if (fixed > p->width)
        return ts_err_set(L->err, TS_EINPUT, "the stages without weights need %llu columns of PEs, the mesh has %u",
                          (unsigned long long)fixed, p->width);
    uint64_t avail = p->width - fixed;
    if (need > avail) {
        uint64_t used = 0;
        for (size_t i = 0; i < L->n; i++) {
            stage *s = &L->st[i];
            if (s->kind != K_MM || s->lane)
                continue;
            if (used + s->kcmin > avail) {
                uint64_t wbytes = (uint64_t)(s->K * s->N) * 4;
                return fail(L, ts_graph_get_node(L->g, s->node),
                            "needs %u columns of PEs for its weights (%.1f KiB over columns of %llu PEs of %.1f KiB); "
                            "%llu are left of the %u-wide mesh: %llu columns short",
                            s->kcmin, wbytes / 1024.0, (unsigned long long)((uint64_t)s->K < Hm ? (uint64_t)s->K : Hm),
                            p->sram_bytes / 1024.0, (unsigned long long)(avail - used), p->width,
                            (unsigned long long)(used + s->kcmin - avail));
            }
            used += s->kcmin;
        }
    }
    /* Balance the pipeline: the smallest T such that every matrix product, given the fewest PEs
     * that take its rows in at most T cycles, still fits the columns left (skip paths below are
     * not counted: they only push a join east). Stages with few rows then get few PEs. */
    uint64_t T = 1;
    for (size_t i = 0; i < L->n; i++) {
        const stage *s = &L->st[i];
        if (s->kind == K_MM && (uint64_t)s->M * (uint64_t)(s->K > s->N ? s->K : s->N) > T)
            T = (uint64_t)s->M * (uint64_t)(s->K > s->N ? s->K : s->N);
    }
    if (!fits_at(L, T, Hm, avail)) {
        uint64_t lo = T;
        do {
            if (T > (UINT64_MAX >> 2))
                return ts_err_set(L->err, TS_EINTERNAL, "no placement of the matrix products fits");
            lo = T + 1;
            T *= 2;
        } while (!fits_at(L, T, Hm, avail));
        while (lo < T) { /* the smallest T that fits, by bisection */
            uint64_t mid = lo + (T - lo) / 2;
            if (fits_at(L, mid, Hm, avail))
                T = mid;
            else
                lo = mid + 1;
        }
    }
    for (size_t i = 0; i < L->n; i++) { /* the split at the final T */
        stage *s = &L->st[i];
        if (s->kind != K_MM)
            continue;
        uint64_t rows = s->lane ? p->height - Hm : Hm, kr = 0, kc = 0;
        uint64_t hmax = (uint64_t)s->K < rows ? (uint64_t)s->K : rows;
        uint64_t wmax = (uint64_t)s->N < avail ? (uint64_t)s->N : avail;
        if (!mm_pick(s, T, hmax, wmax, p->sram_bytes, &kr, &kc))
            return ts_err_set(L->err, TS_EINTERNAL, "no split of matmul stage %zu fits", i);
        s->kr = (uint32_t)kr;
        s->kc = (uint32_t)kc;
        s->w = s->kc;
        s->h = s->kr;
        s->mem = mm_mem(cdiv((uint64_t)s->K, kr), cdiv((uint64_t)s->N, kc));
    }
    L->T = T;
    /* the main band is as tall as its tallest stage: skip paths run just below it */
    if (forks) {
        uint32_t top = 1;
        for (size_t i = 0; i < L->n; i++)
            if (!L->st[i].lane && L->st[i].h > top)
                top = L->st[i].h;
        *hm_out = Hm2 = top;
    }
    uint32_t xm = 0, xs = 0;
    for (size_t i = 0; i < L->n; i++) {
        stage *s = &L->st[i];
        const stage *pv = s->prev >= 0 ? &L->st[s->prev] : NULL;
        if (s->lane) { /* a skip path starts in the column east of its fork */
            if (pv && !pv->lane)
                xs = pv->x + pv->w;
            s->x = xs;
            s->y0 = Hm2;
            xs = s->x + s->w;
        } else {
            s->x = xm;
            if (s->kind == K_JOIN) { /* east of the skip path's last stage too */
                const stage *sk = &L->st[s->prev2];
                if (sk->x + sk->w > s->x)
                    s->x = sk->x + sk->w;
            }
            xm = s->x + s->w;
        }
        if ((uint64_t)s->x + s->w > p->width) {
            char what[160];
            if (s->node >= 0)
                snprintf(what, sizeof what, "%s '%s'", ts_graph_op_name(ts_graph_get_node(L->g, s->node)->op),
                         ts_graph_get_node(L->g, s->node)->name);
            else
                snprintf(what, sizeof what, "the %s", kind_name[s->kind]);
            return ts_err_set(L->err, TS_EINPUT, "%s would end at column %u of the %u-wide mesh: %u columns short",
                              what, s->x + s->w, p->width, s->x + s->w - p->width);
        }
        /* colours: a main stage takes the set (0 or 1) its input does not use, a skip stage the
         * set (2 or 3) likewise; a stage's input colour is its predecessor's output colour */
        s->set = !pv ? 0 : !s->lane ? (pv->set == 0 ? 1 : 0) : (pv->set == 2 ? 3 : 2);
        s->cin = pv ? pv->cout : 0;
        s->cout = s->set * 4 + 2 + ((s->w - 1) & 1);
        if (s->kind == K_JOIN)
            s->cskip = L->st[s->prev2].cout;
    }
    return TS_OK;
}

/* Pass-through routes of every skip path: down the column of the fork's last PE, east along
 * row Hm to the skip path's first stage; from its last stage east along row Hm to the join's
 * column, up to the join's first PE; and along row 0 over the columns a main stage left empty
 * when a skip path below was wider than the main path above it. */
static ts_status skip_routes(lw *L, uint32_t Hm, pass **v, size_t *n)
{
    size_t cap = 0;
    for (size_t i = 0; i < L->n; i++) {
        const stage *s = &L->st[i];
        if (s->lane && s->prev >= 0 && !L->st[s->prev].lane) { /* first stage of a skip path */
            const stage *f = &L->st[s->prev];
            uint32_t x = f->x + f->w - 1;
            for (uint32_t y = 1; y < Hm; y++)
                if (add_pass(L, v, n, &cap, x, y, f->cout, P_N, P_S))
                    return TS_ENOMEM;
            if (add_pass(L, v, n, &cap, x, Hm, f->cout, P_N, P_E))
                return TS_ENOMEM;
        }
        if (!s->lane && s->prev >= 0) { /* a main stage pushed east by a wide skip path */
            const stage *pv = &L->st[s->prev];
            for (uint32_t x = pv->x + pv->w; x < s->x; x++)
                if (add_pass(L, v, n, &cap, x, 0, s->cin, P_W, P_E))
                    return TS_ENOMEM;
        }
        if (s->kind == K_JOIN) {
            const stage *k = &L->st[s->prev2];
            for (uint32_t x = k->x + k->w; x < s->x; x++)
                if (add_pass(L, v, n, &cap, x, Hm, k->cout, P_W, P_E))
                    return TS_ENOMEM;
            if (add_pass(L, v, n, &cap, s->x, Hm, k->cout, P_W, P_N))
                return TS_ENOMEM;
            for (uint32_t y = Hm - 1; y >= 1; y--)
                if (add_pass(L, v, n, &cap, s->x, y, k->cout, P_S, P_N))
                    return TS_ENOMEM;
        }
    }
    if (*n)
        qsort(*v, *n, sizeof **v, pass_cmp);
    return TS_OK;
}

/* ---- emission ---- */

typedef struct gen {
    ts_stream *s;
    bool oom;
    struct pass *pass; /* pass-through routes by PE, emitted first in a PE's stream */
    size_t npass;
} gen;

static void op(gen *G, int code, int n, ...)
{
    ts_insn *in = ts_stream_emit(G->s, (uint16_t)code);
    if (!in) {
        G->oom = true;
        return;
    }
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        in->a[i] = va_arg(ap, int);
    va_end(ap);
}

static int pc(const gen *G) { return (int)G->s->n; }

/* Register conventions: r15 holds 0; DSD registers 12 and 13 are the helpers'. */
static void in_to_mem(gen *G, uint32_t cin, uint64_t addr, uint64_t n, int stride)
{
    while (n) {
        int k = n > PIECE ? PIECE : (int)n;
        op(G, WSE_OP_DSDIN, 3, 12, (int)cin, k);
        op(G, WSE_OP_DSDM, 4, 13, (int)addr, k, stride);
        op(G, WSE_OP_FMOVS, 4, 13, 12, -1, -1);
        addr += (uint64_t)(k * stride) * 4;
        n -= (uint64_t)k;
    }
}

static void in_to_out(gen *G, uint32_t cin, uint32_t cout, uint64_t n)
{
    while (n) {
        int k = n > PIECE ? PIECE : (int)n;
        op(G, WSE_OP_DSDIN, 3, 12, (int)cin, k);
        op(G, WSE_OP_DSDOUT, 4, 13, (int)cout, k, 0);
        op(G, WSE_OP_FMOVS, 4, 13, 12, -1, -1);
        n -= (uint64_t)k;
    }
}

static void mem_to_out(gen *G, uint64_t addr, uint64_t n, uint32_t cout)
{
    while (n) {
        int k = n > PIECE ? PIECE : (int)n;
        op(G, WSE_OP_DSDM, 4, 12, (int)addr, k, 1);
        op(G, WSE_OP_DSDOUT, 4, 13, (int)cout, k, 0);
        op(G, WSE_OP_FMOVS, 4, 13, 12, -1, -1);
        addr += (uint64_t)k * 4;
        n -= (uint64_t)k;
    }
}

/* A counted loop: li rc, n at the head; close with loop_end(G, rc, head). */
static int loop_head(gen *G, int rc, int64_t n)
{
    op(G, WSE_OP_LI, 2, rc, (int)n);
    return pc(G);
}

static void loop_end(gen *G, int rc, int head)
{
    op(G, WSE_OP_ADDI, 3, rc, rc, -1);
    op(G, WSE_OP_BNZ, 2, rc, head);
}

/* G(i) and R(i) of a stage's colour set */
static uint32_t gcol(const stage *s, uint32_t j) { return s->set * 4 + 2 + (j & 1); }
static uint32_t rcol(const stage *s, uint32_t i) { return s->set * 4 + (i & 1); }
/* ports of a chain's output route: east, and down too from the last PE of a fork */
static int outp(const stage *s, bool last) { return P_E | (last && s->fork ? P_S : 0); }

static ts_stream *pe_stream(ts_program *P, const ts_wse_target *p, uint32_t x, uint32_t y, gen *G)
{
    uint32_t id = y * p->width + x;
    G->s = ts_program_stream(P, WSE_KIND_PE, id);
    if (!G->s) {
        G->oom = true;
        return NULL;
    }
    size_t lo = 0, hi = G->npass;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (G->pass[mid].pe < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < G->npass && G->pass[lo].pe == id; lo++) {
        op(G, WSE_OP_ROUTE, 3, G->pass[lo].colour, G->pass[lo].rx, G->pass[lo].tx);
        G->pass[lo].done = true;
    }
    return G->s;
}

/* Source PE j and sink PE j: a chain along the row. */
static ts_status emit_io(lw *L, ts_program *P, size_t si, gen *G)
{
    stage *s = &L->st[si];
    for (uint32_t j = 0; j < s->w; j++) {
        uint64_t a = j * s->chunk, b = a + s->chunk < s->in_n ? a + s->chunk : s->in_n;
        if (!pe_stream(P, L->p, s->x + j, s->y0, G))
            return TS_ENOMEM;
        uint32_t ci = j ? gcol(s, j - 1) : s->cin, co = gcol(s, j);
        bool last = j + 1 == s->w;
        if (s->kind == K_SOURCE) {
            if (j)
                op(G, WSE_OP_ROUTE, 3, (int)ci, P_W, P_R);
            op(G, WSE_OP_ROUTE, 3, (int)co, P_R, outp(s, last));
            in_to_out(G, ci, co, a);
            mem_to_out(G, 0, b - a, co);
            if (ts_program_add_segment(P, WSE_KIND_PE, s->x + j, 0, s->vals + a, (uint32_t)((b - a) * 4),
                                       L->err))
                return L->err->status;
        } else {
            op(G, WSE_OP_ROUTE, 3, (int)ci, P_W, P_R);
            if (!last)
                op(G, WSE_OP_ROUTE, 3, (int)co, P_R, P_E);
            in_to_mem(G, ci, 0, b - a, 1);
            if (!last)
                in_to_out(G, ci, co, s->in_n - b);
        }
    }
    return TS_OK;
}

static void single_routes(gen *G, const stage *s)
{
    op(G, WSE_OP_ROUTE, 3, (int)s->cin, P_W, P_R);
    op(G, WSE_OP_ROUTE, 3, (int)s->cout, P_R, outp(s, true));
}

static ts_status emit_mm(lw *L, ts_program *P, size_t si, gen *G)
{
    const stage *s = &L->st[si];
    const uint64_t K = (uint64_t)s->K, N = (uint64_t)s->N;
    float *blk = ts_malloc((size_t)mm_mem(cdiv(K, s->kr), cdiv(N, s->kc)));
    if (!blk)
        return TS_ENOMEM;
    for (uint32_t i = 0; i < s->kr; i++)
        for (uint32_t j = 0; j < s->kc; j++) {
            uint64_t k0 = i * K / s->kr, k1 = (i + 1) * K / s->kr, n0 = j * N / s->kc, n1 = (j + 1) * N / s->kc;
            uint64_t ki = k1 - k0, nb = n1 - n0;
            int XA = (int)(ki * nb * 4), AA = XA + (int)ki * 4, BA = AA + (int)nb * 4, ZA = BA + (int)nb * 4,
                JA = ZA + 4;
            /* with room for two whole input rows, row m + 1 is received on microthread 0 while
             * row m is computed */
            const bool dbl = mm_mem(ki, nb) + 8 * K <= L->p->sram_bytes;
            const int XB0 = JA + 4, XB1 = XB0 + (int)K * 4;
            bool bias = i == 0 && s->bias;
            if (!pe_stream(P, L->p, s->x + j, s->y0 + i, G))
                goto oom;
            /* routes: the input row is broadcast east along row 0 and south down every column */
            if (i == 0)
                op(G, WSE_OP_ROUTE, 3, (int)s->cin, P_W,
                   P_R | (j + 1 < s->kc ? P_E : 0) | (s->kr > 1 ? P_S : 0));
            else
                op(G, WSE_OP_ROUTE, 3, (int)s->cin, P_N, P_R | (i + 1 < s->kr ? P_S : 0));
            if (i > 0)
                op(G, WSE_OP_ROUTE, 3, (int)rcol(s, i), P_R, P_N);
            if (i + 1 < s->kr)
                op(G, WSE_OP_ROUTE, 3, (int)rcol(s, i + 1), P_S, P_R);
            if (i == 0 && j > 0)
                op(G, WSE_OP_ROUTE, 3, (int)gcol(s, j - 1), P_W, P_R);
            if (i == 0)
                op(G, WSE_OP_ROUTE, 3, (int)gcol(s, j), P_R, outp(s, j + 1 == s->kc));
            op(G, WSE_OP_LI, 2, 15, 0);
            op(G, WSE_OP_DSDM, 4, 4, 0, (int)nb, 1);
            op(G, WSE_OP_DSDM, 4, 2, AA, (int)nb, 1);
            op(G, WSE_OP_DSDM, 4, 3, bias ? BA : ZA, (int)nb, bias ? 1 : 0);
            if (dbl) {
                op(G, WSE_OP_DSDM, 4, 14, JA, 1, 0); /* a one-element move: waits for a thread */
                op(G, WSE_OP_DSDM, 4, 15, ZA, 1, 0);
                op(G, WSE_OP_DSDIN, 3, 7, (int)s->cin, (int)K);
                op(G, WSE_OP_DSDM, 4, 8, XB0, (int)K, 1);
                op(G, WSE_OP_FMOVS, 4, 8, 7, 0, -1);
                op(G, WSE_OP_LI, 2, 11, XB0);
                op(G, WSE_OP_LI, 2, 12, XB1);
            }
            int row = loop_head(G, 10, s->M);
            if (dbl) {
                op(G, WSE_OP_FMOVS, 4, 14, 15, 0, -1); /* row m is in */
                op(G, WSE_OP_ADDI, 3, 13, 10, -1);
                op(G, WSE_OP_BZ, 2, 13, pc(G) + 3); /* no row after the last */
                op(G, WSE_OP_DSDBASE, 3, 8, 12, 0);
                op(G, WSE_OP_FMOVS, 4, 8, 7, 0, -1);
            } else {
                if (k0)
                    in_to_mem(G, s->cin, (uint64_t)JA, k0, 0);
                in_to_mem(G, s->cin, (uint64_t)XA, ki, 1);
                if (K > k1)
                    in_to_mem(G, s->cin, (uint64_t)JA, K - k1, 0);
            }
            op(G, WSE_OP_FMOVS, 4, 2, 3, -1, -1);
            /* acc += W[k][n0..n1) * x[k], unrolled by 8 */
            enum { U = 8 };
            if (dbl)
                op(G, WSE_OP_ADDI, 3, 1, 11, (int)k0 * 4);
            else
                op(G, WSE_OP_LI, 2, 1, XA);
            op(G, WSE_OP_LI, 2, 2, 0);
            if (ki / U) {
                int mac = loop_head(G, 3, (int64_t)(ki / U));
                for (int u = 0; u < U; u++) {
                    op(G, WSE_OP_LD, 3, 4, 1, 4 * u);
                    op(G, WSE_OP_DSDBASE, 3, 4, 2, u * (int)nb * 4);
                    op(G, WSE_OP_FMACS, 6, 2, 2, 4, 4, -1, -1);
                }
                op(G, WSE_OP_ADDI, 3, 1, 1, 4 * U);
                op(G, WSE_OP_ADDI, 3, 2, 2, U * (int)nb * 4);
                loop_end(G, 3, mac);
            }
            for (int u = 0; u < (int)(ki % U); u++) {
                op(G, WSE_OP_LD, 3, 4, 1, 4 * u);
                op(G, WSE_OP_DSDBASE, 3, 4, 2, u * (int)nb * 4);
                op(G, WSE_OP_FMACS, 6, 2, 2, 4, 4, -1, -1);
            }
            /* partial sums: north along the column, added on the way */
            if (s->kr > 1) {
                if (i + 1 == s->kr) {
                    op(G, WSE_OP_DSDOUT, 4, 5, (int)rcol(s, i), (int)nb, 0);
                    op(G, WSE_OP_FMOVS, 4, 5, 2, -1, -1);
                } else if (i > 0) {
                    op(G, WSE_OP_DSDOUT, 4, 5, (int)rcol(s, i), (int)nb, 0);
                    op(G, WSE_OP_DSDIN, 3, 6, (int)rcol(s, i + 1), (int)nb);
                    op(G, WSE_OP_FADDS, 5, 5, 2, 6, -1, -1);
                } else {
                    op(G, WSE_OP_DSDIN, 3, 6, (int)rcol(s, 1), (int)nb);
                    op(G, WSE_OP_FADDS, 5, 2, 2, 6, -1, -1);
                }
            }
            if (i == 0) {
                if (s->relu) { /* a negative sign bit stores +0 */
                    op(G, WSE_OP_LI, 2, 6, AA);
                    int rl = loop_head(G, 7, (int64_t)nb);
                    op(G, WSE_OP_LD, 3, 5, 6, 0);
                    op(G, WSE_OP_BLT, 3, 5, 15, rl + 3);
                    op(G, WSE_OP_BR, 1, rl + 4);
                    op(G, WSE_OP_ST, 3, 15, 6, 0);
                    op(G, WSE_OP_ADDI, 3, 6, 6, 4);
                    loop_end(G, 7, rl);
                }
                /* the row chain: pass on the outputs of the columns to the west, then ours */
                in_to_out(G, gcol(s, j - 1), gcol(s, j), n0);
                mem_to_out(G, (uint64_t)AA, nb, gcol(s, j));
            }
            if (dbl) { /* swap the row buffers */
                op(G, WSE_OP_MOV, 2, 13, 11);
                op(G, WSE_OP_MOV, 2, 11, 12);
                op(G, WSE_OP_MOV, 2, 12, 13);
            }
            loop_end(G, 10, row);
            for (uint64_t k = 0; k < ki; k++)
                for (uint64_t n = 0; n < nb; n++)
                    blk[k * nb + n] = s->wt[(k0 + k) * N + n0 + n];
            uint32_t id = (s->y0 + i) * L->p->width + s->x + j;
            if (ts_program_add_segment(P, WSE_KIND_PE, id, 0, blk, (uint32_t)(ki * nb * 4), L->err) ||
                (bias && ts_program_add_segment(P, WSE_KIND_PE, id, (uint64_t)BA, s->bias + n0, (uint32_t)(nb * 4),
                                                L->err))) {
                ts_free(blk);
                return L->err->status;
            }
        }
    ts_free(blk);
    return TS_OK;
oom:
    ts_free(blk);
    return TS_ENOMEM;
}

/* One padded row pr of a line-buffer stage's input into ring slot pr mod kh: a pad row gets the
 * pad word (0, or -FLT_MAX for a maxpool), a real row its pixels' channels [c0, c1). */
static void lb_row(gen *G, const stage *s, int64_t pr, int64_t c0, int64_t c1, int RB, int PADW, int JUNK)
{
    const int64_t cg = c1 - c0;
    uint64_t base = (uint64_t)((pr % s->kh) * RB + s->pl * cg * 4);
    if (pr < s->pt || pr >= s->pt + s->H) {
        for (uint64_t left = (uint64_t)(s->W * cg), a = base; left;) {
            int k = left > PIECE ? PIECE : (int)left;
            op(G, WSE_OP_DSDM, 4, 13, (int)a, k, 1);
            op(G, WSE_OP_DSDM, 4, 12, PADW, k, 0);
            op(G, WSE_OP_FMOVS, 4, 13, 12, -1, -1);
            a += (uint64_t)k * 4;
            left -= (uint64_t)k;
        }
        return;
    }
    if (cg == s->C) {
        in_to_mem(G, s->cin, base, (uint64_t)(s->W * cg), 1);
        return;
    }
    op(G, WSE_OP_LI, 2, 1, (int)base);
    op(G, WSE_OP_DSDM, 4, 2, 0, (int)cg, 1);
    int l = loop_head(G, 3, s->W);
    if (c0) {
        op(G, WSE_OP_DSDIN, 3, 0, (int)s->cin, (int)c0);
        op(G, WSE_OP_DSDM, 4, 1, JUNK, (int)c0, 0);
        op(G, WSE_OP_FMOVS, 4, 1, 0, -1, -1);
    }
    op(G, WSE_OP_DSDIN, 3, 0, (int)s->cin, (int)cg);
    op(G, WSE_OP_DSDBASE, 3, 2, 1, 0);
    op(G, WSE_OP_FMOVS, 4, 2, 0, -1, -1);
    if (s->C > c1) {
        op(G, WSE_OP_DSDIN, 3, 0, (int)s->cin, (int)(s->C - c1));
        op(G, WSE_OP_DSDM, 4, 1, JUNK, (int)(s->C - c1), 0);
        op(G, WSE_OP_FMOVS, 4, 1, 0, -1, -1);
    }
    op(G, WSE_OP_ADDI, 3, 1, 1, (int)cg * 4);
    loop_end(G, 3, l);
}

/* im2col feeder and maxpool: G PEs in a row, PE g keeping channels [c0, c1) of the last kh
 * padded rows (ring slots of Wp pixels x cg channels) and sending, per output pixel, after the
 * values of the PEs west of it: its im2col part in (i, j, c) order (kh moves of kw cg elements),
 * or the max of each of its channels. The code is unrolled over output rows, so ring slots are
 * immediates; rows are received just before the first output row that needs them. */
static ts_status emit_lb(lw *L, ts_program *P, size_t si, gen *G)
{
    const stage *s = &L->st[si];
    const bool mp = s->kind == K_MAXPOOL;
    const int64_t Wp = s->W + s->pl + s->pr;
    for (uint32_t g = 0; g < s->G; g++) {
        const int64_t c0 = g * s->C / s->G, c1 = (g + 1) * s->C / s->G, cg = c1 - c0;
        const int RB = (int)(Wp * cg * 4), PADW = (int)(s->kh * RB), JUNK = PADW + 4;
        if (!pe_stream(P, L->p, s->x + g, s->y0, G))
            return TS_ENOMEM;
        op(G, WSE_OP_ROUTE, 3, (int)s->cin, P_W, P_R | (g + 1 < s->G ? P_E : 0));
        if (g)
            op(G, WSE_OP_ROUTE, 3, (int)gcol(s, g - 1), P_W, P_R);
        op(G, WSE_OP_ROUTE, 3, (int)gcol(s, g), P_R, outp(s, g + 1 == s->G));
        op(G, WSE_OP_LI, 2, 15, 0);
        int b = loop_head(G, 10, s->B);
        int64_t have = 0;
        for (int64_t oy = 0; oy < s->Ho; oy++) {
            for (; have < oy * s->sh + s->kh; have++)
                lb_row(G, s, have, c0, c1, RB, PADW, JUNK);
            op(G, WSE_OP_LI, 2, 1, 0);
            if (!mp) {
                op(G, WSE_OP_DSDM, 4, 2, 0, (int)(s->kw * cg), 1);
                op(G, WSE_OP_DSDOUT, 4, 3, (int)gcol(s, g), (int)(s->kw * cg), 0);
            }
            int lx = loop_head(G, 3, s->Wo);
            in_to_out(G, gcol(s, g - 1), gcol(s, g), (uint64_t)(mp ? c0 : c0 * s->kh * s->kw));
            if (!mp)
                for (int64_t i = 0; i < s->kh; i++) {
                    op(G, WSE_OP_DSDBASE, 3, 2, 1, (int)(((oy * s->sh + i) % s->kh) * RB));
                    op(G, WSE_OP_FMOVS, 4, 3, 2, -1, -1);
                }
            else {
                op(G, WSE_OP_MOV, 2, 5, 1);
                int lc = loop_head(G, 4, cg);
                op(G, WSE_OP_LD, 3, 8, 5, (int)(((oy * s->sh) % s->kh) * RB));
                for (int64_t i = 0; i < s->kh; i++)
                    for (int64_t j = 0; j < s->kw; j++) {
                        if (!i && !j)
                            continue;
                        op(G, WSE_OP_LD, 3, 9, 5, (int)(((oy * s->sh + i) % s->kh) * RB + j * cg * 4));
                        op(G, WSE_OP_FSUB, 3, 11, 9, 8);
                        op(G, WSE_OP_BLT, 3, 11, 15, pc(G) + 2);
                        op(G, WSE_OP_MOV, 2, 8, 9);
                    }
                op(G, WSE_OP_SEND, 2, (int)gcol(s, g), 8);
                op(G, WSE_OP_ADDI, 3, 5, 5, 4);
                loop_end(G, 4, lc);
            }
            op(G, WSE_OP_ADDI, 3, 1, 1, (int)(s->sw * cg * 4));
            loop_end(G, 3, lx);
        }
        for (; have < s->pt + s->H; have++) /* rows no output needs are still taken off the fabric */
            lb_row(G, s, have, c0, c1, RB, PADW, JUNK);
        loop_end(G, 10, b);
        if (mp) { /* pad columns and the pad word: -FLT_MAX */
            float *neg = ts_malloc((size_t)PADW + 4);
            if (!neg)
                return TS_ENOMEM;
            for (int i = 0; i <= PADW / 4; i++)
                neg[i] = -FLT_MAX;
            ts_status rc = ts_program_add_segment(P, WSE_KIND_PE, s->y0 * L->p->width + s->x + g, 0, neg,
                                                  (uint32_t)PADW + 4, L->err);
            ts_free(neg);
            if (rc)
                return rc;
        }
    }
    return TS_OK;
}

/* The join: G PEs along row 0, the main stream from the west and the skip path from the south
 * (up the first PE's column), both multicast east along the row. Every PE takes both streams
 * element by element (so no PE waits on one stream while another PE waits on the other): the
 * channels before and after its slice into a junk word, its slice into memory; then the fused
 * Relu, and the row chain. */
static ts_status emit_join(lw *L, ts_program *P, size_t si, gen *G)
{
    const stage *s = &L->st[si];
    for (uint32_t g = 0; g < s->G; g++) {
        const int64_t c0 = g * s->C / s->G, c1 = (g + 1) * s->C / s->G, cg = c1 - c0;
        const int AA = 0, JUNK = (int)cg * 4;
        const bool more = g + 1 < s->G;
        if (!pe_stream(P, L->p, s->x + g, 0, G))
            return TS_ENOMEM;
        op(G, WSE_OP_ROUTE, 3, (int)s->cin, P_W, P_R | (more ? P_E : 0));
        op(G, WSE_OP_ROUTE, 3, (int)s->cskip, g ? P_W : P_S, P_R | (more ? P_E : 0));
        if (g)
            op(G, WSE_OP_ROUTE, 3, (int)gcol(s, g - 1), P_W, P_R);
        op(G, WSE_OP_ROUTE, 3, (int)gcol(s, g), P_R, outp(s, !more));
        op(G, WSE_OP_LI, 2, 15, 0);
        int a = s->swap ? 1 : 0, b = s->swap ? 0 : 1; /* d = main op skip, or skip op main */
        int px = loop_head(G, 10, s->M);
        const int64_t part[3][2] = {{0, c0}, {c0, c1}, {c1, s->C}};
        for (int q = 0; q < 3; q++) {
            int len = (int)(part[q][1] - part[q][0]);
            if (!len)
                continue;
            op(G, WSE_OP_DSDIN, 3, 0, (int)s->cin, len);
            op(G, WSE_OP_DSDIN, 3, 1, (int)s->cskip, len);
            op(G, WSE_OP_DSDM, 4, 2, q == 1 ? AA : JUNK, len, q == 1 ? 1 : 0);
            op(G, s->vop, 5, 2, a, b, -1, -1);
        }
        if (s->relu) {
            op(G, WSE_OP_LI, 2, 6, AA);
            int rl = loop_head(G, 7, cg);
            op(G, WSE_OP_LD, 3, 5, 6, 0);
            op(G, WSE_OP_BLT, 3, 5, 15, rl + 3);
            op(G, WSE_OP_BR, 1, rl + 4);
            op(G, WSE_OP_ST, 3, 15, 6, 0);
            op(G, WSE_OP_ADDI, 3, 6, 6, 4);
            loop_end(G, 7, rl);
        }
        in_to_out(G, gcol(s, g - 1), gcol(s, g), (uint64_t)c0);
        mem_to_out(G, AA, (uint64_t)cg, gcol(s, g));
        loop_end(G, 10, px);
    }
    return TS_OK;
}

static ts_status emit_single(lw *L, ts_program *P, size_t si, gen *G)
{
    const stage *s = &L->st[si];
    if (!pe_stream(P, L->p, s->x, s->y0, G))
        return TS_ENOMEM;
    uint32_t id = s->y0 * L->p->width + s->x;
    single_routes(G, s);
    op(G, WSE_OP_LI, 2, 15, 0);
    switch (s->kind) {
    case K_RELU: {
        int l = loop_head(G, 10, (int64_t)s->in_n);
        op(G, WSE_OP_RECV, 2, 1, (int)s->cin);
        op(G, WSE_OP_BLT, 3, 1, 15, l + 4);
        op(G, WSE_OP_SEND, 2, (int)s->cout, 1);
        op(G, WSE_OP_BR, 1, l + 5);
        op(G, WSE_OP_SEND, 2, (int)s->cout, 15);
        loop_end(G, 10, l);
        break;
    }
    case K_FIFO: {
        /* two halves of `chunk` values: chunk k is received on microthread 0 into half k mod 2
         * while chunk k - 1 leaves from the other half on microthread 1. Before a receive
         * overwrites a half, a one-element move on thread 1 waits for the send from it. */
        const int n = (int)s->chunk, ZERO = 8 * n, JUNK = ZERO + 4;
        op(G, WSE_OP_DSDM, 4, 14, JUNK, 1, 0);
        op(G, WSE_OP_DSDM, 4, 15, ZERO, 1, 0);
        uint64_t K = cdiv(s->in_n, s->chunk);
        for (uint64_t k = 0; k <= K; k++) {
            if (k >= 2)
                op(G, WSE_OP_FMOVS, 4, 14, 15, 1, -1);
            if (k < K) {
                int len = (int)(k + 1 < K ? s->chunk : s->in_n - k * s->chunk);
                op(G, WSE_OP_DSDIN, 3, 0, (int)s->cin, len);
                op(G, WSE_OP_DSDM, 4, 1, (int)(k & 1) * n * 4, len, 1);
                op(G, WSE_OP_FMOVS, 4, 1, 0, 0, -1);
            } else
                op(G, WSE_OP_FMOVS, 4, 14, 15, 0, -1); /* the last receive is done */
            if (k >= 1) {
                int len = (int)(k < K ? s->chunk : s->in_n - (k - 1) * s->chunk);
                op(G, WSE_OP_DSDM, 4, 2, (int)((k - 1) & 1) * n * 4, len, 1);
                op(G, WSE_OP_DSDOUT, 4, 3, (int)s->cout, len, 0);
                op(G, WSE_OP_FMOVS, 4, 3, 2, k < K ? 1 : -1, -1);
            }
        }
        break;
    }
    case K_ADD:
        for (uint64_t a = 0; a < s->in_n; a += PIECE) {
            int k = s->in_n - a > PIECE ? PIECE : (int)(s->in_n - a);
            op(G, WSE_OP_DSDIN, 3, 0, (int)s->cin, k);
            op(G, WSE_OP_DSDM, 4, 1, (int)(a * 4), k, 1);
            op(G, WSE_OP_DSDOUT, 4, 2, (int)s->cout, k, 0);
            op(G, s->vop, 5, 2, s->swap ? 1 : 0, s->swap ? 0 : 1, -1, -1);
        }
        if (ts_program_add_segment(P, WSE_KIND_PE, id, 0, s->vals, (uint32_t)(s->in_n * 4), L->err))
            return L->err->status;
        break;
    case K_SOFTMAX: {
        /* per row: keep it, max, exp(x - max) and the sum, 1/sum (bit-trick seed and 4 Newton
         * steps), scale on the way out. exp: y = x log2 e = n + f with n = round(y) by the
         * 1.5 * 2^23 trick, f in [-1/2, 1/2]; 2^f by a degree-7 polynomial; 2^n in the exponent
         * bits ((n + 127) * 2^23); y < -126 gives 0. */
        const int RL = (int)s->L * 4;
        const float magic = 12582912.0f;
        op(G, WSE_OP_FLI, 2, 14, bits(1.44269504f));
        op(G, WSE_OP_FLI, 2, 13, bits(magic));
        op(G, WSE_OP_LI, 2, 12, bits(magic));
        op(G, WSE_OP_FLI, 2, 11, bits(126.0f));
        op(G, WSE_OP_LI, 2, 9, 1 << 23);
        int row = loop_head(G, 10, (int64_t)(s->in_n / (uint64_t)s->L));
        in_to_mem(G, s->cin, 0, (uint64_t)s->L, 1);
        op(G, WSE_OP_LD, 3, 1, 15, 0);
        if (s->L > 1) {
            op(G, WSE_OP_LI, 2, 6, 4);
            int m = loop_head(G, 7, s->L - 1);
            op(G, WSE_OP_LD, 3, 2, 6, 0);
            op(G, WSE_OP_FSUB, 3, 3, 2, 1);
            op(G, WSE_OP_BLT, 3, 3, 15, m + 4);
            op(G, WSE_OP_MOV, 2, 1, 2);
            op(G, WSE_OP_ADDI, 3, 6, 6, 4);
            loop_end(G, 7, m);
        }
        op(G, WSE_OP_FLI, 2, 8, bits(0.0f));
        op(G, WSE_OP_LI, 2, 6, 0);
        int e = loop_head(G, 7, s->L);
        op(G, WSE_OP_LD, 3, 2, 6, 0);
        op(G, WSE_OP_FSUB, 3, 2, 2, 1);
        op(G, WSE_OP_FMUL, 3, 2, 2, 14);
        op(G, WSE_OP_LI, 2, 3, 0);
        op(G, WSE_OP_FADD, 3, 4, 2, 11);
        int skip = pc(G);
        op(G, WSE_OP_BLT, 3, 4, 15, 0); /* y < -126: 0; target patched below */
        op(G, WSE_OP_FADD, 3, 3, 2, 13);
        op(G, WSE_OP_SUB, 3, 4, 3, 12);
        op(G, WSE_OP_FSUB, 3, 3, 3, 13);
        op(G, WSE_OP_FSUB, 3, 2, 2, 3);
        static const double c[8] = {1.0, 0.6931471805599453, 0.2402265069591007, 0.05550410866482158,
                                    0.009618129107628477, 0.0013333558146428443, 1.5403530393381606e-4,
                                    1.525273380405984e-5};
        op(G, WSE_OP_FLI, 2, 3, bits((float)c[7]));
        for (int k = 6; k >= 0; k--) {
            op(G, WSE_OP_FLI, 2, 5, bits((float)c[k]));
            op(G, WSE_OP_FMUL, 3, 3, 3, 2);
            op(G, WSE_OP_FADD, 3, 3, 3, 5);
        }
        op(G, WSE_OP_ADDI, 3, 4, 4, 127);
        op(G, WSE_OP_MUL, 3, 4, 4, 9);
        op(G, WSE_OP_FMUL, 3, 3, 3, 4);
        if (!G->oom)
            G->s->insn[skip].a[2] = pc(G);
        op(G, WSE_OP_ST, 3, 3, 6, 0);
        op(G, WSE_OP_FADD, 3, 8, 8, 3);
        op(G, WSE_OP_ADDI, 3, 6, 6, 4);
        loop_end(G, 7, e);
        op(G, WSE_OP_LI, 2, 1, 0x7EF311C7);
        op(G, WSE_OP_SUB, 3, 1, 1, 8);
        op(G, WSE_OP_FLI, 2, 5, bits(2.0f));
        for (int k = 0; k < 4; k++) {
            op(G, WSE_OP_FMUL, 3, 2, 8, 1);
            op(G, WSE_OP_FSUB, 3, 2, 5, 2);
            op(G, WSE_OP_FMUL, 3, 1, 1, 2);
        }
        op(G, WSE_OP_ST, 3, 1, 15, RL);
        op(G, WSE_OP_DSDM, 4, 0, 0, (int)s->L, 1);
        op(G, WSE_OP_DSDM, 4, 1, RL, (int)s->L, 0);
        op(G, WSE_OP_DSDOUT, 4, 2, (int)s->cout, (int)s->L, 0);
        op(G, WSE_OP_FMULS, 5, 2, 0, 1, -1, -1);
        loop_end(G, 10, row);
        break;
    }
    case K_GAP: {
        const int AC = 0, INV = (int)s->C * 4, ZA = INV + 4;
        op(G, WSE_OP_FLI, 2, 14, bits((float)(1.0 / (double)(s->H * s->W))));
        op(G, WSE_OP_ST, 3, 14, 15, INV);
        int b = loop_head(G, 10, s->B);
        if (s->in_nhwc) {
            op(G, WSE_OP_DSDM, 4, 1, AC, (int)s->C, 1);
            op(G, WSE_OP_DSDM, 4, 2, ZA, (int)s->C, 0);
            op(G, WSE_OP_FMOVS, 4, 1, 2, -1, -1);
            op(G, WSE_OP_DSDIN, 3, 0, (int)s->cin, (int)s->C);
            int l = loop_head(G, 2, s->H * s->W);
            op(G, WSE_OP_FADDS, 5, 1, 1, 0, -1, -1);
            loop_end(G, 2, l);
            op(G, WSE_OP_DSDM, 4, 2, INV, (int)s->C, 0);
            op(G, WSE_OP_DSDOUT, 4, 3, (int)s->cout, (int)s->C, 0);
            op(G, WSE_OP_FMULS, 5, 3, 1, 2, -1, -1);
        } else {
            int lc = loop_head(G, 2, s->C);
            op(G, WSE_OP_FLI, 2, 8, bits(0.0f));
            int l = loop_head(G, 3, s->H * s->W);
            op(G, WSE_OP_RECV, 2, 9, (int)s->cin);
            op(G, WSE_OP_FADD, 3, 8, 8, 9);
            loop_end(G, 3, l);
            op(G, WSE_OP_FMUL, 3, 8, 8, 14);
            op(G, WSE_OP_SEND, 2, (int)s->cout, 8);
            loop_end(G, 2, lc);
        }
        loop_end(G, 10, b);
        break;
    }
    default:
        break;
    }
    return TS_OK;
}

/* ---- entry points ---- */

static void free_stages(lw *L)
{
    for (size_t i = 0; i < L->n; i++) {
        ts_free(L->st[i].wt);
        ts_free(L->st[i].bias);
        ts_free(L->st[i].vals);
    }
    ts_free(L->st);
}

void ts_lower_wse_report_free(ts_lower_wse_report *rep)
{
    if (!rep)
        return;
    ts_free(rep->stages);
    memset(rep, 0, sizeof *rep);
}

ts_status ts_lower_wse(const ts_graph *g, const ts_wse_target *p, ts_program **out, ts_lower_wse_report *rep,
                       ts_err *err)
{
    *out = NULL;
    if (rep)
        memset(rep, 0, sizeof *rep);
    if (p->colours < 8)
        return ts_err_set(err, TS_EINPUT, "the WSE lowering needs 8 colours, the config has %u", p->colours);
    if (!p->width || !p->height || p->sram_bytes < 64)
        return ts_err_set(err, TS_EINPUT, "the WSE lowering needs a mesh and SRAM");
    int input = -1, output = -1;
    for (size_t t = 0; t < ts_graph_tensor_count(g); t++) {
        const ts_graph_tensor *T = ts_graph_get_tensor(g, (int)t);
        size_t nc = 0;
        ts_graph_consumers(g, (int)t, &nc);
        if (T->kind == TS_TENSOR_INPUT && nc) {
            if (input >= 0)
                return ts_err_set(err, TS_EINPUT, "the graph has inputs '%s' and '%s'; the WSE lowering streams one",
                                  ts_graph_get_tensor(g, input)->name, T->name);
            input = (int)t;
        }
        if (T->is_output) {
            if (output >= 0)
                return ts_err_set(err, TS_EINPUT, "the graph has outputs '%s' and '%s'; the WSE lowering keeps one",
                                  ts_graph_get_tensor(g, output)->name, T->name);
            output = (int)t;
        }
    }
    if (input < 0 || output < 0)
        return ts_err_set(err, TS_EINPUT, "the graph needs one data input and one output");
    const ts_graph_tensor *it = ts_graph_get_tensor(g, input);
    if (it->dtype != TS_DT_F32)
        return ts_err_set(err, TS_EINPUT, "input '%s' is %s; the WSE lowering supports f32 only (built-in workloads take dtype=f32)", it->name,
                          ts_dtype_name(it->dtype));
    lw L = {.g = g, .p = p, .err = err};
    ts_status rc = build(&L, input, output);
    uint32_t Hm = 0;
    gen G = {0};
    if (!rc)
        rc = place(&L, &Hm);
    if (!rc && (rc = skip_routes(&L, Hm, &G.pass, &G.npass)) == TS_ENOMEM)
        ts_err_set(err, TS_ENOMEM, "out of memory");
    ts_program *P = NULL;
    if (!rc && !(P = ts_program_create("wse")))
        rc = ts_err_set(err, TS_ENOMEM, "out of memory");
    if (!rc) {
        char desc[160];
        snprintf(desc, sizeof desc, "%s, layer-pipelined over %zu stages", ts_graph_name(g), L.n);
        P->workload = ts_strdup(desc);
    }
    for (size_t i = 0; !rc && i < L.n; i++) {
        int k = L.st[i].kind;
        rc = k == K_SOURCE || k == K_SINK ? emit_io(&L, P, i, &G)
             : k == K_MM                  ? emit_mm(&L, P, i, &G)
             : k == K_FEED || k == K_MAXPOOL ? emit_lb(&L, P, i, &G)
             : k == K_JOIN                   ? emit_join(&L, P, i, &G)
                                             : emit_single(&L, P, i, &G);
        if (!rc && G.oom)
            rc = TS_ENOMEM;
        if (rc == TS_ENOMEM && !err->status)
            ts_err_set(err, TS_ENOMEM, "out of memory emitting the program");
    }
    for (size_t i = 0; !rc && i < G.npass; i++) /* PEs that only pass colours through */
        if (!G.pass[i].done && !pe_stream(P, p, G.pass[i].pe % p->width, G.pass[i].pe / p->width, &G))
            rc = ts_err_set(err, TS_ENOMEM, "out of memory");
    if (!rc && G.oom)
        rc = ts_err_set(err, TS_ENOMEM, "out of memory emitting the program");
    ts_free(G.pass);
    if (!rc && rep) {
        rep->stages = ts_calloc(L.n, sizeof *rep->stages);
        if (!rep->stages)
            rc = ts_err_set(err, TS_ENOMEM, "out of memory");
        for (size_t i = 0; !rc && i < L.n; i++) {
            const stage *s = &L.st[i];
            rep->stages[i] = (ts_lower_wse_stage){.node = s->node, .what = kind_name[s->kind], .skip = s->lane != 0,
                                                  .x = s->x, .y = s->y0, .w = s->w,
                                                  .h = s->h, .kr = s->kr, .kc = s->kc, .macs = s->macs,
                                                  .mem_bytes = s->mem, .in_elems = s->in_n, .out_elems = s->out_n,
                                                  .colour_in = s->cin, .colour_out = s->cout};
            rep->pes_used += s->w * s->h;
            if (s->y0 + s->h > rep->height_used)
                rep->height_used = s->y0 + s->h;
            if (s->x + s->w > rep->width_used)
                rep->width_used = s->x + s->w;
        }
        if (!rc) {
            rep->nstages = L.n;
            rep->colours_used = Hm < p->height ? 16 : L.n > 1 ? 8 : 4;
            const stage *k = &L.st[L.n - 1];
            rep->out_tensor = output;
            rep->out_nhwc = k->in_nhwc;
            const ts_graph_tensor *o = ts_graph_get_tensor(g, output);
            for (int d = 0; d < 4 && d < o->rank; d++)
                rep->out_dims[d] = o->dims[d];
            rep->sink_x = k->x;
            rep->sink_chunk = k->chunk;
        }
    }
    free_stages(&L);
    if (rc) {
        ts_program_destroy(P);
        if (rep)
            ts_lower_wse_report_free(rep);
        return rc;
    }
    *out = P;
    return TS_OK;
}

int ts_lower_wse_locate(const ts_lower_wse_report *rep, int tensor, uint64_t elem, uint32_t *x, uint32_t *y,
                        uint64_t *addr)
{
    if (!rep || tensor != rep->out_tensor || !rep->sink_chunk)
        return -1;
    uint64_t s = elem;
    if (rep->out_nhwc) { /* graph index (n, c, h, w) to stream index (n, h, w, c) */
        uint64_t C = (uint64_t)rep->out_dims[1], HW = (uint64_t)(rep->out_dims[2] * rep->out_dims[3]);
        uint64_t px = elem % HW, ch = (elem / HW) % C, n = elem / (HW * C);
        s = (n * HW + px) * C + ch;
    }
    *x = rep->sink_x + (uint32_t)(s / rep->sink_chunk);
    *y = 0;
    *addr = (s % rep->sink_chunk) * 4;
    return 0;
}

ts_status ts_lower_wse_regions(const ts_lower_wse_report *rep, ts_region **out, size_t *n, ts_err *err)
{
    *out = NULL;
    *n = 0;
    if (!rep->nstages)
        return TS_OK;
    ts_region *g = ts_malloc(rep->nstages * sizeof *g);
    if (!g)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    for (size_t i = 0; i < rep->nstages; i++)
        g[i] = (ts_region){rep->stages[i].x, rep->stages[i].y, rep->stages[i].w, rep->stages[i].h};
    *out = g;
    *n = rep->nstages;
    return TS_OK;
}

ts_status ts_lower_wse_stage_stats(const ts_lower_wse_report *rep, uint32_t mesh_width, ts_results *res,
                                   const ts_energy_table *energy, ts_err *err)
{
    static const char *const cols[] = {"stage",       "node",         "x",         "y",       "w",
                                       "h",           "pes",          "macs",      "busy",    "stall",
                                       "wavelets_in", "wavelets_out", "bandwidth", "busiest", "link_wavelets",
                                       "energy"};
    static const char *const units[] = {"", "", "", "", "", "", "", "", "cycles", "cycles", "", "", "GB/s",
                                        "cycles", "", "uJ"};
    enum { NC = sizeof cols / sizeof *cols };
    ts_stats *stats = res->stats;
    const ts_stat *busy = ts_stats_find(stats, WSE_STAT_BUSY_PER_PE);
    const ts_stat *stall = ts_stats_find(stats, WSE_STAT_STALL_PER_PE);
    const ts_stat *link[4] = {ts_stats_find(stats, WSE_STAT_LINK_NORTH), ts_stats_find(stats, WSE_STAT_LINK_SOUTH),
                              ts_stats_find(stats, WSE_STAT_LINK_EAST), ts_stats_find(stats, WSE_STAT_LINK_WEST)};
    const ts_stat *ev = ts_stats_find(stats, WSE_STAT_REGION_EVENTS);
    double secs = ts_results_time_s(res);
    int tb = ts_stats_table(stats, "layers", "one row per stage of the WSE lowering (docs/lowering-wse.md); node -1 is "
                            "the input source, the output sink or a skip path's FIFO; bandwidth is its wavelets in "
                            "and out (4 B each) over the run, energy the dynamic energy of its PEs and routers",
                            NC, cols, units);
    if (tb < 0)
        return ts_err_set(err, TS_ENOMEM, "cannot add the layer table");
    for (size_t i = 0; i < rep->nstages; i++) {
        const ts_lower_wse_stage *s = &rep->stages[i];
        double b = 0, st = 0, mx = 0, lk = 0;
        bool have = busy && stall && busy->kind == TS_STAT_ARRAY && stall->kind == TS_STAT_ARRAY;
        for (uint32_t y = s->y; have && y < s->y + s->h; y++)
            for (uint32_t x = s->x; x < s->x + s->w; x++) {
                size_t id = (size_t)y * mesh_width + x;
                if (id >= busy->n || id >= stall->n) {
                    have = false;
                    break;
                }
                b += busy->v[id];
                st += stall->v[id];
                mx = busy->v[id] > mx ? busy->v[id] : mx;
                for (int q = 0; q < 4; q++)
                    lk += link[q] && id < link[q]->n ? link[q]->v[id] : 0;
            }
        double j = ts_results_price_rows(ev, i, 1, energy);
        double row[NC] = {(double)i, s->what && !strcmp(s->what, "fifo") ? -1 : (double)s->node, s->x, s->y, s->w,
                          s->h, (double)s->w * s->h, (double)s->macs, have ? b : -1, have ? st : -1,
                          (double)s->in_elems, (double)s->out_elems,
                          secs > 0 ? 4.0 * (double)(s->in_elems + s->out_elems) / secs / 1e9 : 0, have ? mx : -1,
                          have ? lk : -1, j >= 0 ? j * 1e6 : -1};
        if (ts_stats_row(stats, tb, row))
            return ts_err_set(err, TS_ENOMEM, "cannot add the layer table");
    }
    return TS_OK;
}

/* ---- the lowering interface (workloads/lower/lower.h) ---- */

typedef struct wse_lowering {
    ts_wse_target t;
    ts_lower_wse_report rep;
    ts_region *regions; /* owned: the stages as regions, for the run */
} wse_lowering;

static ts_status wse_create(const ts_config *cfg, const ts_lower_opts *opts, void **state, ts_err *err)
{
    (void)opts;
    wse_lowering *s = ts_calloc(1, sizeof *s);
    if (!s)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    *state = s;
    return ts_wse_target_from_config(cfg, &s->t, err);
}

static ts_status wse_lower(void *state, const ts_graph *g, ts_program **out, ts_err *err)
{
    wse_lowering *s = state;
    return ts_lower_wse(g, &s->t, out, &s->rep, err);
}

static ts_status wse_prepare(void *state, ts_run_opts *ro, ts_err *err)
{
    wse_lowering *s = state;
    size_t n = 0;
    ts_free(s->regions);
    s->regions = NULL;
    ts_status rc = ts_lower_wse_regions(&s->rep, &s->regions, &n, err);
    ro->regions = s->regions;
    ro->nregions = n;
    return rc;
}

static ts_status wse_attribute(void *state, ts_results *res, const ts_energy_table *energy, ts_err *err)
{
    const wse_lowering *s = state;
    return s->rep.nstages && res->stats ? ts_lower_wse_stage_stats(&s->rep, s->t.width, res, energy, err) : TS_OK;
}

static void wse_destroy(void *state)
{
    wse_lowering *s = state;
    ts_lower_wse_report_free(&s->rep);
    ts_free(s->regions);
    ts_free(s);
}

const ts_lowering ts_wse_lowering = {
    .arch = "wse",
    .name = "wafer-mesh layer pipeline",
    .create = wse_create,
    .lower = wse_lower,
    .prepare = wse_prepare,
    .attribute = wse_attribute,
    .destroy = wse_destroy,
};
