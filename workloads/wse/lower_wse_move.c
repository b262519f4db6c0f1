/* workloads/wse/lower_wse_move.c — operators that only move values: Slice and Transpose.
 *
 *   slice      one PE; the stream cut into `outer` blocks (the dims before the sliced axis) of
 *              pre + len + post values (the axis before the start, the slice, the rest, times the
 *              dims after it): per block, pre and post into a junk word, len on to the east. Step
 *              1 on one axis (the attention in-projection's thirds of the last axis, ViT's class
 *              token); an image streamed pixel by pixel on its channels only; a Slice that keeps
 *              the whole tensor (a decode's last row of its one row) takes no stage;
 *   transpose  one PE keeping the whole tensor (rank 3 or 4, row-major), then sending it in the
 *              permuted order: per output index but the last, one move of the last output axis's
 *              values, strided by that axis's stride in the input. A tensor larger than the PE
 *              does not fit (the error says by how much). A permutation that moves only axes of 1
 *              keeps the order of the stream: a slice stage passing the whole tensor on;
 *   rows       a Transpose that keeps the last axis last only reorders rows: no stage, no value
 *              moves; the stream keeps its order and carries the tensor's rows in another order
 *              (lw_cur.rows), which the operators after it take row by row (torch's [batch, seq,
 *              d] to [seq, batch, d] around its attention).
 */
#include "workloads/wse/lower_wse_int.h"

ts_status ts_lww_slice_stage(lw *L, const ts_graph_node *n, int node, const ts_graph_tensor *x, bool nhwc)
{
    const ts_graph_attrs *a = &n->attrs;
    int axis = -1;
    for (int k = 0; k < a->nslice && k < x->rank; k++) {
        if (a->starts[k] == 0 && a->ends[k] >= x->dims[k] && a->steps[k] == 1)
            continue;
        if (axis >= 0 || a->steps[k] != 1)
            return ts_lower_fail(L->err, n,
                                 "slices more than one axis or with a step; one axis with step 1 is lowered");
        axis = k;
    }
    if (axis < 0) /* the whole tensor (a decode's last row of one): the stream only changes its name */
        return TS_OK;
    lw_stage *s = ts_lww_add_stage(L, K_SLICE, node);
    if (!s)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    const int64_t nx = ts_graph_tensor_elems(x);
    if (nhwc) {
        if (axis != 1)
            return ts_lower_fail(L->err, n, "slices axis %d of an image streamed pixel by pixel; only its channels",
                                 axis);
        s->M = x->dims[0] * x->dims[2] * x->dims[3];
        s->K = a->starts[1], s->N = a->ends[1] - a->starts[1], s->L = x->dims[1] - a->ends[1];
    } else {
        int64_t outer = 1, inner = 1;
        for (int k = 0; k < axis; k++)
            outer *= x->dims[k];
        for (int k = axis + 1; k < x->rank; k++)
            inner *= x->dims[k];
        s->M = outer;
        s->K = a->starts[axis] * inner;
        s->N = (a->ends[axis] - a->starts[axis]) * inner;
        s->L = (x->dims[axis] - a->ends[axis]) * inner;
    }
    s->in_n = (uint64_t)nx;
    s->out_n = (uint64_t)(s->M * s->N);
    s->mem = 4;
    return TS_OK;
}

/* Whether the permutation keeps every element in place: the axes longer than 1 stay in order (a
 * Transpose that moves only axes of 1, such as [seq, 1, hidden] to [1, seq, hidden]). */
static bool keeps_layout(const ts_graph_attrs *a, const ts_graph_tensor *x)
{
    int last = -1;
    for (int k = 0; k < x->rank; k++) {
        int from = (int)(a->nperm ? a->perm[k] : x->rank - 1 - k);
        if (x->dims[from] == 1)
            continue;
        if (from < last)
            return false;
        last = from;
    }
    return true;
}

bool ts_lww_transpose_rows(lw *L, const ts_graph_node *n, const ts_graph_tensor *x, const int64_t *rows,
                           const int64_t **out, ts_status *rc)
{
    const ts_graph_attrs *a = &n->attrs;
    const int r = x->rank;
    *rc = TS_OK;
    *out = rows;
    if (r < 2 || (a->nperm ? a->perm[r - 1] : 0) != r - 1 || keeps_layout(a, x))
        return false;
    const int64_t R = ts_lww_rows(x, NULL);
    int64_t xs[TS_GRAPH_MAX_RANK], od[TS_GRAPH_MAX_RANK]; /* x's row strides over its leading axes; y's dims */
    for (int k = r - 2, st = 1; k >= 0; k--) {
        xs[k] = st;
        st *= (int)x->dims[k];
    }
    for (int k = 0; k < r - 1; k++)
        od[k] = x->dims[a->perm[k]];
    int64_t *m = ts_lww_new_rows(L, R);
    if (!m) {
        *rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
        return true;
    }
    bool same = true;
    for (int64_t y = 0; y < R; y++) { /* y's row y is x's row src */
        int64_t rem = y, src = 0;
        for (int k = r - 2; k >= 0; k--) {
            src += (rem % od[k]) * xs[a->perm[k]];
            rem /= od[k];
        }
        m[y] = rows ? rows[src] : src;
        same &= m[y] == y;
    }
    *out = same ? NULL : m;
    return true;
}

ts_status ts_lww_transpose_stage(lw *L, const ts_graph_node *n, int node, const ts_graph_tensor *x, bool nhwc)
{
    const ts_graph_attrs *a = &n->attrs;
    const uint64_t sram = L->t->sram_bytes;
    if (!nhwc && keeps_layout(a, x)) { /* a stream in the same order: the whole tensor passed on */
        lw_stage *s = ts_lww_add_stage(L, K_SLICE, node);
        if (!s)
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        s->M = 1, s->K = 0, s->N = ts_graph_tensor_elems(x), s->L = 0;
        s->in_n = s->out_n = (uint64_t)s->N;
        s->mem = 4;
        return TS_OK;
    }
    if (nhwc || x->rank < 2 || x->rank > 4)
        return ts_lower_fail(L->err, n, "transposes '%s' of rank %d%s; ranks 2 to 4 in row-major order are lowered",
                             x->name, x->rank, nhwc ? " streamed pixel by pixel" : "");
    lw_stage *s = ts_lww_add_stage(L, K_TRANSPOSE, node);
    if (!s)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    s->G = (uint32_t)x->rank;
    int64_t *d = &s->B; /* the input dims in B, C, H, W; the permutation in kh, kw, sh, sw */
    int64_t *p = &s->kh;
    for (int k = 0; k < 4; k++) {
        d[k] = k < x->rank ? x->dims[k] : 1;
        p[k] = k < x->rank ? (a->nperm ? a->perm[k] : x->rank - 1 - k) : k;
    }
    s->in_n = s->out_n = (uint64_t)ts_graph_tensor_elems(x);
    s->mem = s->in_n * 4 + 4;
    if (s->mem > sram)
        return ts_lower_fail(L->err, n,
                             "keeps '%s' whole: %.1f KiB in one PE of %.1f KiB: %.1f KiB too much (%llu bytes)",
                             x->name, s->mem / 1024.0, sram / 1024.0, (s->mem - sram) / 1024.0,
                             (unsigned long long)(s->mem - sram));
    return TS_OK;
}

static void emit_slice(lw_gen *G, const lw_stage *s)
{
    const int JUNK = 0;
    int l = ts_lww_loop_head(G, 10, s->M);
    if (s->K)
        ts_lww_in_to_mem(G, s->cin, JUNK, (uint64_t)s->K, 0);
    ts_lww_in_to_out(G, s->cin, s->cout, (uint64_t)s->N);
    if (s->L)
        ts_lww_in_to_mem(G, s->cin, JUNK, (uint64_t)s->L, 0);
    ts_lww_loop_end(G, 10, l);
}

/* Keep the tensor, then per output index but the last one strided move of the last output axis. */
static void emit_transpose(lw_gen *G, const lw_stage *s)
{
    const int64_t *d = &s->B, *p = &s->kh;
    const int r = (int)s->G;
    int64_t stride[4], od[4];
    for (int k = 3, acc = 1; k >= 0; k--) { /* input strides, in elements */
        stride[k] = acc;
        acc *= (int)d[k];
    }
    for (int k = 0; k < 4; k++)
        od[k] = k < r ? d[p[k]] : 1;
    ts_lww_in_to_mem(G, s->cin, 0, s->in_n, 1);
    const int64_t last = od[r - 1], ls = stride[p[r - 1]];
    int64_t idx[3] = {0, 0, 0};
    const int64_t outer = (int64_t)s->in_n / last;
    for (int64_t o = 0; o < outer; o++) {
        int64_t base = 0, rem = o;
        for (int k = r - 2; k >= 0; k--) {
            idx[k] = rem % od[k];
            rem /= od[k];
            base += idx[k] * stride[p[k]];
        }
        for (int64_t a = 0; a < last; a += PIECE) {
            int k = last - a > PIECE ? PIECE : (int)(last - a);
            ts_lww_op(G, WSE_OP_DSDM, 4, 12, (int)((base + a * ls) * 4), k, (int)ls);
            ts_lww_op(G, WSE_OP_DSDOUT, 4, 13, (int)s->cout, k, 0);
            ts_lww_op(G, WSE_OP_FMOVS, 4, 13, 12, -1, -1);
        }
    }
}

void ts_lww_emit_move(lw_gen *G, const lw_stage *s)
{
    if (s->kind == K_SLICE)
        emit_slice(G, s);
    else
        emit_transpose(G, s);
}
