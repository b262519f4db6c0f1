/* workloads/tsp/concat.c — Concat as a streamed product (see products.c, docs/lowering-tsp.md).
 *
 * A vector holds 320 channels of one pixel; a Concat along the channels moves input channels to
 * other lanes (NeRF joins 256 and 63 channels: the 63 go to lanes 256..318), which the VXM cannot
 * do and the planes can: every channel tile of every input is one reduction block of 0/1 weights
 * (weight 1 from input lane l to the output channel it becomes), the product's int32 sum is the
 * value itself, and requantisation with scale 1 gives it back as int8, exactly. A Concat along the
 * pixels (ViT's class token before the patches) is the same with identity blocks: each output
 * pixel reads the one input that holds it. Lanes past an input's channels meet zero weights, so
 * whatever they hold does not matter.
 */
#include "workloads/tsp/lower_tsp_int.h"

/* Input i's block range and its vector for output pixel m along the pixels; -1 when m is not its. */
int lt_cat_input(const lt_cat *c, uint32_t kt)
{
    int i = 0;
    while (i + 1 < c->n && kt >= c->kt0[i + 1])
        i++;
    return i;
}

int64_t lt_cat_vec(const lt_cat *c, uint32_t m, uint32_t kt)
{
    int i = lt_cat_input(c, kt);
    uint32_t ti = kt - c->kt0[i];
    const tens *x = c->x[i];
    if (c->chan)
        return (int64_t)m * x->T + ti;
    uint64_t r = m % c->inner, a = m / c->inner % c->axlen, o = m / c->inner / c->axlen;
    if (a < c->off[i] || a >= c->off[i] + c->len[i])
        return -1;
    return (int64_t)(((o * c->len[i] + (a - c->off[i])) * c->inner + r) * x->T + ti);
}

/* The output channel lane l of block kt goes to (UINT64_MAX: none). */
static uint64_t dest(const lt_cat *c, uint32_t kt, uint32_t l, uint32_t VL)
{
    int i = lt_cat_input(c, kt);
    uint64_t ch = (uint64_t)(kt - c->kt0[i]) * VL + l;
    if (ch >= c->x[i]->C)
        return UINT64_MAX;
    return c->chan ? c->off[i] + ch : ch;
}

bool lt_cat_one(const lt_cat *c, uint32_t n, uint32_t kt, uint32_t l, uint32_t VL, uint32_t N)
{
    return n < N && dest(c, kt, l, VL) == n;
}

/* Whether some lane of block kt goes to output tile nt. */
bool lt_cat_used(const lt_cat *c, uint32_t nt, uint32_t kt, uint32_t VL, uint32_t N)
{
    uint64_t first = dest(c, kt, 0, VL), n0 = (uint64_t)nt * VL, n1 = n0 + VL < N ? n0 + VL : N;
    if (first == UINT64_MAX)
        return false;
    int i = lt_cat_input(c, kt);
    uint64_t lanes = c->x[i]->C - (uint64_t)(kt - c->kt0[i]) * VL, last = first + (lanes < VL ? lanes : VL) - 1;
    return first < n1 && n0 <= last;
}

/* The Concat's geometry: inputs, the axis as channels (the last axis, or an NCHW image's axis 1)
 * or pixels (outer x axis x inner, row-major), output pixels *M and channels *N. */
ts_status lt_cat_shape(lt *L, const ts_graph_node *nd, lt_cat *c, uint32_t *M, uint32_t *N)
{
    int r;
    const int64_t *d = lt_dims(L, nd->out[0], &r);
    int64_t ax = nd->attrs.axis < 0 ? nd->attrs.axis + r : nd->attrs.axis;
    if (nd->nin > LT_CAT_MAX || nd->nin < 1 || ax < 0 || ax >= r)
        return ts_lower_fail(L->err, nd, "the TSP lowering takes a Concat of 1 to %d inputs", LT_CAT_MAX);
    if (r == 4 && ax > 1)
        return ts_lower_fail(L->err, nd, "the TSP lowering takes a Concat of images along the channels or the batch");
    *c = (lt_cat){.n = (int)nd->nin, .chan = ax == (r == 4 ? 1 : r - 1)};
    uint32_t P, C;
    ts_status rc = lt_shape_pc(L, nd, nd->out[0], &P, &C);
    if (rc != TS_OK)
        return rc;
    *M = P;
    *N = C;
    c->outer = c->inner = 1;
    for (int64_t k = 0; k < ax; k++)
        c->outer *= (uint64_t)d[k];
    for (int64_t k = ax + 1; k < r - 1; k++)
        c->inner *= (uint64_t)d[k];
    if (r == 4)
        c->inner = (uint64_t)(d[2] * d[3]); /* along the batch: an image's pixels */
    c->axlen = (uint64_t)d[ax];
    uint64_t off = 0;
    for (int i = 0; i < c->n; i++) {
        int ri;
        const int64_t *di = lt_dims(L, nd->in[i], &ri);
        c->ids[i] = nd->in[i];
        c->x[i] = &L->t[nd->in[i]];
        c->off[i] = off;
        c->len[i] = ri == r ? (uint64_t)di[ax] : 0;
        off += c->len[i];
        c->kt0[i + 1] = c->kt0[i] + (c->x[i]->placed ? c->x[i]->T : 0);
    }
    return TS_OK;
}
