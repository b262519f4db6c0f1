/* workloads/wse/lower_wse_stages.c — what each operator becomes: its stages, their sizes in
 * wavelets and the SRAM a PE of theirs needs before placement.
 *
 * MatMul and Gemm: a matrix product; Conv: an im2col line buffer (none for 1x1 stride-1
 * convolutions) and a matrix product (grouped and depthwise: the dense K, zero outside a group);
 * Relu and Clip: fused into a matrix product or join before it, else a PE of their own; Sigmoid,
 * Tanh, HardSwish, Gelu: a PE each (lower_wse_elem.c); Add, Sub, Mul with a parameter: one PE
 * keeping the parameter; Softmax on the last axis; MaxPool (a line buffer) and
 * GlobalAveragePool; Flatten and Reshape rename the stream; Concat only joins a skip path.
 */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "workloads/wse/lower_wse_int.h"

/* Matrix product stage from a weight (K x N after transposition) and an optional bias. A Conv of
 * `group` groups (weights M x C/group x kh x kw) becomes one product of K = C kh kw rows whose
 * blocks outside a group are zero (computed all the same: depthwise costs C times its MACs). */
static ts_status mm_stage(lw *L, const ts_graph_node *n, int node, int64_t M, int64_t K, int64_t N, int wid,
                          bool wtrans, double alpha, int bid, double beta, int64_t group)
{
    const ts_graph_tensor *w = ts_graph_get_tensor(L->g, wid);
    lw_stage *s = ts_lww_add_stage(L, K_MM, node);
    if (!s || !(s->wt = ts_malloc((size_t)(K * N) * 4)))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    const int64_t Kg = K / group, Ng = N / group; /* a group's rows and outputs */
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++) {
            if (group > 1 && k / Kg != j / Ng) {
                s->wt[k * N + j] = 0.0f;
                continue;
            }
            uint64_t at = (uint64_t)(group > 1 ? j * Kg + k % Kg : wtrans ? j * K + k : k * N + j);
            s->wt[k * N + j] = (float)(alpha * ts_fill_value_f32(w, wid, at));
        }
    if (bid >= 0) {
        const ts_graph_tensor *b = ts_graph_get_tensor(L->g, bid);
        int64_t nb = ts_graph_tensor_elems(b);
        if (nb != N && nb != 1)
            return ts_lower_fail(L->err, n, "bias '%s' has %lld values, not %lld (only a per-output bias is lowered)",
                                 b->name, (long long)nb, (long long)N);
        if (!(s->bias = ts_malloc((size_t)N * 4)))
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        for (int64_t j = 0; j < N; j++)
            s->bias[j] = (float)(beta * ts_fill_value_f32(b, bid, (uint64_t)(nb == 1 ? 0 : j)));
    }
    s->M = M;
    s->K = K;
    s->N = N;
    s->in_n = (uint64_t)(M * K);
    s->out_n = (uint64_t)(M * N);
    s->macs = (uint64_t)(M * K * N);
    return TS_OK;
}

/* The window of n (a Conv or a pool) over its input image x (the WSE lowering takes 4-d images). */
static ts_status image_window(lw *L, const ts_graph_node *n, const ts_graph_tensor *x, ts_geom_window *w)
{
    if (x->rank != 4 || !ts_geom_window_of(L->g, n, w))
        return ts_lower_fail(L->err, n, "input '%s' has rank %d; the WSE lowering takes 4-d images (N, C, H, W)",
                             x->name, x->rank);
    return TS_OK;
}

/* A stage's input image: batch, channels, size. */
static void image(lw_stage *s, const ts_geom_window *w) { s->B = w->N, s->C = w->C, s->H = w->H, s->W = w->W; }

/* Line-buffer stages (im2col, maxpool): the input image x, window, strides and pads of w; the
 * image kept as kh rows of the padded width, channels split over G PEs (the fewest that fit; a
 * maxpool, whose max is scalar, takes at least one PE per 8 channels). */
static ts_status window(lw *L, const ts_graph_node *n, const ts_graph_tensor *x, const ts_geom_window *w,
                        lw_stage *s)
{
    const uint64_t sram = L->t->sram_bytes;
    image(s, w);
    s->in_nhwc = true;
    s->kh = w->kh, s->kw = w->kw, s->sh = w->sh, s->sw = w->sw;
    s->dh = w->dh, s->dw = w->dw, s->khe = (w->kh - 1) * w->dh + 1;
    s->pt = w->pt, s->pl = w->pl, s->pb = w->pb, s->pr = w->pr;
    s->Ho = w->Ho, s->Wo = w->Wo;
    s->in_n = (uint64_t)ts_graph_tensor_elems(x);
    uint64_t row = (uint64_t)(s->khe * (s->W + s->pl + s->pr)) * 4; /* bytes per channel */
    uint64_t G = 1;
    while (G <= (uint64_t)s->C && row * ts_geom_cdiv((uint64_t)s->C, G) + 8 > sram)
        G++;
    if (G > (uint64_t)s->C)
        return ts_lower_fail(L->err, n,
                             "its line buffer of %lld rows of %lld pixels of input '%s' needs %.1f KiB for one "
                             "channel, the PE has %.1f KiB: %.1f KiB too much (%llu bytes)", (long long)s->khe,
                             (long long)(s->W + s->pl + s->pr), x->name, (row + 8) / 1024.0, sram / 1024.0,
                             (row + 8 - sram) / 1024.0, (unsigned long long)(row + 8 - sram));
    if (s->kind == K_MAXPOOL && G < ts_geom_cdiv((uint64_t)s->C, 8))
        G = ts_geom_cdiv((uint64_t)s->C, 8);
    s->G = (uint32_t)G;
    s->w = s->G;
    s->mem = row * ts_geom_cdiv((uint64_t)s->C, G) + 8;
    return TS_OK;
}

/* A Conv's weight rows in the feeder's order: group g of channels [c0, c1) sends, per output
 * pixel, its (i, j, c) values, so k = c0 kh kw + (i kw + j) (c1 - c0) + (c - c0). */
static int permute_k(lw_stage *mm, const lw_stage *f)
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

/* MatMul and Gemm: the streamed input times a 2-d weight (Gemm: transB, alpha, bias, beta). */
static ts_status stage_matmul(lw *L, const lw_op *o)
{
    const ts_graph_node *n = o->n;
    const ts_graph_attrs *a = &n->attrs;
    bool gemm = n->op == TS_OP_GEMM;
    if (o->at != 0 || n->nin < 2)
        return ts_lower_fail(L->err, n, "the streamed input must be the first operand");
    const ts_graph_tensor *w = ts_graph_get_tensor(L->g, n->in[1]);
    if (!lw_is_param(w) || w->rank != 2)
        return ts_lower_fail(L->err, n, "operand '%s' must be a 2-d weight", w->name);
    if (o->c.nhwc)
        return ts_lower_fail(L->err, n,
                             "its input '%s' streams pixel by pixel (a Conv output); flatten it to 1 x 1 first",
                             o->x->name);
    bool tb = gemm && a->trans_b;
    int64_t K = tb ? w->dims[1] : w->dims[0], N = tb ? w->dims[0] : w->dims[1];
    return mm_stage(L, n, o->node, o->nx / K, K, N, n->in[1], tb, gemm ? a->alpha : 1.0,
                    gemm && n->nin > 2 ? n->in[2] : -1, gemm ? a->beta : 1.0, 1);
}

/* Conv: an im2col line buffer (unless 1 x 1 with stride 1: every pixel is its own im2col row)
 * feeding a matrix product of the weights as K = C kh kw rows, permuted to the feeder's order. */
static ts_status stage_conv(lw *L, const lw_op *o, bool *out_nhwc)
{
    const ts_graph_node *n = o->n;
    const ts_graph_tensor *w = ts_graph_get_tensor(L->g, n->in[1]);
    if (o->at != 0 || !lw_is_param(w))
        return ts_lower_fail(L->err, n, "the weight must be a parameter and the image the streamed input");
    ts_geom_window g;
    lw_stage *f = NULL;
    ts_status rc = image_window(L, n, o->x, &g);
    if (rc)
        return rc;
    int64_t M = g.M, K = g.C * g.kh * g.kw, P = g.N * g.Ho * g.Wo;
    *out_nhwc = g.Ho * g.Wo > 1;
    if (!ts_geom_window_pointwise(&g)) {
        f = ts_lww_add_stage(L, K_FEED, o->node);
        if (!f)
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        if ((rc = window(L, n, o->x, &g, f)))
            return rc;
        f->out_n = (uint64_t)(P * K);
    }
    size_t fi = L->n - 1;
    rc = mm_stage(L, n, o->node, P, K, M, n->in[1], true, 1.0, n->nin > 2 ? n->in[2] : -1, 1.0,
                  n->attrs.group > 1 ? n->attrs.group : 1);
    if (rc)
        return rc;
    if (f && permute_k(&L->st[L->n - 1], &L->st[fi]))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    return TS_OK;
}

/* Relu: fused into the matrix product or join that gives the stream (unless that one forks),
 * else a PE of its own. */
static ts_status stage_relu(lw *L, const lw_op *o, bool *out_nhwc)
{
    lw_stage *prev = &L->st[o->prev];
    if ((prev->kind == K_MM || prev->kind == K_JOIN) && !prev->relu && !prev->fork) {
        prev->relu = true; /* fused: the stream is unchanged */
        return TS_OK;
    }
    lw_stage *s = ts_lww_add_stage(L, K_RELU, o->node);
    if (!s)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    s->in_n = s->out_n = (uint64_t)o->nx;
    *out_nhwc = o->c.nhwc;
    return TS_OK;
}

/* Clip, Sigmoid, Tanh, HardSwish, Gelu: a Clip is fused into the matrix product or join that gives
 * the stream (as a Relu is), else each is a PE of its own (lower_wse_elem.c). */
static ts_status stage_elem(lw *L, const lw_op *o, bool *out_nhwc)
{
    const ts_graph_node *n = o->n;
    float lo = (float)n->attrs.min, hi = (float)n->attrs.max;
    lw_stage *prev = &L->st[o->prev];
    *out_nhwc = o->c.nhwc;
    if (n->op == TS_OP_CLIP && (prev->kind == K_MM || prev->kind == K_JOIN) && !prev->clip && !prev->fork) {
        prev->clip = true; /* fused: after its Relu, if any */
        prev->lo = lo;
        prev->hi = hi;
        return TS_OK;
    }
    lw_stage *s = ts_lww_add_stage(L, K_ELEM, o->node);
    if (!s)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    s->eop = (int)n->op;
    s->vop = n->op == TS_OP_GELU && n->attrs.approximate_tanh; /* Gelu's tanh form */
    s->L = o->c.nhwc ? o->x->dims[1] : o->x->dims[o->x->rank - 1]; /* a row: split over s->G PEs (place) */
    s->G = 1;
    s->lo = lo;
    s->hi = hi;
    s->in_n = s->out_n = (uint64_t)o->nx;
    return TS_OK;
}

/* The period with which parameter p repeats along the stream of x under numpy broadcasting: the
 * whole stream (the same number of values), 1 (a scalar), the size of p when its dims past its
 * leading 1s are the trailing dims of x (row-major streams), or C for a per-channel [C, 1, 1] of
 * an image streamed pixel by pixel; 0 when none of these. */
static int64_t period_of(const ts_graph_tensor *x, const ts_graph_tensor *p, bool nhwc)
{
    const int64_t np = ts_graph_tensor_elems(p), nx = ts_graph_tensor_elems(x);
    if (np == nx || np == 1)
        return np;
    int first = 0, off = x->rank - p->rank;
    while (first < p->rank && p->dims[first] == 1)
        first++;
    if (off < 0)
        return 0;
    if (nhwc) /* a per-channel parameter: C, then only 1s */
        return x->rank == 4 && first < p->rank && off + first == 1 && np == x->dims[1] ? np : 0;
    for (int k = first; k < p->rank; k++)
        if (p->dims[k] != x->dims[off + k])
            return 0;
    return nx % np ? 0 : np;
}

/* Add, Sub, Mul, Div of the stream and a parameter, broadcast (period_of): one PE keeping the
 * parameter's period in stream order (Div: its reciprocals, and a Mul; within one rounding of the
 * quotient). */
static ts_status stage_binary(lw *L, const lw_op *o, bool *out_nhwc)
{
    const ts_graph_node *n = o->n;
    const ts_graph_tensor *x = o->x, *p = o->other < 0 ? NULL : ts_graph_get_tensor(L->g, o->other);
    const int64_t nx = o->nx, P = p ? period_of(x, p, o->c.nhwc) : 0;
    const uint64_t sram = L->t->sram_bytes;
    const bool div = n->op == TS_OP_DIV;
    if (!p || !P || o->ny != nx)
        return ts_lower_fail(L->err, n, "the operand besides the stream must be a parameter that broadcasts to it");
    if (div && o->at != 0)
        return ts_lower_fail(L->err, n, "divides a parameter by the stream; only the stream by a parameter is lowered");
    lw_stage *s = ts_lww_add_stage(L, K_ADD, o->node);
    if (!s || !(s->vals = ts_malloc((size_t)P * 4)))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (int64_t i = 0; i < P; i++) {
        int64_t e = i; /* graph index of stream element i */
        if (o->c.nhwc && P == nx) {
            int64_t C = x->dims[1], H = x->dims[2], W = x->dims[3];
            int64_t ch = i % C, px = i / C;
            e = ((px / (H * W)) * C + ch) * H * W + px % (H * W);
        }
        double v = ts_fill_value_f32(p, o->other, (uint64_t)e);
        s->vals[i] = div ? (float)(1.0 / v) : (float)v;
    }
    s->vop = n->op == TS_OP_ADD ? WSE_OP_FADDS : n->op == TS_OP_SUB ? WSE_OP_FSUBS : WSE_OP_FMULS;
    s->swap = o->at != 0;
    s->in_n = s->out_n = (uint64_t)nx;
    s->period = (uint64_t)P;
    s->mem = (uint64_t)P * 4;
    if (s->mem > sram && P > 1) { /* split over PEs in a row, each keeping a part of the period */
        s->G = (uint32_t)ts_geom_cdiv((uint64_t)P * 4, sram);
        s->w = s->G;
        s->mem = ts_geom_cdiv((uint64_t)P, s->G) * 4;
    }
    if (s->mem > sram)
        return ts_lower_fail(L->err, n,
                             "its operand '%s' needs %.1f KiB in one PE of %.1f KiB: %.1f KiB too much (%llu bytes)",
                             p->name, s->mem / 1024.0, sram / 1024.0, (s->mem - sram) / 1024.0,
                             (unsigned long long)(s->mem - sram));
    *out_nhwc = o->c.nhwc;
    return TS_OK;
}

/* Concat of the stream and one parameter (ViT's class token before its patches): one PE keeping
 * the parameter; per block (the dims before the axis) it sends the parameter's part from memory
 * and passes the stream's on, in the operands' order. */
static ts_status stage_concat_param(lw *L, const lw_op *o)
{
    const ts_graph_node *n = o->n;
    if (n->nin != 2 || o->other < 0 || o->c.nhwc)
        return ts_lower_fail(L->err, n, "joins '%s' with a parameter%s; the WSE lowering concatenates two operands, "
                             "a skip path or one parameter with a row-major stream", o->x->name,
                             o->c.nhwc ? " pixel by pixel" : "");
    const ts_graph_tensor *p = ts_graph_get_tensor(L->g, o->other);
    int64_t ax = ts_graph_norm_axis(n->attrs.axis, o->y->rank), outer = 1;
    for (int k = 0; k < ax; k++)
        outer *= o->y->dims[k];
    lw_stage *s = ts_lww_add_stage(L, K_PCAT, o->node);
    const int64_t np = ts_graph_tensor_elems(p);
    if (!s || !(s->vals = ts_malloc((size_t)np * 4)))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (int64_t i = 0; i < np; i++)
        s->vals[i] = (float)ts_fill_value_f32(p, o->other, (uint64_t)i);
    s->M = outer;
    s->K = np / outer;
    s->N = o->nx / outer;
    s->swap = o->at == 0; /* the stream first */
    s->in_n = (uint64_t)o->nx;
    s->out_n = (uint64_t)o->ny;
    s->mem = (uint64_t)np * 4;
    if (s->mem > L->t->sram_bytes)
        return ts_lower_fail(L->err, n, "its operand '%s' needs %.1f KiB in one PE of %.1f KiB: does not fit by %.1f "
                             "KiB (%llu bytes)", p->name, s->mem / 1024.0, L->t->sram_bytes / 1024.0,
                             (s->mem - L->t->sram_bytes) / 1024.0,
                             (unsigned long long)(s->mem - L->t->sram_bytes));
    return TS_OK;
}

/* Softmax over the last axis: one PE keeping a row. */
static ts_status stage_softmax(lw *L, const lw_op *o)
{
    const ts_graph_node *n = o->n;
    const ts_graph_tensor *x = o->x;
    const uint64_t sram = L->t->sram_bytes;
    int64_t axis = ts_graph_norm_axis(n->attrs.axis, x->rank);
    if (axis != x->rank - 1)
        return ts_lower_fail(L->err, n, "only the last axis is lowered (axis %lld of rank %d)",
                             (long long)n->attrs.axis, x->rank);
    if (o->c.nhwc)
        return ts_lower_fail(L->err, n, "its input streams pixel by pixel (a Conv output)");
    lw_stage *s = ts_lww_add_stage(L, K_SOFTMAX, o->node);
    if (!s)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    s->L = x->dims[x->rank - 1];
    s->in_n = s->out_n = (uint64_t)o->nx;
    s->mem = (uint64_t)s->L * 4 + 4;
    if (s->mem > sram)
        return ts_lower_fail(L->err, n,
                             "a row of %lld values of input '%s' needs %.1f KiB in one PE of %.1f KiB: %.1f KiB too "
                             "much (%llu bytes)", (long long)s->L, x->name, s->mem / 1024.0, sram / 1024.0,
                             (s->mem - sram) / 1024.0, (unsigned long long)(s->mem - sram));
    return TS_OK;
}

/* MaxPool (a line buffer) and GlobalAveragePool (one PE of C sums). */
static ts_status stage_pool(lw *L, const lw_op *o, bool *out_nhwc)
{
    const ts_graph_node *n = o->n;
    const uint64_t sram = L->t->sram_bytes;
    bool mp = n->op == TS_OP_MAXPOOL;
    lw_stage *s = ts_lww_add_stage(L, mp ? K_MAXPOOL : K_GAP, o->node);
    if (!s)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    ts_geom_window w;
    ts_status rc = image_window(L, n, o->x, &w);
    if (rc)
        return rc;
    image(s, &w);
    s->in_nhwc = o->c.nhwc;
    s->in_n = (uint64_t)o->nx;
    s->out_n = (uint64_t)o->ny;
    if (mp) {
        if ((rc = window(L, n, o->x, &w, s)))
            return rc;
        *out_nhwc = s->Ho * s->Wo > 1;
    } else
        s->mem = (uint64_t)s->C * 4 + 8;
    if (s->mem > sram)
        return ts_lower_fail(L->err, n, "it keeps %.1f KiB of input '%s' in one PE of %.1f KiB: %.1f KiB too much "
                             "(%llu bytes)", s->mem / 1024.0, o->x->name, sram / 1024.0, (s->mem - sram) / 1024.0,
                             (unsigned long long)(s->mem - sram));
    return TS_OK;
}

/* The operators the WSE lowering refuses whatever their shapes (ts_lower_ops; build and the
 * dispatch below ask it too): kinds without stages, dtypes other than f32 and f16, a MaxPool with
 * dilations, a Gemm with transA, a MaxPool with ceil_mode. */
static bool refuse(const ts_graph *g, const ts_graph_node *n, char *why, size_t cap)
{
    switch (n->op) {
    case TS_OP_MATMUL:
    case TS_OP_GEMM:
    case TS_OP_CONV:
    case TS_OP_RELU:
    case TS_OP_ADD:
    case TS_OP_SUB:
    case TS_OP_MUL:
    case TS_OP_DIV:
    case TS_OP_SOFTMAX:
    case TS_OP_MAXPOOL:
    case TS_OP_GLOBALAVGPOOL:
    case TS_OP_FLATTEN:
    case TS_OP_RESHAPE:
    case TS_OP_CONCAT:
    case TS_OP_SLICE:
    case TS_OP_TRANSPOSE:
    case TS_OP_LAYERNORM:
    case TS_OP_RMSNORM:
    case TS_OP_CLIP:
    case TS_OP_SIGMOID:
    case TS_OP_TANH:
    case TS_OP_GELU: break;
    default:
        if (!ts_lww_is_hardswish(n->op))
            return true;
    }
    for (size_t k = 0; k < n->nin; k++) {
        ts_dtype dt = ts_graph_get_tensor(g, n->in[k])->dtype;
        if (dt != TS_DT_F32 && dt != TS_DT_F16) {
            snprintf(why, cap, "on %s (f32 and f16 only)", ts_dtype_name(dt));
            return true;
        }
    }
    const ts_graph_attrs *a = &n->attrs;
    if (n->op == TS_OP_MAXPOOL && (a->dilations[0] != 1 || a->dilations[1] != 1))
        snprintf(why, cap, "with dilations");
    else if (n->op == TS_OP_GEMM && a->trans_a)
        snprintf(why, cap, "with transA");
    else if (n->op == TS_OP_MAXPOOL && a->ceil_mode)
        snprintf(why, cap, "with ceil_mode");
    return why[0] != '\0';
}

/* Whether o is a Reshape of an image streamed pixel by pixel [B, C, H, W] to [B, C, H W] read only
 * by a Transpose to [B, H W, C] (ViT's patches): the pixel stream is that Transpose's output in
 * row-major order, so both only rename it. */
static bool pixels_to_rows(const ts_graph *g, const lw_op *o)
{
    const ts_graph_tensor *x = o->x, *y = o->y;
    if (o->n->op != TS_OP_RESHAPE || x->rank != 4 || y->rank != 3 || y->dims[0] != x->dims[0] ||
        y->dims[1] != x->dims[1] || y->dims[2] != x->dims[2] * x->dims[3])
        return false;
    size_t nc = 0;
    const int *c = ts_graph_consumers(g, o->n->out[0], &nc);
    if (nc != 1)
        return false;
    const ts_graph_node *t = ts_graph_get_node(g, c[0]);
    return t->op == TS_OP_TRANSPOSE && t->attrs.nperm == 3 && t->attrs.perm[0] == 0 && t->attrs.perm[1] == 2 &&
           t->attrs.perm[2] == 1;
}

const ts_lower_ops ts_lww_ops = {.family = "WSE", .refuse = refuse, .takes = NULL};

ts_status ts_lww_op_stages(lw *L, const lw_op *o, bool *out_nhwc)
{
    *out_nhwc = false;
    ts_status rc = ts_lower_refused(L->err, L->g, o->n, &ts_lww_ops);
    if (rc != TS_OK)
        return rc;
    switch (o->n->op) {
    case TS_OP_MATMUL:
    case TS_OP_GEMM:
        return stage_matmul(L, o);
    case TS_OP_CONV:
        return stage_conv(L, o, out_nhwc);
    case TS_OP_RELU:
        return stage_relu(L, o, out_nhwc);
    case TS_OP_ADD:
    case TS_OP_SUB:
    case TS_OP_MUL:
    case TS_OP_DIV:
        return stage_binary(L, o, out_nhwc);
    case TS_OP_SOFTMAX:
        return stage_softmax(L, o);
    case TS_OP_MAXPOOL:
    case TS_OP_GLOBALAVGPOOL:
        return stage_pool(L, o, out_nhwc);
    case TS_OP_FLATTEN:
    case TS_OP_RESHAPE:
        if (o->c.nhwc && pixels_to_rows(L->g, o)) { /* [B, C, H, W] to [B, C, H W], then to [B, H W, C] */
            *out_nhwc = true;
            return TS_OK;
        }
        if (o->c.nhwc)
            return ts_lower_fail(L->err, o->n,
                                 "its input streams pixel by pixel (a Conv output with more than one pixel)");
        return TS_OK; /* the stream only changes its name */
    case TS_OP_CLIP:
    case TS_OP_SIGMOID:
    case TS_OP_TANH:
    case TS_OP_GELU:
        return stage_elem(L, o, out_nhwc);
    case TS_OP_SLICE:
        *out_nhwc = o->c.nhwc;
        return ts_lww_slice_stage(L, o->n, o->node, o->x, o->c.nhwc);
    case TS_OP_TRANSPOSE:
        if (o->c.nhwc && o->x->rank == 3) /* after pixels_to_rows: the pixel stream in row-major order */
            return TS_OK;
        return ts_lww_transpose_stage(L, o->n, o->node, o->x, o->c.nhwc);
    case TS_OP_LAYERNORM:
    case TS_OP_RMSNORM:
        return ts_lww_norm_stage(L, o->n, o->node, o->x, o->c.nhwc);
    case TS_OP_CONCAT:
        return stage_concat_param(L, o);
    default: /* refused above */
        if (ts_lww_is_hardswish(o->n->op))
            return stage_elem(L, o, out_nhwc);
        return ts_err_set(L->err, TS_EINTERNAL, "%s '%s': no stages for this operator", ts_graph_op_name(o->n->op),
                          o->n->name);
    }
}
