/* workloads/wse/lower_wse_build.c — the stage graph: the graph walked as a chain of stages.
 *
 * The source first (the graph input, images reordered to pixel order), then the nodes in graph
 * order: each reads the main stream or the open skip path; the first tensor read by two nodes
 * opens a skip path (fork: FIFO PEs below the main band), the node that reads both streams closes
 * it (join), except a tensor read by two projections that make a SwiGLU (one product and one gate,
 * lower_wse_elem.c) or by three or more (an attention, lower_wse_attn.c); every other node becomes
 * its operator's stages (lower_wse_stages.c). The sink last.
 */
#include <string.h>

#include "core/alloc.h"
#include "workloads/wse/lower_wse_int.h"

/* Where the walk is: the tensor each lane streams (0: main, 1: the skip path), the last stage of
 * each lane, and the tensor the open skip path forked from (-1 when none is open). */
typedef struct walk {
    lw_cur lane[2];
    int last[2];
    int fork_t;
    bool *done; /* nodes an attention stage has taken */
} walk;

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

/* The source: the graph input as data, reordered pixel by pixel if it is an image. */
static ts_status build_source(lw *L, int input, lw_cur *start)
{
    const ts_graph *g = L->g;
    *start = (lw_cur){input, false, NULL};
    lw_stage *src = ts_lww_add_stage(L, K_SOURCE, -1);
    const ts_graph_tensor *it = ts_graph_get_tensor(g, input);
    uint64_t nin = (uint64_t)ts_graph_tensor_elems(it);
    if (!src || !(src->vals = ts_malloc(nin * 4)))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (uint64_t i = 0; i < nin; i++)
        src->vals[i] = ts_fill_value_f32(it, input, i);
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
        start->nhwc = true;
    }
    return TS_OK;
}

/* The tallest window (kh) of the operators from node `from` up to the first that reads two
 * activations (the join). */
static int64_t tallest_window(const ts_graph *g, int from)
{
    int64_t kh = 1;
    for (size_t id = (size_t)from; id < ts_graph_node_count(g); id++) {
        const ts_graph_node *m = ts_graph_get_node(g, (int)id);
        if (m->op == TS_OP_CONV && m->nin > 1) { /* a dilated window spans (k - 1) d + 1 rows */
            int64_t k = (ts_graph_get_tensor(g, m->in[1])->dims[2] - 1) * m->attrs.dilations[0] + 1;
            kh = kh > k ? kh : k;
        }
        if (m->op == TS_OP_MAXPOOL)
            kh = kh > m->attrs.kernel[0] ? kh : m->attrs.kernel[0];
        size_t acts = 0;
        for (size_t k = 0; k < m->nin; k++)
            acts += !lw_is_param(ts_graph_get_tensor(g, m->in[k]));
        if (acts > 1)
            break;
    }
    return kh;
}

/* A FIFO PE of two halves of chunk values at the end of the skip path (node: the fork's first
 * reader); nonzero when out of memory. */
static int add_fifo(lw *L, int node, uint64_t chunk, walk *w)
{
    uint64_t E = L->st[w->last[1]].out_n;
    lw_stage *f = ts_lww_add_stage(L, K_FIFO, -1);
    if (!f)
        return -1;
    f->node = node;
    f->lane = 1;
    f->prev = w->last[1];
    f->in_n = f->out_n = E;
    f->chunk = chunk;
    f->mem = chunk * 8 + 8;
    const ts_graph_tensor *t = ts_graph_get_tensor(L->g, w->lane[1].t);
    f->B = t->rank == 4 ? t->dims[0] : 1; /* images: chunks restart at each (emit_fifo) */
    w->last[1] = (int)L->n - 1;
    return 0;
}

/* Open a skip path from the main stream's last stage: the stream is multicast down to the rows
 * below, where FIFO PEs hold what the main path has taken in but not yet given out (else the
 * multicast would stall and the join never get its first main value). */
static ts_status fork(lw *L, const ts_graph_node *n, int from, lw_cur c, walk *w)
{
    const ts_graph_tensor *t = ts_graph_get_tensor(L->g, c.t);
    int64_t kh = tallest_window(L->g, from);
    uint64_t row;
    stream_row(t, &row);
    uint64_t hold = (uint64_t)(kh + 2) * row, half = (L->t->sram_bytes - 16) / 8; /* two halves per PE */
    uint64_t chunk = row / 2 ? row / 2 : 1; /* released a chunk at a time: less than the main path's lag */
    if (chunk > half)
        chunk = half;
    if (!chunk)
        return ts_lower_fail(L->err, n, "a FIFO PE of %llu bytes holds nothing", (unsigned long long)L->t->sram_bytes);
    uint64_t nf = ts_geom_cdiv(hold, 2 * chunk) + 1;
    L->st[w->last[0]].fork = true;
    L->st[w->last[0]].row = row;
    w->lane[1] = c;
    w->last[1] = w->last[0];
    for (uint64_t i = 0; i < nf; i++)
        if (add_fifo(L, from, chunk, w))
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    return TS_OK;
}

/* Before the join n: more FIFOs at the end of the skip path while they keep less than how far
 * ahead the main path reads (ts_lww_lag: the (kh + 2) rows of the rule above count windows only). */
static ts_status top_up(lw *L, const ts_graph_node *n, walk *w)
{
    int f = w->last[1], first = -1;
    while (f >= 0 && L->st[f].lane) {
        first = f;
        f = L->st[f].prev;
    }
    if (f < 0 || first < 0)
        return TS_OK;
    uint64_t chunk = L->st[first].kind == K_FIFO ? L->st[first].chunk : 1;
    const uint64_t half = (L->t->sram_bytes - 16) / 8, E = L->st[f].out_n;
    int64_t nseq = 1; /* an attention over a batch of sequences on the main path: it reads one at a time */
    for (int i = w->last[0]; i >= 0 && i != f; i = L->st[i].prev)
        if (L->st[i].kind == K_ATTN && L->st[i].nseq > 1)
            nseq = L->st[i].nseq;
    const bool seqs = nseq > 1 && E % (uint64_t)nseq == 0;
    /* chunks restart at each sequence (as at each image), the last of a sequence short: one
     * sequence's room less a chunk, so a chunk more */
    const uint64_t lag = ts_lww_lag(L, f, w->last[0]) + (seqs ? chunk : 0), room = ts_lww_room(L, f, w->last[1]);
    if ((lag >= E || seqs) && room < lag && half > chunk) { /* the main path reads the whole stream (or a
                                                             * whole sequence) first (an attention): the
                                                             * fewest PEs, each as full as it goes */
        uint64_t nf = ts_geom_cdiv(lag - room, 2 * half);
        chunk = ts_geom_cdiv(lag - room, 2 * nf);
    }
    for (int k = 0; ts_lww_room(L, f, w->last[1]) < lag; k++) {
        if (k > 4096)
            return ts_lower_fail(L->err, n, "its skip path cannot keep the %llu values its main path reads ahead",
                                 (unsigned long long)lag);
        if (add_fifo(L, L->st[first].node, chunk, w))
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    }
    for (int i = w->last[1]; seqs && i >= 0 && L->st[i].lane; i = L->st[i].prev)
        if (L->st[i].kind == K_FIFO)
            L->st[i].B = nseq;
    return TS_OK;
}

/* The join: Add, Sub or Mul of the main stream and the skip path, element by element, over G
 * PEs that each keep a slice of every pixel's channels (a Relu after it is fused). */
static ts_status join(lw *L, const ts_graph_node *n, int node, walk *w)
{
    const ts_graph *g = L->g;
    ts_status trc = top_up(L, n, w);
    if (trc)
        return trc;
    {
        const ts_graph_tensor *a = ts_graph_get_tensor(g, w->lane[0].t);
        if ((n->op == TS_OP_CONCAT && (w->lane[0].rows || w->lane[1].rows)) ||
            !ts_lww_same_rows(w->lane[0].rows, w->lane[1].rows, ts_lww_rows(a, NULL)))
            return ts_lower_fail(L->err, n, "joins '%s' and '%s', whose rows stream in different orders (a Transpose "
                                 "of the rows on one path)", a->name, ts_graph_get_tensor(g, w->lane[1].t)->name);
    }
    if (n->op == TS_OP_CONCAT) {
        ts_status rc = ts_lww_concat_stage(L, n, node, w->lane[0].t, w->lane[1].t, w->lane[0].nhwc);
        if (rc)
            return rc;
        L->st[L->n - 1].prev = w->last[0];
        L->st[L->n - 1].prev2 = w->last[1];
        w->last[0] = (int)L->n - 1;
        w->lane[0].t = n->out[0];
        w->fork_t = -1;
        return TS_OK;
    }
    if (n->op != TS_OP_ADD && n->op != TS_OP_SUB && n->op != TS_OP_MUL)
        return ts_lower_fail(L->err, n, "joins a skip path; the WSE lowering joins with Add, Sub, Mul or Concat only");
    const ts_graph_tensor *a = ts_graph_get_tensor(g, w->lane[0].t), *b = ts_graph_get_tensor(g, w->lane[1].t);
    const ts_graph_tensor *y = ts_graph_get_tensor(g, n->out[0]);
    int64_t E = ts_graph_tensor_elems(y);
    if (ts_graph_tensor_elems(a) != E || ts_graph_tensor_elems(b) != E || w->lane[0].nhwc != w->lane[1].nhwc)
        return ts_lower_fail(L->err, n, "'%s' and '%s' must have the same shape (no broadcasting is lowered)", a->name,
                             b->name);
    lw_stage *s = ts_lww_add_stage(L, K_JOIN, node);
    if (!s)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    uint64_t px, ch; /* the pixels, and the channels of one (1x1 images too) */
    ts_geom_pixels_channels(y, &px, &ch);
    s->C = (int64_t)ch;
    s->M = (int64_t)px;
    s->G = (uint32_t)(s->C < 8 ? s->C : 8);
    s->in_nhwc = w->lane[0].nhwc || y->rank >= 4; /* an image's pixels (1 x 1 too), not rows: place
                                                    * gives a join of rows one PE when T allows */
    s->vop = n->op == TS_OP_ADD ? WSE_OP_FADDS : n->op == TS_OP_SUB ? WSE_OP_FSUBS : WSE_OP_FMULS;
    s->swap = n->in[0] != w->lane[0].t;
    s->in_n = s->out_n = (uint64_t)E;
    s->mem = (uint64_t)ts_geom_cdiv((uint64_t)s->C, s->G) * 4 + 8;
    s->w = s->G;
    s->lane = 0;
    s->prev = w->last[0];
    s->prev2 = w->last[1];
    w->last[0] = (int)L->n - 1;
    w->lane[0].t = n->out[0];
    w->fork_t = -1;
    return TS_OK;
}

/* Which of o's inputs is the stream (o->at) and which parameter goes with it (o->other): every
 * input besides the stream must be a parameter. */
static ts_status operands(lw *L, lw_op *o)
{
    const ts_graph *g = L->g;
    const ts_graph_node *n = o->n;
    o->at = 0;
    o->other = -1;
    while (o->at < n->nin && n->in[o->at] != o->c.t)
        o->at++;
    for (size_t k = 0; k < n->nin; k++) {
        const ts_graph_tensor *t = ts_graph_get_tensor(g, n->in[k]);
        if (k != o->at && !lw_is_param(t))
            return ts_lower_fail(L->err, n,
                                 "input '%s' is an activation besides '%s', and not the end of an open skip path",
                                 t->name, ts_graph_get_tensor(g, o->c.t)->name);
        if (k != o->at && o->other < 0)
            o->other = n->in[k];
    }
    o->x = ts_graph_get_tensor(g, o->c.t);
    o->y = ts_graph_get_tensor(g, n->out[0]);
    o->nx = ts_graph_tensor_elems(o->x);
    o->ny = ts_graph_tensor_elems(o->y);
    return TS_OK;
}

/* Whether node n takes the rows of its stream x one by one, each on its own, so that it works on
 * a stream whose rows travel in another order than the tensor's (lw_cur.rows): products by a
 * weight, elementwise functions, operators over the last axis, a parameter repeated within each
 * row, a Slice of the last axis, a Reshape or Flatten that keeps the last axis. */
static bool row_by_row(const ts_graph *g, const ts_graph_node *n, const ts_graph_tensor *x)
{
    const ts_graph_tensor *y = ts_graph_get_tensor(g, n->out[0]);
    const int64_t W = x->dims[x->rank - 1];
    switch (n->op) {
    case TS_OP_GEMM: /* a bias of one row only */
        if (n->nin > 2 && ts_graph_tensor_elems(ts_graph_get_tensor(g, n->in[2])) > y->dims[y->rank - 1])
            return false;
        return true;
    case TS_OP_MATMUL:
    case TS_OP_RELU:
    case TS_OP_CLIP:
    case TS_OP_SIGMOID:
    case TS_OP_TANH:
    case TS_OP_GELU:
    case TS_OP_LAYERNORM:
    case TS_OP_RMSNORM:
    case TS_OP_SOFTMAX: return true;
    case TS_OP_ADD:
    case TS_OP_SUB:
    case TS_OP_MUL:
    case TS_OP_DIV:
        for (size_t k = 0; k < n->nin; k++) {
            const ts_graph_tensor *p = ts_graph_get_tensor(g, n->in[k]);
            if (p == x)
                continue;
            int64_t np = ts_graph_tensor_elems(p);
            if (np != 1 && (np != W || p->dims[p->rank - 1] != W))
                return false;
        }
        return true;
    case TS_OP_SLICE:
        for (int k = 0; k + 1 < x->rank && k < n->attrs.nslice; k++)
            if (n->attrs.starts[k] != 0 || n->attrs.ends[k] < x->dims[k] || n->attrs.steps[k] != 1)
                return false;
        return true;
    case TS_OP_RESHAPE:
    case TS_OP_FLATTEN: return y->rank >= 1 && y->dims[y->rank - 1] == W;
    default: return ts_lww_is_hardswish(n->op);
    }
}

/* Whether tensor t reaches an attention (a tensor read by three or more operators) through
 * operators that work row by row, each the only reader of the tensor before it. */
static bool feeds_attention(const ts_graph *g, int t)
{
    for (int hop = 0; hop < 64; hop++) {
        size_t nc = 0;
        const int *c = ts_graph_consumers(g, t, &nc);
        if (nc >= 3)
            return true;
        if (nc != 1 || !row_by_row(g, ts_graph_get_node(g, c[0]), ts_graph_get_tensor(g, t)))
            return false;
        t = ts_graph_get_node(g, c[0])->out[0];
    }
    return false;
}

/* One node: the join of the open skip path, or its operator's stages on the lane it reads (after
 * opening a skip path if its stream feeds a second node). */
static ts_status build_node(lw *L, walk *w, int node)
{
    const ts_graph *g = L->g;
    const ts_graph_node *n = ts_graph_get_node(g, node);
    if (w->done[node])
        return TS_OK;
    ts_status rc = ts_lower_refused(L->err, g, n, &ts_lww_ops); /* kinds, forms and dtypes */
    if (rc)
        return rc;
    bool r0 = reads(n, w->lane[0].t), r1 = w->fork_t >= 0 && reads(n, w->lane[1].t);
    if (r0 && r1) /* the join of the skip path */
        return join(L, n, node, w);
    if (!r0 && !r1)
        return ts_lower_fail(L->err, n,
                             "reads none of the streams open at this point ('%s'%s%s); the WSE lowering streams chains "
                             "of operators with at most one skip path", ts_graph_get_tensor(g, w->lane[0].t)->name,
                             w->fork_t >= 0 ? " and " : "",
                             w->fork_t >= 0 ? ts_graph_get_tensor(g, w->lane[1].t)->name : "");
    const int ln = r0 ? 0 : 1;
    lw_cur c = w->lane[ln];
    size_t nc = 0;
    ts_graph_consumers(g, c.t, &nc);
    if (nc > 2 && ln == 0 && c.t != w->fork_t) { /* q, k and v: an attention (lower_wse_attn.c) */
        const int *cs = ts_graph_consumers(g, c.t, &nc);
        size_t np = 0, other = 0;
        for (size_t q = 0; q < nc; q++) {
            np += ts_lww_is_proj(g, cs[q], c.t);
            other = ts_lww_is_proj(g, cs[q], c.t) ? other : (size_t)cs[q];
        }
        if (np >= 3 && nc - np > 1)
            return ts_lower_fail(L->err, n, "'%s' feeds %zu projections and %zu other operators; the WSE lowering "
                                 "streams one skip path at a time", ts_graph_get_tensor(g, c.t)->name, np, nc - np);
        if (np >= 3 && nc - np == 1) { /* the residual: a skip path around the attention */
            if (w->fork_t >= 0)
                return ts_lower_fail(L->err, n, "'%s' feeds an attention and a skip path while another is open",
                                     ts_graph_get_tensor(g, c.t)->name);
            if ((rc = fork(L, ts_graph_get_node(g, (int)other), node, c, w)))
                return rc;
            w->fork_t = c.t;
        }
        size_t first = L->n;
        int out_t = -1;
        const int64_t *out_rows = NULL;
        if ((rc = np >= 3 ? ts_lww_attn_proj(L, c.t, c.rows, node, w->done, &out_t, &out_rows)
                          : ts_lww_attn_stage(L, c.t, c.rows, node, w->done, &out_t, &out_rows)))
            return rc;
        for (size_t k = first; k < L->n; k++) {
            L->st[k].lane = 0;
            L->st[k].prev = k == first ? w->last[0] : (int)k - 1;
        }
        w->last[0] = (int)L->n - 1;
        w->lane[0].t = out_t;
        w->lane[0].nhwc = false;
        w->lane[0].rows = out_rows;
        return TS_OK;
    }
    int glu[8];
    if (nc == 2 && c.t != w->fork_t && ts_lww_is_glu(g, c.t, glu)) { /* SwiGLU: one product, one gate */
        size_t first = L->n;
        if ((rc = ts_lww_glu_stages(L, c.t, glu)))
            return rc;
        for (int q = 0; q < 7; q++)
            if (glu[q] >= 0)
                w->done[glu[q]] = true;
        for (size_t k = first; k < L->n; k++) {
            L->st[k].lane = ln;
            L->st[k].prev = k == first ? w->last[ln] : (int)k - 1;
        }
        w->last[ln] = (int)L->n - 1;
        w->lane[ln].t = ts_graph_get_node(g, glu[6])->out[0];
        return TS_OK;
    }
    if (nc > 1 && c.t != w->fork_t) {
        if (ln != 0 || w->fork_t >= 0 || nc > 2)
            return ts_lower_fail(L->err, n,
                                 "'%s' feeds %zu operators; the WSE lowering streams chains with one skip path at a "
                                 "time", ts_graph_get_tensor(g, c.t)->name, nc);
        rc = fork(L, n, node, c, w);
        if (rc)
            return rc;
        w->fork_t = c.t;
    }
    const ts_graph_tensor *ct = ts_graph_get_tensor(g, c.t);
    if (n->op == TS_OP_TRANSPOSE && !c.nhwc &&
        (c.rows || feeds_attention(g, n->out[0]) || (uint64_t)ts_graph_tensor_elems(ct) * 4 + 4 > L->t->sram_bytes)) {
        /* rows reordered on their way to an attention, after another such Transpose, or more than a
         * PE keeps: nothing moves (lower_wse_move.c); else a transpose PE sends them in order */
        const int64_t *rows = NULL;
        if (ts_lww_transpose_rows(L, n, ct, c.rows, &rows, &rc)) {
            w->lane[ln].t = n->out[0];
            w->lane[ln].rows = rows;
            return rc;
        }
    }
    if (c.rows && !row_by_row(g, n, ts_graph_get_tensor(g, c.t)))
        return ts_lower_fail(L->err, n, "its input '%s' streams its rows in another order than its layout (after a "
                             "Transpose of its rows); on such a stream the WSE lowering takes operators that work "
                             "row by row", ts_graph_get_tensor(g, c.t)->name);
    lw_op o = {.n = n, .node = node, .c = c, .prev = w->last[ln]};
    rc = operands(L, &o);
    size_t first = L->n;
    bool out_nhwc = false;
    if (!rc)
        rc = ts_lww_op_stages(L, &o, &out_nhwc);
    if (rc)
        return rc;
    if (L->n == first) { /* the stream only changes its name (and a move, maybe its order's name) */
        w->lane[ln].t = n->out[0];
        if (n->op == TS_OP_RESHAPE || n->op == TS_OP_FLATTEN || n->op == TS_OP_TRANSPOSE)
            w->lane[ln].nhwc = out_nhwc;
        return TS_OK;
    }
    for (size_t k = first; k < L->n; k++) {
        L->st[k].lane = ln;
        L->st[k].prev = k == first ? w->last[ln] : (int)k - 1;
    }
    w->last[ln] = (int)L->n - 1;
    w->lane[ln].t = n->out[0];
    w->lane[ln].nhwc = out_nhwc;
    return TS_OK;
}

/* The sink at the end of the main stream, which must be the graph output. */
static ts_status build_sink(lw *L, const walk *w, int output)
{
    const ts_graph *g = L->g;
    if (w->fork_t >= 0)
        return ts_err_set(L->err, TS_EINPUT, "the skip path from '%s' never joins the main stream",
                          ts_graph_get_tensor(g, w->fork_t)->name);
    const lw_cur end = w->lane[0];
    if (end.t != output)
        return ts_err_set(L->err, TS_EINPUT, "the graph output '%s' is not the end of the chain of operators",
                          ts_graph_get_tensor(g, output)->name);
    lw_stage *k = ts_lww_add_stage(L, K_SINK, -1);
    if (!k)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    k->prev = w->last[0];
    k->in_n = k->out_n = (uint64_t)ts_graph_tensor_elems(ts_graph_get_tensor(g, output));
    k->in_nhwc = end.nhwc;
    L->out_rows = end.rows;
    return TS_OK;
}

/* Every stage takes as many wavelets as the stages it reads give. */
static ts_status check_counts(const lw *L)
{
    for (size_t i = 1; i < L->n; i++)
        for (int q = 0; q < 2; q++) {
            int pi = q ? L->st[i].prev2 : L->st[i].prev;
            uint64_t want = q && L->st[i].kind == K_CONCAT ? (uint64_t)(L->st[i].M * L->st[i].N) : L->st[i].in_n;
            if ((pi >= 0 || !q) && want != L->st[pi].out_n)
                return ts_err_set(L->err, TS_EINTERNAL, "stage %zu takes %llu wavelets, stage %d gives %llu", i,
                                  (unsigned long long)want, pi, (unsigned long long)L->st[pi].out_n);
        }
    return TS_OK;
}

ts_status ts_lww_build(lw *L, int input, int output)
{
    walk w = {.last = {0, -1}, .fork_t = -1};
    if (!(w.done = ts_calloc(ts_graph_node_count(L->g) + 1, 1)))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    ts_status rc = build_source(L, input, &w.lane[0]);
    if (rc) {
        ts_free(w.done);
        return rc;
    }
    w.lane[1] = w.lane[0];
    for (size_t id = 0; !rc && id < ts_graph_node_count(L->g); id++)
        rc = build_node(L, &w, (int)id);
    if (!rc)
        rc = build_sink(L, &w, output);
    ts_free(w.done);
    return rc ? rc : check_counts(L);
}
