/* workloads/wse/lower_wse_concat.c — a skip path joined by concatenation (NeRF's skip Concat).
 *
 * Concat of the main stream and the skip path on any axis: both streams are cut into `outer`
 * blocks (the product of the dims before the axis; a pixel for an image streamed pixel by pixel
 * and joined on its channels), and the join sends, per block, the first operand's block then the
 * second's. One PE at row 0: the main stream from the west, the skip path from the south (up its
 * column, as for an Add join), the output east (and down when it forks).
 */
#include "workloads/wse/lower_wse_int.h"

/* The blocks of y = Concat(a, b) on axis as streamed: *outer blocks of *na values of a and *nb of
 * b; false when the stream order does not cut there (an image joined on another axis than C). */
static bool concat_blocks(const ts_graph_tensor *a, const ts_graph_tensor *b, int64_t axis, bool nhwc,
                          int64_t *outer, int64_t *na, int64_t *nb)
{
    if (nhwc) { /* pixel by pixel: only the channels can be joined */
        if (axis != 1 || a->rank != 4)
            return false;
        *outer = a->dims[0] * a->dims[2] * a->dims[3];
        *na = a->dims[1];
        *nb = b->dims[1];
        return true;
    }
    *outer = 1;
    for (int64_t k = 0; k < axis; k++)
        *outer *= a->dims[k];
    *na = *outer ? ts_graph_tensor_elems(a) / *outer : 0;
    *nb = *outer ? ts_graph_tensor_elems(b) / *outer : 0;
    return *outer > 0;
}

ts_status ts_lww_concat_stage(lw *L, const ts_graph_node *n, int node, int main_t, int skip_t, bool nhwc)
{
    const ts_graph *g = L->g;
    const ts_graph_tensor *a = ts_graph_get_tensor(g, n->in[0]), *b = ts_graph_get_tensor(g, n->in[1]);
    if (n->nin != 2)
        return ts_lower_fail(L->err, n, "joins %zu inputs; the WSE lowering joins two streams", n->nin);
    int64_t axis = ts_graph_norm_axis(n->attrs.axis, a->rank), outer, na, nb;
    if (axis < 0 || axis >= a->rank || !concat_blocks(a, b, axis, nhwc, &outer, &na, &nb))
        return ts_lower_fail(L->err, n,
                             "axis %lld of '%s' cuts no block of its stream (an image joins on its channels)",
                             (long long)n->attrs.axis, a->name);
    lw_stage *s = ts_lww_add_stage(L, K_CONCAT, node);
    if (!s)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    s->swap = n->in[0] != main_t; /* the skip path's block first */
    (void)skip_t;
    s->M = outer;
    s->K = s->swap ? nb : na; /* the main stream's block */
    s->N = s->swap ? na : nb; /* the skip path's */
    s->in_n = (uint64_t)(outer * s->K);
    s->out_n = (uint64_t)(outer * (na + nb));
    s->mem = 8;
    return TS_OK;
}

ts_status ts_lww_emit_concat(lw *L, ts_program *P, size_t si, lw_gen *G)
{
    const lw_stage *s = &L->st[si];
    if (!ts_lww_pe_stream(P, L->t, s->x, 0, G))
        return TS_ENOMEM;
    ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cin, P_W, P_R);
    ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cskip, P_S, P_R);
    ts_lww_op(G, WSE_OP_ROUTE, 3, (int)s->cout, P_R, lw_outp(s, true));
    ts_lww_op(G, WSE_OP_LI, 2, 15, 0);
    const uint32_t first = s->swap ? s->cskip : s->cin, second = s->swap ? s->cin : s->cskip;
    const uint64_t n1 = (uint64_t)(s->swap ? s->N : s->K), n2 = (uint64_t)(s->swap ? s->K : s->N);
    int blk = ts_lww_loop_head(G, 10, s->M);
    ts_lww_in_to_out(G, first, s->cout, n1);
    ts_lww_in_to_out(G, second, s->cout, n2);
    ts_lww_loop_end(G, 10, blk);
    return TS_OK;
}
