/* workloads/tsp/products.c — MatMul, Gemm and Conv as streamed matrix products (see lower_tsp.h,
 * docs/lowering-tsp.md).
 *
 * A product is blocks of one 320 x 320 int8 weight block each (output tile nt, reduction tile kt)
 * on the two west MXM planes, and on the two east ones too where a block streams QUAD_PASSES vectors
 * or more (east_rows). Its passes, in order:
 *   geometry   the product's shape from the node (conv_shape, matmul_shape), its input placed;
 *   memory     the weight rows striped over the west MEM, bias and scale replicated in every east
 *              slice, and two int32 partial-sum buffers on the east MEM (weights, consts, psums);
 *   schedule   block by block, reduction-major: install the block on one plane or both
 *              (install_block), then stream every output vector's activation through it
 *              (stream_block), each pass adding the partial sum or the bias and, on the last
 *              block, requantising to int8 into the output (try_pass).
 */
#include "workloads/tsp/lower_tsp_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"

float ts_lower_tsp_scale(uint64_t k)
{
    return (float)(1.0 / (8.0 * sqrt((double)(k ? k : 1))));
}

int ts_lower_tsp_bias_add(const ts_graph *g, const ts_graph_node *mm, int *bias)
{
    size_t n;
    if (mm->op != TS_OP_MATMUL || mm->nin != 2)
        return -1;
    const ts_graph_tensor *x = ts_graph_get_tensor(g, mm->in[0]), *w = ts_graph_get_tensor(g, mm->in[1]),
                          *y = ts_graph_get_tensor(g, mm->out[0]);
    const int *c = ts_graph_consumers(g, mm->out[0], &n);
    if ((w->kind != TS_TENSOR_WEIGHT && w->kind != TS_TENSOR_CONST) || w->rank != 2 || x->rank < 1 || x->rank == 4 ||
        (x->kind != TS_TENSOR_ACTIVATION && x->kind != TS_TENSOR_INPUT) || n != 1 || y->is_output)
        return -1;
    const ts_graph_node *ad = ts_graph_get_node(g, c[0]);
    if (ad->op != TS_OP_ADD || ad->nin != 2 || ad->in[0] == ad->in[1])
        return -1;
    int bi = ad->in[ad->in[0] == mm->out[0] ? 1 : 0];
    const ts_graph_tensor *b = ts_graph_get_tensor(g, bi), *z = ts_graph_get_tensor(g, ad->out[0]);
    if ((b->kind != TS_TENSOR_WEIGHT && b->kind != TS_TENSOR_CONST) || b->rank < 1 || b->rank > y->rank ||
        b->dims[b->rank - 1] != w->dims[1] || ts_graph_tensor_elems(b) != w->dims[1] || z->rank != y->rank ||
        memcmp(z->dims, y->dims, (size_t)y->rank * sizeof *y->dims))
        return -1;
    *bias = bi;
    return c[0];
}

int32_t ts_lower_tsp_bias_int(double c, float scale)
{
    double b = nearbyint(16.0 * c / (double)scale), lim = (double)(1 << 30);
    return (int32_t)(b < -lim ? -lim : b > lim ? lim : b);
}

/* A Conv's taps packed into vectors of R slots of C lanes (kind 6, docs/lowering-tsp.md *Packed
 * taps*). Its input's producer writes pixel (y, x) in slot (x + k y) mod R only (pack_slots), so tap
 * (ky, kx) of output pixel p lies in slot (base(p) + c) mod R, c = kx dw + k ky dh: a packed vector
 * is the plain sum of its taps' input vectors when its taps have distinct c. The taps go in G
 * groups of distinct c (tap[g][c], -1 for none), and each group has R blocks, one per base. */
#define PACK_MAX 16  /* slots a vector holds at most */
#define PACK_TAPS 64 /* taps of a packed Conv at most */
typedef struct pplan { uint32_t R, k, G, nb; int8_t tap[PACK_TAPS][PACK_MAX]; } pplan; /* nb: bases used */

typedef struct prod {
    const ts_graph_node *nd;
    int wid, bid;            /* weight and bias tensors (bias -1) */
    bool fbias;              /* bid is a folded Add's operand (ts_lower_tsp_bias_add): its values f32, in units
                              * of the activations (ts_lower_tsp_bias_int) */
    tens *x;                 /* input (activations) */
    tens *y;                 /* output */
    uint32_t M, N, K, NT, KT, CT;
    uint32_t hnt, hrows;     /* kinds 0 and 1: output tile hnt's rows past hrows are zeros, read from word 0 as a
                              * last tile's rows past N are (zero_tail); hrows 0: none */
    ts_geom_window w;        /* a conv's geometry (zeros for a matrix product) */
    uint32_t G, Cg, Mg;      /* a conv's groups, input and output channels per group (1, C, M: none) */
    int kind;                /* 0 matrix (B[k][n]), 1 matrix transposed (B[n][k]), 2 conv, 3 conv on host im2col,
                              * 4 Concat, Slice, Transpose, Expand (0/1 blocks, concat.c), 5 a MatMul of two
                              * activations (block rows read from the second's vectors), 6 conv on packed
                              * taps (pack_taps) */
    pplan pl;                /* kind 6: the taps' slots */
    uint32_t rep, repk;      /* the output written in slots (pack_slots): output tiles 0 .. rep - 1 are the
                              * slots, pixel m's channels in tile pslot(m) only; 0: as always */
    int64_t pW, pHW;         /* rep: the image's columns and pixels */
    tens *x0;                /* kind 6: the conv's input, written in slots, which pack_block sums */
    bool packed;             /* kind 6: its packed vectors scheduled already (else beside its passes, in pairs) */
    int xid;                 /* kind 5: x's tensor */
    tens *r;                 /* kind 5: the tensor whose vectors are the blocks' rows */
    int rid;
    uint32_t H, Mh;          /* kind 5: heads (batches), rows of A per head */
    uint64_t sh, sn;         /* kind 5: row n of head h is r's pixel h sh + n sn */
    uint32_t az;             /* kind 5: A read from Q's head split's input (lt_q_split): row m of head h is its
                              * vector (m, h / az), all az heads of a tile in it; 0: A itself */
    uint32_t hz;             /* kind 5: ... and its channel tile h / hz (r a head split's input, lt_v_split:
                              * hz heads a tile); 0: its tile that of the block */
    uint32_t jd;             /* kind 5: A V writing the head join's output (lt_av_join): head h's jd channels at
                              * h jd of output pixel m, its block's rows from row (h jd) mod VL on; 0: none */
    uint32_t hc0;            /* kind 5 with hz: head h's channels start at hc0 + h VL / hz of r (V's Slice computes
                              * nothing, lt_head_base) */
    bool tb;                 /* kind 5: r is B itself, its transpose to be computed first (transpose_rows) */
    lt_cat cat;              /* kind 4: the inputs */
    bool relu;
    tens *res;               /* an Add fused into the requantisation (fused_add): its other operand, whose
                              * vector i the output's vector i adds; NULL: none */
    float scale;
    uint32_t ones;           /* the output's lanes of 1 past N (ones_lanes): kind 3 computes them in its block */
    uint32_t blanes;         /* kind 3 or a 1 x 1 kind 2 of one block: the bias in the MXM, lanes K .. K + blanes - 1
                              * of every input vector holding 1 (the im2col rows; the producer's ones) and of
                              * every weight row parts of its bias (bias_lanes); 0: none */
} prod;

/* The tensor block kt reads. */
static tens *blk_x(const prod *p, uint32_t kt)
{
    return p->kind == 4 ? p->cat.x[lt_cat_input(&p->cat, kt)] : p->x;
}

/* The input pixel (a vector of p->x0) that tap `tap` of output pixel m reads, -1 for padding. */
static int64_t tap_vec(const prod *p, uint32_t m, uint32_t tap)
{
    int64_t iy, ix, hw = p->w.Ho * p->w.Wo, b = m / hw, r = m % hw; /* image b, its output pixel r */
    if (!ts_geom_window_tap(&p->w, r / p->w.Wo, r % p->w.Wo, tap / p->w.kw, tap % p->w.kw, &iy, &ix))
        return -1;
    return (b * p->w.H + iy) * p->w.W + ix;
}

static uint32_t pmod(int64_t a, uint32_t R)
{
    int64_t r = a % (int64_t)R;
    return (uint32_t)(r < 0 ? r + R : r);
}

/* The slot of pixel m of a product written in slots (rep). */
static uint32_t pslot(const prod *p, uint32_t m)
{
    int64_t r = m % p->pHW;
    return pmod(r % p->pW + (int64_t)p->repk * (r / p->pW), p->rep);
}

/* Whether output pixel m has outputs in tile nt (written in slots: in its slot's tile only). */
static bool pix_in(const prod *p, uint32_t m, uint32_t nt)
{
    return !p->rep || pslot(p, m) == nt;
}

/* The buffer the partial sums of block kt go to: they alternate with the blocks, with the groups of
 * a packed Conv (whose R blocks of a group write disjoint pixels'). */
static uint32_t wbuf(const prod *p, uint32_t kt)
{
    return (p->kind == 6 ? kt / p->pl.R + kt % p->pl.R : kt) & 1;
}

/* Kind 6: the base of output pixel m (the slot of its tap (0, 0), in the pads or not). */
static uint32_t pbase(const prod *p, uint32_t m)
{
    int64_t hw = p->w.Ho * p->w.Wo, r = m % hw, iy = r / p->w.Wo * p->w.sh - p->w.pt, ix = r % p->w.Wo * p->w.sw - p->w.pl;
    return pmod(ix + (int64_t)p->pl.k * iy, p->pl.R);
}

/* Kind 6: group g of output pixel m's taps outside the pads: their input vectors into src (may be
 * NULL); returns how many. */
static uint32_t pack_taps(const prod *p, uint32_t m, uint32_t g, int64_t *src)
{
    uint32_t n = 0;
    for (uint32_t c = 0; c < p->pl.R; c++) {
        int64_t v = p->pl.tap[g][c] < 0 ? -1 : tap_vec(p, m, (uint32_t)p->pl.tap[g][c]);
        if (v >= 0 && src)
            src[n] = v;
        n += v >= 0;
    }
    return n;
}

/* The vector of x (blk_x) that pass (m, kt) reads, -1 for zeros (padding). */
static int64_t act_vec(const prod *p, uint32_t m, uint32_t kt)
{
    if (p->kind == 4)
        return lt_cat_vec(&p->cat, m, kt);
    if (p->kind == 5 && p->jd) /* block kt: head kt / CT's row m of A */
        return ((int64_t)(kt / p->CT) * p->Mh + m) * p->CT + kt % p->CT;
    if (p->kind == 5 && p->az) /* head h's rows of Q's split's input, all heads of its tile in them */
        return m / p->Mh == kt ? (int64_t)(m % p->Mh) * p->x->T + kt / p->az : -1;
    if (p->kind == 5) /* a head's rows meet its own blocks only */
        return m / p->Mh == kt / p->CT ? (int64_t)m * p->CT + kt % p->CT : -1;
    if (p->kind == 6) /* block kt: group kt / R for the pixels of base kt mod R */
        return pbase(p, m) == kt % p->pl.R && pack_taps(p, m, kt / p->pl.R, NULL) ? (int64_t)m * p->CT + kt / p->pl.R
                                                                                 : -1;
    if (p->kind != 2)
        return (int64_t)m * p->CT + kt;
    uint32_t tap = kt / p->CT, c = kt % p->CT;
    int64_t iy, ix, hw = p->w.Ho * p->w.Wo, b = m / hw, r = m % hw; /* image b, its output pixel r */
    if (!ts_geom_window_tap(&p->w, r / p->w.Wo, r % p->w.Wo, tap / p->w.kw, tap % p->w.kw, &iy, &ix))
        return -1;
    return ((b * p->w.H + iy) * p->w.W + ix) * p->CT + c;
}

/* Whether block (nt, kt) has a weight other than the zeros between groups: the output channels of
 * tile nt and the input channels of kt's channel tile meet in some group. */
static bool blk_used(const prod *p, uint32_t nt, uint32_t kt, uint32_t VL)
{
    if (p->kind == 4)
        return lt_cat_used(&p->cat, nt, kt, VL, p->N);
    if (p->kind == 5 && p->jd) /* the heads of output tile nt */
        return (uint64_t)(kt / p->CT) * p->jd / VL == nt;
    if (p->G <= 1)
        return true;
    uint64_t c0 = (uint64_t)(kt % p->CT) * VL, c1 = c0 + VL; /* input channels c0 .. c1 - 1 */
    uint64_t n0 = (uint64_t)nt * VL, n1 = n0 + VL < p->N ? n0 + VL : p->N;
    uint64_t g0 = n0 / p->Mg, g1 = (n1 - 1) / p->Mg; /* the groups of the tile's outputs */
    return c0 < (g1 + 1) * p->Cg && g0 * p->Cg < c1;
}

/* The weight multiplying input lane l of block kt for output n, as an element index of the weight
 * tensor; -1 for none. */
static int64_t wgt_index(const prod *p, uint32_t n, uint32_t kt, uint32_t l, uint32_t VL)
{
    if (p->kind == 6) { /* lane l: channel l mod C of the tap of group kt / R in slot l / C for base kt mod R */
        uint32_t C = (uint32_t)p->w.C, R = p->pl.R, j = l / C, c = l % C;
        int tap = j < R ? p->pl.tap[kt / R][(j + R - kt % R) % R] : -1;
        if (tap < 0)
            return -1;
        return (((int64_t)n * C + c) * p->w.kh + tap / p->w.kw) * p->w.kw + tap % p->w.kw;
    }
    if (p->kind == 2) {
        uint32_t tap = kt / p->CT, c = (kt % p->CT) * VL + l, g = n / p->Mg;
        if (c >= p->w.C || c / p->Cg != g) /* a grouped conv's weights are zero between groups */
            return -1;
        return (((int64_t)n * p->Cg + (c - g * p->Cg)) * p->w.kh + tap / p->w.kw) * p->w.kw + tap % p->w.kw;
    }
    uint64_t k = (uint64_t)kt * VL + l;
    if (k >= p->K)
        return -1;
    if (p->kind == 0)
        return (int64_t)(k * p->N + n);
    return (int64_t)((uint64_t)n * p->K + k); /* kinds 1 and 3: [N][K] */
}

/* Output n's bias in tensor bid (the graph's int32 values, else the fill). */
static int32_t bias_at(const lt *L, int bid, uint32_t n)
{
    const ts_graph_tensor *bt = ts_graph_get_tensor(L->g, bid);
    if (bt && bt->data && bt->dtype == TS_DT_I32)
        return ((const int32_t *)bt->data)[n];
    return ts_fill_bias(bid, n);
}

static int32_t one_bias(float scale);

/* The bias of output n, 0 without one; past N, in the lanes of 1 (ones_lanes), one_bias. */
static int32_t bias_of(const lt *L, const prod *p, uint32_t n)
{
    if (p->bid < 0)
        return 0;
    if (n < p->N && p->fbias)
        return ts_lower_tsp_bias_int(
            ts_fill_value_f32(ts_graph_get_tensor(L->g, p->bid), p->bid, n), p->scale);
    return n < p->N ? bias_at(L, p->bid, n) : n < p->N + p->ones ? one_bias(p->scale) : 0;
}

#define BIAS_LANES_MAX 8
/* The lanes of 1 each that N biases of tensor bid take in a block, |b| <= 127 a lane; 0 where they
 * take more than BIAS_LANES_MAX. */
static uint32_t lanes_for(const lt *L, int bid, uint32_t N)
{
    int64_t most = 0;
    for (uint32_t n = 0; n < N; n++) {
        int64_t b = bias_at(L, bid, n);
        most = b < -most ? -b : b > most ? b : most;
    }
    uint32_t lanes = (uint32_t)((most + 126) / 127);
    return lanes <= BIAS_LANES_MAX ? lanes : 0;
}

/* The bias goes into the block, |b| <= 127 per lane, so each pass's VXM chain drops its add and its
 * bias read; the int32 sum is the same. A conv on host im2col of one block with lanes to spare (conv1
 * of ResNet: K = 147, biases of the fill in -256 .. 255, 3 lanes), whose im2col rows hold the 1s, and
 * a 1 x 1 Conv of one block whose input's producer wrote the 1s (ones_lanes: ResNet's conv3 of stages
 * 1 to 3). Returns the lanes, 0 where the bias does not fit in BIAS_LANES_MAX or the lanes past K. */
static uint32_t bias_lanes(const lt *L, const prod *p)
{
    if (p->bid < 0 || p->K >= L->VL)
        return 0;
    if (p->kind == 2 && !(p->KT == 1 && p->G == 1 && p->w.kh * p->w.kw == 1 && p->K == p->x->C))
        return 0;
    if (p->kind != 3 && p->kind != 2)
        return 0;
    uint32_t lanes = lanes_for(L, p->bid, p->N);
    if (p->kind == 2 && p->x->ones < lanes)
        return 0;
    return lanes && p->K + lanes <= L->VL ? lanes : 0;
}

/* The int32 that the requantisation (f32, times the scale, to int8, nearest even) takes to 1; 0
 * where none does. */
static int32_t one_bias(float scale)
{
    int32_t b = (int32_t)lrintf(1.0f / scale);
    for (int32_t d = 0; d <= 2; d++)
        for (int32_t sg = -1; sg <= 1; sg += 2)
            if (b + sg * d > 0 && rintf((float)(b + sg * d) * scale) == 1.0f)
                return b + sg * d;
    return 0;
}

/* Lane j of the bias lanes of output n's weight row: the parts of its bias, 127 at most each. */
static int8_t bias_part(const lt *L, const prod *p, uint32_t n, uint32_t j)
{
    int32_t b = bias_of(L, p, n);
    for (uint32_t i = 0; i < j; i++)
        b -= b > 127 ? 127 : b < -127 ? -127 : b;
    return (int8_t)(b > 127 ? 127 : b < -127 ? -127 : b);
}

/* Row n of block kt (VL lanes, the padding 0): wgt_index is affine in the lane over the lanes
 * that have a weight, so the row is one strided walk of the weight tensor, the divisions done
 * once per row (the weights of every block are the lowering's largest image). */
static void wgt_row(const lt *L, const prod *p, const ts_graph_tensor *wt, uint32_t n, uint32_t kt, uint32_t VL,
                    uint8_t *row)
{
    uint32_t lo = 0, hi = 0;
    int64_t first = 0, step = 1;
    if (n >= p->N) { /* a lane of 1 (kind 3, ones_lanes): its bias lanes alone */
        memset(row, 0, VL);
        for (uint32_t j = 0; j < p->blanes; j++)
            row[p->K + j] = (uint8_t)bias_part(L, p, n, j);
        return;
    }
    if (p->kind == 6) { /* affine per slot only */
        for (uint32_t l = 0; l < VL; l++) {
            int64_t e = wgt_index(p, n, kt, l, VL);
            row[l] = e < 0 ? 0 : (uint8_t)ts_fill_value_i8(wt, p->wid, (uint64_t)e);
        }
        return;
    }
    if (p->kind == 2) {
        uint32_t c0 = (kt % p->CT) * VL, g = n / p->Mg, g0 = g * p->Cg, g1 = g0 + p->Cg;
        lo = g0 > c0 ? g0 - c0 : 0; /* lanes l with g0 <= c0 + l < min(g1, C) */
        hi = (uint32_t)((g1 < p->w.C ? g1 : p->w.C) > c0 ? (g1 < p->w.C ? g1 : p->w.C) - c0 : 0);
        hi = hi < VL ? hi : VL;
        step = p->w.kh * p->w.kw;
        first = lo < hi ? wgt_index(p, n, kt, lo, VL) : 0;
    } else {
        uint64_t k0 = (uint64_t)kt * VL;
        hi = k0 >= p->K ? 0 : p->K - k0 < VL ? (uint32_t)(p->K - k0) : VL;
        step = p->kind == 0 ? (int64_t)p->N : 1;
        first = hi ? wgt_index(p, n, kt, 0, VL) : 0;
    }
    memset(row, 0, VL);
    for (uint32_t l = lo; l < hi; l++)
        row[l] = (uint8_t)ts_fill_value_i8(wt, p->wid, (uint64_t)(first + (int64_t)(l - lo) * step));
    for (uint32_t j = 0; j < p->blanes; j++) /* the bias in the block (bias_lanes) */
        row[p->K + j] = (uint8_t)bias_part(L, p, n, j);
}

/* Valid rows (outputs) of output tile nt: VL but for a short last tile; N for an output written in
 * slots (each tile is a slot: its rows are installed from row nt N, install_block). */
static uint32_t tile_rows(const prod *p, uint32_t nt, uint32_t VL)
{
    if (p->rep)
        return p->N;
    if (p->kind == 5 && p->jd)
        return p->jd;
    if (p->hrows && nt == p->hnt)
        return p->hrows;
    uint32_t N = p->N + (p->kind == 3 ? p->ones : 0); /* kind 3 computes its lanes of 1 in rows past N */
    return N - nt * VL < VL ? N - nt * VL : VL;
}

/* The first of block (nt, kt)'s rows in the product's rows (tile by tile, block by block; a
 * moving operator stores only the blocks it uses: a Slice of 768 of 2304 channels uses 2 of 8). */
/* The rows of block (nt, any) laid out: its tile's rows, but for a split in place (lt_k_inplace) the
 * group's own, the others read from word 0 (zeros). */
static uint32_t blk_stored(const prod *p, uint32_t nt, uint32_t VL)
{
    return p->kind == 4 && p->cat.inplace ? (uint32_t)p->cat.Cout : tile_rows(p, nt, VL);
}

static uint64_t blk_row0(const prod *p, uint32_t nt, uint32_t kt, uint32_t VL)
{
    if (p->rep)
        return ((uint64_t)nt * p->KT + kt) * p->N;
    if (p->kind != 4)
        return ((uint64_t)nt * VL - (p->hrows && nt > p->hnt ? VL - p->hrows : 0)) * p->KT +
               (uint64_t)kt * tile_rows(p, nt, VL);
    uint64_t g = 0;
    for (uint32_t a = 0; a <= nt; a++)
        for (uint32_t b = 0; b < p->KT && (a < nt || b < kt); b++)
            g += blk_used(p, a, b, VL) ? blk_stored(p, a, VL) : 0;
    return g;
}

/* ---- geometry ---- */

/* Whether Conv nd can pack its taps (pplan): one group, C <= VL / 2 channels (R = VL / C slots),
 * and fewer groups of taps than taps. Of the factors k, the first giving the fewest groups. */
static bool packable(const lt *L, const ts_graph_node *nd, pplan *pl, ts_geom_window *w)
{
    if (nd->op != TS_OP_CONV || nd->attrs.group > 1 || !ts_geom_window_of(L->g, nd, w) || w->C < 1 ||
        w->C > L->VL / 2 || L->VL / w->C > PACK_MAX || w->kh * w->kw > PACK_TAPS)
        return false;
    uint32_t R = L->VL / (uint32_t)w->C, taps = (uint32_t)(w->kh * w->kw), best = taps, bk = 0;
    for (uint32_t k = 0; k < R; k++) {
        uint32_t cnt[PACK_MAX] = {0}, G = 0;
        for (uint32_t t = 0; t < taps; t++) {
            uint32_t c = pmod(t % w->kw * w->dw + (int64_t)k * (t / w->kw) * w->dh, R);
            G = ++cnt[c] > G ? cnt[c] : G;
        }
        if (G < best) {
            best = G;
            bk = k;
        }
    }
    if (best >= taps)
        return false;
    *pl = (pplan){.R = R, .k = bk, .G = best};
    memset(pl->tap, -1, sizeof pl->tap);
    for (uint32_t t = 0; t < taps; t++) {
        uint32_t c = pmod(t % w->kw * w->dw + (int64_t)bk * (t / w->kw) * w->dh, R), g = 0;
        while (pl->tap[g][c] >= 0)
            g++;
        pl->tap[g][c] = (int8_t)t;
    }
    return true;
}

/* A Conv whose input is a graph input with C x kh x kw <= VL, or whose im2col rows take no more
 * vectors than the input (ViT's 16 x 16 patches of stride 16): the host lays the input out as
 * im2col rows (one per output pixel, ceil(K / VL) vectors each), so the layer is one product
 * with K = C kh kw. */
static ts_status place_im2col(lt *L, prod *p, int xid, tens *x)
{
    const ts_geom_window *w = &p->w;
    uint32_t K = (uint32_t)(w->C * w->kh * w->kw);
    memset(x, 0, sizeof *x);
    x->P = (uint32_t)(w->N * w->Ho * w->Wo);
    x->C = K;
    x->T = (uint32_t)ts_geom_cdiv(K, L->VL);
    x->off = L->rot % L->nW;
    x->nw = (uint32_t)ts_geom_cdiv((uint64_t)x->off + (uint64_t)x->P * x->T, L->nW);
    uint64_t av;
    char what[96];
    snprintf(what, sizeof what, "the im2col rows of input '%s'", ts_graph_get_tensor(L->g, p->nd->in[0])->name);
    ts_status rc = lt_region(L, 0, x->nw, what, p->nd, true, 0, &x->base, &av);
    if (rc != TS_OK)
        return rc;
    x->ready = ts_calloc((size_t)x->P * x->T, sizeof *x->ready);
    if (!x->ready)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    x->placed = true;
    x->owner = -1;
    image im;
    if ((rc = lt_img_init(L, &im, L->nW, x->base, x->nw)) != TS_OK)
        return rc;
    const ts_graph_tensor *t = ts_graph_get_tensor(L->g, xid);
    int64_t hw = w->Ho * w->Wo;
    for (uint32_t m = 0; m < x->P; m++) {
        int64_t b = m / hw, r = m % hw; /* image b (NCHW: images one after another), its pixel r */
        for (int64_t c = 0; c < w->C; c++)
            for (int64_t ky = 0; ky < w->kh; ky++)
                for (int64_t kx = 0; kx < w->kw; kx++) {
                    int64_t iy, ix;
                    if (!ts_geom_window_tap(w, r / w->Wo, r % w->Wo, ky, kx, &iy, &ix))
                        continue;
                    uint64_t e = (uint64_t)(((b * w->C + c) * w->H + iy) * w->W + ix);
                    uint64_t col = (uint64_t)((c * w->kh + ky) * w->kw + kx);
                    uint64_t k = x->off + (uint64_t)m * x->T + col / L->VL;
                    im.s[k % L->nW][(size_t)(k / L->nW) * L->VL + col % L->VL] = (uint8_t)ts_fill_value_i8(t, xid, e);
                }
        for (uint32_t j = 0; j < p->blanes; j++) { /* the bias lanes (bias_lanes): 1 */
            uint64_t k = x->off + (uint64_t)m * x->T + (K + j) / L->VL;
            im.s[k % L->nW][(size_t)(k / L->nW) * L->VL + (K + j) % L->VL] = 1;
        }
    }
    L->words_used += (uint64_t)x->nw * L->nW;
    return lt_img_flush(L, &im, 0);
}

/* A Conv's geometry; its input placed (graph inputs by the host as im2col vectors into *im2 when
 * they fit one vector, else as they are). */
static ts_status conv_shape(lt *L, const ts_graph_node *nd, prod *p, tens *im2)
{
    int xid = nd->in[0];
    if (!ts_geom_window_of(L->g, nd, &p->w)) /* refused before (lower_tsp.c) */
        return ts_err_set(L->err, TS_EINTERNAL, "Conv '%s': not an NCHW image", nd->name);
    p->N = (uint32_t)p->w.M;
    p->M = (uint32_t)(p->w.N * p->w.Ho * p->w.Wo);
    p->G = nd->attrs.group > 1 ? (uint32_t)nd->attrs.group : 1;
    p->Cg = (uint32_t)p->w.C / p->G;
    p->Mg = (uint32_t)p->w.M / p->G;
    p->K = (uint32_t)(p->Cg * p->w.kh * p->w.kw);
    if (nd->nin > 2)
        p->bid = nd->in[2];
    bool input = !L->t[xid].placed && ts_graph_get_tensor(L->g, xid)->kind == TS_TENSOR_INPUT;
    ts_status rc;
    uint64_t rows = (uint64_t)p->M * ts_geom_cdiv(p->K, L->VL), vecs = (uint64_t)(p->w.N * p->w.H * p->w.W) *
                                                                      ts_geom_cdiv((uint64_t)p->w.C, L->VL);
    if (input && p->G == 1 && (p->K <= L->VL || rows <= vecs)) {
        p->kind = 3;
        p->blanes = bias_lanes(L, p);
        if ((rc = place_im2col(L, p, xid, im2)) != TS_OK)
            return rc;
        p->x = im2;
        p->CT = im2->T;
        p->KT = im2->T;
        return TS_OK;
    }
    if (input && (rc = lt_place_input(L, xid, nd)) != TS_OK)
        return rc;
    p->kind = 2;
    p->x = &L->t[xid];
    p->CT = p->x->T;
    p->KT = (uint32_t)(p->w.kh * p->w.kw) * p->CT;
    p->blanes = bias_lanes(L, p);
    ts_geom_window w;
    if (p->x->rep >= 2 && p->x->T == 1 && packable(L, nd, &p->pl, &w) && p->pl.R == p->x->rep &&
        p->pl.k == p->x->repk) {
        /* its input was written in slots: G packed vectors a pixel (pack_block), R blocks each */
        p->kind = 6;
        p->x0 = p->x;
        p->KT = p->pl.G * p->pl.R;
        p->CT = p->pl.G;
        bool used[PACK_MAX] = {false};
        for (uint32_t m = 0; m < p->M; m++) {
            uint32_t v = pbase(p, m);
            p->pl.nb += !used[v];
            used[v] = true;
        }
    }
    return TS_OK;
}

/* A MatMul of two activations A [H, M, K] x B [H, K, N] (or without H), B the Transpose of an
 * activation X whose channel axis is B's reduction axis (lt_kt_source): row n of head h of every
 * block is X's vector for (h, n), read from MEM when it is ready, so Kᵀ is never computed. A head's
 * rows of A meet its own blocks only (act_vec). Lanes past K meet each other, so X must hold zeros
 * there, as every producer lt_kt_source accepts leaves them. */
static ts_status act_shape(lt *L, const ts_graph_node *nd, prod *p)
{
    int xr, br, r;
    const int64_t *xd = lt_dims(L, nd->in[0], &xr), *bd = lt_dims(L, nd->in[1], &br);
    const ts_graph_node *tr = lt_kt_source(L->g, nd), *vs = tr ? NULL : lt_v_split(L->g, nd);
    if ((xr != 2 && xr != 3) || br != xr || (xr == 3 && xd[0] != bd[0]) || xd[xr - 1] != bd[xr - 2])
        return ts_lower_fail(L->err, nd, "the TSP lowering takes A [H, M, K] times B [H, K, N]");
    p->rid = tr ? tr->in[0] : vs ? lt_head_base(L, vs->in[0], &p->hc0) : nd->in[1];
    p->hz = vs ? L->VL / (uint32_t)bd[xr - 1] : 0;
    p->r = &L->t[p->rid];
    p->tb = !tr;
    const int64_t *td = lt_dims(L, p->rid, &r);
    uint64_t st[TS_GRAPH_MAX_RANK], k = 1; /* the strides of X's pixel axes */
    for (int a = r - 1; a >= 0; a--) {
        st[a] = a == r - 1 ? 0 : k;
        k *= a == r - 1 ? 1 : (uint64_t)td[a];
    }
    p->H = xr == 3 ? (uint32_t)xd[0] : 1;
    p->Mh = (uint32_t)xd[xr - 2];
    p->sh = tr && xr == 3 ? st[tr->attrs.perm[0]] : 0;
    p->sn = tr ? st[tr->attrs.perm[xr - 1]] : 0; /* B itself: set by transpose_rows */
    p->M = p->H * p->Mh;
    p->K = (uint32_t)xd[xr - 1];
    p->N = (uint32_t)bd[xr - 1];
    p->kind = 5;
    const ts_graph_node *qs = tr ? lt_q_split(L->g, nd) : NULL, *sc = qs ? lt_q_scale(L->g, nd) : NULL;
    p->xid = sc ? sc->out[0] : qs ? qs->in[0] : nd->in[0]; /* Q / 8 computed on the split's input */
    p->x = &L->t[p->xid];
    p->az = qs ? L->VL / p->K : 0;
    const ts_graph_node *kv = sc ? lt_k_view(L->g, nd) : NULL;
    if (kv) { /* Q / 8 written a head a vector, masked (lt_k_view): K's rows from its split's input */
        p->rid = lt_head_base(L, kv->in[0], &p->hc0); /* K's Slice computes nothing where it starts a tile */
        p->r = &L->t[p->rid];
        p->hz = p->az;
        p->az = 1;
        p->sh = 0;
        p->sn = 1;
    }
    if (!p->r->placed || !p->x->placed)
        return ts_lower_fail(L->err, nd, "its inputs are not int8 activations the lowering placed");
    p->CT = qs ? 1 : p->x->T;
    p->KT = p->H * p->CT;
    return TS_OK;
}

/* A MatMul's or Gemm's geometry: an activation (its last axis the reduction, the others its rows;
 * not an NCHW image) times a 2-D weight (Gemm: B maybe transposed, a bias of N elements). */
static ts_status matmul_shape(lt *L, const ts_graph_node *nd, prod *p)
{
    const ts_graph_node *wtr = nd->op == TS_OP_MATMUL ? lt_wt_source(L->g, nd) : NULL;
    if (wtr)
        p->wid = wtr->in[0];
    const ts_graph_tensor *wt = ts_graph_get_tensor(L->g, p->wid);
    int xr, wr_;
    const int64_t *xd = lt_dims(L, nd->in[0], &xr);
    const int64_t *wd = lt_dims(L, p->wid, &wr_);
    if (nd->op == TS_OP_MATMUL && wt->kind != TS_TENSOR_WEIGHT && wt->kind != TS_TENSOR_CONST)
        return act_shape(L, nd, p);
    if (xr < 1 || xr == 4 || wr_ != 2 || (wt->kind != TS_TENSOR_WEIGHT && wt->kind != TS_TENSOR_CONST))
        return ts_lower_fail(L->err, nd, "the TSP lowering takes an activation times a 2-D weight");
    p->M = 1;
    for (int k = 0; k + 1 < xr; k++)
        p->M *= (uint32_t)xd[k];
    p->K = (uint32_t)xd[xr - 1];
    bool tb = (nd->op == TS_OP_GEMM && nd->attrs.trans_b) || wtr;
    p->N = (uint32_t)(tb ? wd[0] : wd[1]);
    p->kind = tb ? 1 : 0;
    if (nd->op == TS_OP_GEMM && nd->nin > 2) {
        if (ts_graph_tensor_elems(ts_graph_get_tensor(L->g, nd->in[2])) != p->N)
            return ts_lower_fail(L->err, nd, "the TSP lowering takes a bias of N elements");
        p->bid = nd->in[2];
    }
    p->x = &L->t[nd->in[0]];
    p->CT = p->x->T;
    p->KT = p->CT;
    return TS_OK;
}

/* A matrix product whose int8 weight the graph carries (lt_qkv_pack's copy of an in-projection: Q, V,
 * zeros, K): the first output tile but the last whose last rows' weights are all zeros stores only the
 * rows before them (hnt, hrows); the install reads the others from word 0, as it reads a last tile's
 * rows past N, so no words are laid out for them and their reads repeat. */
static void zero_tail(const lt *L, prod *p)
{
    const ts_graph_tensor *wt = p->wid >= 0 ? ts_graph_get_tensor(L->g, p->wid) : NULL;
    uint32_t VL = L->VL;
    if ((p->kind != 0 && p->kind != 1) || p->rep || (p->bid >= 0 && !p->fbias) || p->blanes || p->ones || !wt || !wt->data ||
        wt->dtype != TS_DT_I8)
        return;
    const int8_t *w = wt->data;
    for (uint32_t nt = 0; nt + 1 < p->NT; nt++) {
        uint32_t r = VL;
        for (bool zero = true; r > 0 && zero; r -= zero) {
            uint64_t n = (uint64_t)nt * VL + r - 1;
            for (uint64_t k = 0; k < p->K && zero; k++)
                zero = w[p->kind == 0 ? k * p->N + n : n * p->K + k] == 0;
        }
        if (r > 0 && r < VL) {
            p->hnt = nt;
            p->hrows = r;
            return;
        }
    }
}

/* A Concat's, Slice's, Transpose's or Expand's geometry (concat.c): its inputs through 0/1 blocks,
 * one block per input channel tile. */
static ts_status cat_shape(lt *L, const ts_graph_node *nd, prod *p)
{
    ts_status rc = lt_cat_shape(L, nd, &p->cat, &p->M, &p->N);
    if (rc != TS_OK)
        return rc;
    p->kind = 4;
    p->x = p->cat.x[0];
    p->KT = p->cat.kt0[p->cat.n];
    p->CT = p->KT;
    p->K = p->N;
    for (int i = 0; i < p->cat.n; i++)
        if (!p->cat.x[i]->placed)
            return ts_lower_fail(L->err, nd, "its input is not an int8 activation the lowering placed");
    return TS_OK;
}

/* ---- memory ---- */

/* Where one product's data lives. */
typedef struct pmem {
    uint32_t woff, wbase;    /* weight rows, tile by tile and block by block: row g is in slice
                              * wfirst + (woff + g) mod wn, word wbase + (woff + g) / wn (or in runs: band) */
    uint32_t wfirst, wn;     /* the west slices (0, nW), or the east ones (nW, nE) when the west is full */
    bool band;               /* rows in runs instead (wrow_at): row g's place from its run of an install */
    bool east;               /* the east planes can take the blocks: their rows lie in the east MEM too */
    uint32_t ewoff, ewbase;  /* ... row g in east slice (ewoff + g) mod nE, word ewbase + (ewoff + g) / nE */
    uint32_t wsplit;         /* split_rows: rows g >= wsplit lie in east slice nW + (w2off + g - wsplit) mod nE, */
    uint32_t w2off, w2base;  /* word w2base + (w2off + g - wsplit) / nE; 0: every row as above */
    uint32_t e2n, w3base;    /* ... where those words are more than the east's fullest half holds, its e2n
                              * words first, the rest from w3base in the other half (0: one half) */
    uint32_t cbase;          /* bias (4 byte planes per output tile) then scale (4), every east slice */
    uint32_t ct;             /* the tiles cbase holds a bias for: NT, or 1 (zeros every tile reads) */
    uint64_t nparts;         /* partial-sum words (4 per output vector), 0 for one reduction block */
    uint32_t hE;             /* east slices per partial-sum buffer */
    uint32_t pbases[2], pwords; /* the two buffers: first word, words */
    uint32_t prun;           /* LEAN: slots in runs of this many passes (psum_word), 0: striped; */
    uint32_t ptw;            /* ... the words of each slice an output tile's slots take */
    uint64_t pav;            /* the buffers may be written after this cycle */
} pmem;

/* LEAN: a MatMul's or Gemm's weight rows in runs (m->band). An install reads rows 16 c .. 16 c + 15 of a
 * block in its cycle c, one from each of 16 slices; striped over the 44 slices row by row, a slice is
 * read about once in 3 cycles, each read with a nop before it in the slice's queue (GPT-2 small's LM
 * head: 151,680 rows read, 301,146 MEM entries). In runs, position P = woff + g's stream u = P mod 16
 * of install cycle v = P / 16 lies in run j = 16 (v / 20) + u (20 = VL / 16 cycles an install), run j
 * in slice j mod 44, words 20 (j / 44) .. + 19, one a cycle: a slice's reads of an install follow one
 * another, with no nop between them. The 16 runs of a cycle lie in 16 slices. */
static bool band_kind(const lt *L, const prod *p)
{
    return L->lean && (p->kind == 0 || p->kind == 1) && !p->rep && p->wid >= 0 && L->VL % IW_STREAMS == 0 &&
           L->nW >= IW_STREAMS;
}

/* Weight row g's slice (*mem) and word (for a split weight, split_rows, the rows before m->wsplit). */
static void wrow_at(const lt *L, const pmem *m, uint64_t g, uint32_t *mem, uint32_t *word)
{
    uint64_t k = m->woff + g;
    if (!m->band) {
        *mem = m->wfirst + (uint32_t)(k % m->wn);
        *word = m->wbase + (uint32_t)(k / m->wn);
        return;
    }
    uint64_t H = L->VL / IW_STREAMS, v = k / IW_STREAMS, j = (v / H) * IW_STREAMS + k % IW_STREAMS;
    *mem = m->wfirst + (uint32_t)(j % m->wn);
    *word = m->wbase + (uint32_t)((j / m->wn) * H + v % H);
}

/* The words of each slice that rows 0 .. rows - 1 take from m->wbase on (wrow_at). */
static uint32_t wrow_words(const lt *L, const pmem *m, uint64_t rows)
{
    if (!m->band)
        return (uint32_t)ts_geom_cdiv(m->woff + rows, m->wn);
    uint32_t most = 0;
    pmem z = *m;
    z.wbase = z.wfirst = 0;
    /* the runs of the last two installs' rows reach the furthest words */
    uint64_t from = rows > 2 * (uint64_t)L->VL ? rows - 2 * (uint64_t)L->VL : 0;
    for (uint64_t g = from; g < rows; g++) {
        uint32_t s, w;
        wrow_at(L, &z, g, &s, &w);
        most = w + 1 > most ? w + 1 : most;
    }
    return most;
}

/* The word of east word index wi (k2 / nE) of a split weight's east part (split_rows). */
static uint32_t east_word(const pmem *m, uint64_t wi)
{
    return m->e2n && wi >= m->e2n ? m->w3base + (uint32_t)(wi - m->e2n) : m->w2base + (uint32_t)wi;
}

/* The 0/1 rows of a Concat, Slice, Transpose, Expand or Reshape: the same as an earlier one's
 * (every layer of BERT moves its values alike: 12 layers' blocks would not fit) are read from where
 * that one's are; else they are laid out as weights are and remembered. */
static ts_status cat_rows(lt *L, const prod *p, pmem *m, uint64_t rows, bool *done)
{
    uint32_t VL = L->VL;
    uint8_t *buf = ts_calloc((size_t)(rows ? rows : 1), VL);
    if (!buf || ts_grow((void **)&L->cats, &L->capcats, L->ncats + 1, sizeof *L->cats)) {
        ts_free(buf);
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    }
    uint64_t g = 0;
    uint32_t lo = 0, hi = VL; /* a split in place: the rows of block kt's group */
    for (uint32_t nt = 0; nt < p->NT; nt++)
        for (uint32_t kt = 0; kt < p->KT; kt++) {
            if (p->cat.inplace) {
                lo = (kt % (uint32_t)p->cat.Z) * (uint32_t)p->cat.Cout;
                hi = lo + (uint32_t)p->cat.Cout;
            }
            for (uint32_t r = lo; r < hi && r < tile_rows(p, nt, VL) && blk_used(p, nt, kt, VL); r++, g++)
                for (uint32_t l = 0; l < VL; l++)
                    buf[g * VL + l] = lt_cat_one(&p->cat, nt * VL + r, kt, l, VL, p->N);
        }
    for (size_t i = 0; i < L->ncats; i++)
        if (L->cats[i].rows == rows && !memcmp(L->cats[i].img, buf, (size_t)rows * VL)) {
            m->woff = L->cats[i].woff;
            m->wbase = L->cats[i].wbase;
            ts_free(buf);
            *done = true;
            return TS_OK;
        }
    L->cats[L->ncats++] = (lt_rows){.img = buf, .rows = rows, .woff = m->woff};
    *done = false;
    return TS_OK;
}

/* Whether the rows of a matrix product's weight (kinds 0 and 1) were laid out by an earlier
 * product reading the same tensor the same way: then *m reads them from there (one copy of a weight
 * that several products read). */
static bool shared_rows(const lt *L, const prod *p, pmem *m)
{
    for (size_t i = 0; (p->kind == 0 || p->kind == 1) && !p->rep && p->wid >= 0 && i < L->nwts; i++) {
        const lt_wrows *w = &L->wts[i];
        if (w->wid == p->wid && w->kind == p->kind && w->N == p->N && w->K == p->K && w->KT == p->KT) {
            m->woff = w->woff;
            m->wbase = w->wbase;
            m->wfirst = w->wfirst;
            m->wn = w->wn;
            m->band = w->band;
            m->east = w->east;
            m->ewoff = w->ewoff;
            m->ewbase = w->ewbase;
            m->wsplit = w->wsplit;
            m->w2off = w->w2off;
            m->w2base = w->w2base;
            m->e2n = w->e2n;
            m->w3base = w->w3base;
            return true;
        }
    }
    return false;
}

/* Remember where a matrix product's weight rows lie (shared_rows). */
static ts_status keep_rows(lt *L, const prod *p, const pmem *m)
{
    if ((p->kind != 0 && p->kind != 1) || p->rep || p->wid < 0)
        return TS_OK;
    if (ts_grow((void **)&L->wts, &L->capwts, L->nwts + 1, sizeof *L->wts))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    L->wts[L->nwts++] = (lt_wrows){.wid = p->wid, .kind = p->kind, .N = p->N, .K = p->K, .KT = p->KT,
                                   .woff = m->woff, .wbase = m->wbase, .wfirst = m->wfirst, .wn = m->wn,
                                   .band = m->band, .east = m->east, .ewoff = m->ewoff, .ewbase = m->ewbase,
                                   .wsplit = m->wsplit, .w2off = m->w2off, .w2base = m->w2base,
                                   .e2n = m->e2n, .w3base = m->w3base};
    return TS_OK;
}

/* A 3 x 3 (or larger) Conv of KQUAD_PASSES to QUAD_PASSES - 1 pixels, or a 1 x 1 one of fewer than
 * DUAL_PASSES, with four reduction blocks or more (ResNet's stages 3 and 4: the 3 x 3 convs of 196 and
 * 49 pixels, stage 4's 1 x 1 convs of 2,048 channels) gets the east copy of its weights and takes its
 * blocks four by four, one on each plane (kquad_mode, kquad_block). */
#define KQUAD_PASSES 32

static bool kquad_kind(const prod *p)
{
    return p->kind == 2 && (p->w.kh * p->w.kw > 1 || p->M < DUAL_PASSES) && p->G == 1 && !p->rep && p->KT >= 4 &&
           p->M >= KQUAD_PASSES && p->M < QUAD_PASSES;
}

/* Whether product p's blocks go on the east planes too: blocks of laid-out weights (not a moving
 * operator's 0/1 rows, not Q Kᵀ's activation rows) streaming QUAD_PASSES vectors or more, in the
 * first mode of the lowering (lower_tsp.c, MODES), on a chip with two east planes east of every east
 * MEM slice. A product of fewer rows keeps to the west planes: its blocks' installs, not their
 * passes, are its time (docs/lowering-tsp.md, *The east planes*); but a Conv of one reduction block
 * and four output tiles or more streaming DUAL_PASSES vectors or more (ResNet-50's stage-3 conv3,
 * 256 -> 1,024 channels, 196 pixels) installs each tile's block on one plane, the planes in turn
 * (install_block), so the east planes take a tile each without installing it twice; and a 1 x 1 Conv
 * of two reduction blocks and several tiles from KQUAD_PASSES vectors on (layer3.0.downsample, stage
 * 4's conv3s) goes in pairs of planes, a tile on each pair (pair_mode, sched_pairs); one of four
 * reduction blocks and one tile or more (layer3.1-3.5.conv1, layer4.0.conv1) a block on each plane at
 * once (q1_mode, sched_q1); and a kquad_kind Conv four blocks at once. */
static bool east_kind(const lt *L, const prod *p)
{
    uint32_t far = lt_mem_pos(L, L->nW + L->nE - 1);
    return !L->mode && L->tg->mxm_east >= 2 && L->tg->pos_mxm_e[0] > far && L->tg->pos_mxm_e[1] > far &&
           p->kind != 4 && p->kind != 5 &&
           (p->M >= QUAD_PASSES ||
            (p->kind == 2 && p->M >= DUAL_PASSES &&
             ((p->KT == 1 && p->NT >= 4) || (p->KT == 4 && p->w.kh * p->w.kw == 1))) ||
            (p->kind == 2 && !p->rep && p->M >= KQUAD_PASSES && p->KT == 2 && p->NT >= 2 && p->w.kh * p->w.kw == 1) ||
            kquad_kind(p));
}

/* The rows for the east planes (docs/lowering-tsp.md, *The east planes*): rows laid out in the east
 * MEM already (the west was full) are read there eastward; rows in the west get a copy striped over
 * the east slices (fresh words of bank 1), from the west image im, and the word of zeros the rows
 * past a block's valid ones read is laid out once. Where the east has no room the product keeps to
 * the west planes. */
static ts_status east_rows(lt *L, const prod *p, pmem *m, uint64_t rows, const image *im)
{
    m->east = false;
    if (!east_kind(L, p))
        return TS_OK;
    bool short_before = L->room_short;
    uint64_t av;
    ts_status rc = TS_OK;
    if (!L->ezero) {
        uint32_t zw;
        if ((rc = lt_region(L, 1, 1, "a word of zeros", p->nd, true, 1, &zw, &av)) == TS_OK)
            L->ezero = zw + 1;
    }
    if (rc == TS_OK && m->wfirst == L->nW) {
        m->east = L->east_used = true;
        m->ewoff = m->woff;
        m->ewbase = m->wbase;
        return TS_OK;
    }
    m->ewoff = L->rot % L->nE;
    uint32_t ewords = (uint32_t)ts_geom_cdiv(m->ewoff + rows, L->nE);
    if (rc == TS_OK)
        rc = lt_region(L, 1, ewords, "an east copy of the weights", p->nd, true, 1, &m->ewbase, &av);
    if (rc == TS_EINPUT) { /* no room: the west planes alone, the error forgotten */
        if (L->err) {
            ts_err_free(L->err);
            ts_err_init(L->err);
        }
        L->room_short = short_before;
        return TS_OK;
    }
    image ei;
    if (rc != TS_OK || (rc = lt_img_init(L, &ei, L->nE, m->ewbase, ewords)) != TS_OK)
        return rc;
    for (uint64_t g = 0; g < rows; g++) {
        uint64_t e = m->ewoff + g;
        uint32_t sm, sw;
        wrow_at(L, m, g, &sm, &sw);
        memcpy(ei.s[e % L->nE] + (size_t)(e / L->nE) * L->VL, im->s[sm - m->wfirst] + (size_t)(sw - m->wbase) * L->VL,
               L->VL);
    }
    if ((rc = lt_img_flush(L, &ei, L->nW)) != TS_OK)
        return rc;
    L->words_used += (uint64_t)ewords * L->nE;
    m->east = L->east_used = true;
    return TS_OK;
}

/* Split rows (a weight that neither hemisphere holds in one bank half: GPT-2's LM head in prefill,
 * 3,428 words a slice where the west has 156 left and the east 3,335): the first rows in the fresh
 * words of the west's fullest half, from row m->wsplit on the rest in the east's, read westward
 * through the VXM to the planes as the east rows of a full west are; where the east's half with the
 * most room cannot hold them, in the compact layout, its words first and the rest in the other half
 * (m->e2n, m->w3base: the LM head in decode under LEAN, 3,440 words where the west had 24 and the
 * east's halves 3,091 and 2,780; allowed in the layout as always too, it gave GPT-2 small's prefill
 * a schedule whose text did not fit, 11,618 words short, where it otherwise runs).
 * *wwords and *ewords the words of each; the caller keeps the west's error where they do not fit. */
static ts_status split_rows(lt *L, const prod *p, pmem *m, uint64_t rows, const char *what, uint32_t *wwords,
                            uint32_t *ewords)
{
    int bw, be;
    uint32_t rw = lt_fresh_room(L, 0, &bw), re = lt_fresh_room(L, 1, &be);
    uint64_t ra = (uint64_t)rw * L->nW, w2off = L->rot % L->nE, wav;
    m->woff = L->rot % L->nW;
    m->wfirst = 0;
    m->wn = L->nW;
    m->band = false; /* the rows in order (wrow_at) */
    const alloc *o = &L->al[1][!be]; /* the east's other half, in the compact layout */
    uint64_t ro = L->compact ? o->limit - o->top : 0;
    if (ra <= m->woff || ra - m->woff >= rows || rows - (ra - m->woff) > UINT32_MAX ||
        ts_geom_cdiv(w2off + rows - (ra - m->woff), L->nE) > re + ro)
        return TS_EINPUT;
    ra -= m->woff;
    *wwords = rw;
    *ewords = (uint32_t)ts_geom_cdiv(w2off + rows - ra, L->nE);
    ts_status rc = lt_region(L, 0, *wwords, what, p->nd, true, bw, &m->wbase, &wav);
    m->e2n = *ewords > re ? re : 0; /* the rest in the other half (split_rows' comment) */
    if (rc == TS_OK)
        rc = lt_region(L, 1, m->e2n ? re : *ewords, what, p->nd, true, be, &m->w2base, &wav);
    if (rc == TS_OK && m->e2n)
        rc = lt_region(L, 1, *ewords - re, what, p->nd, true, !be, &m->w3base, &wav);
    m->wsplit = (uint32_t)ra;
    m->w2off = (uint32_t)w2off;
    return rc;
}

/* The valid rows of every block, striped over the west MEM (fresh words of bank 1); a weight an
 * earlier product laid out the same way is read from there. */
static ts_status weights(lt *L, const prod *p, pmem *m)
{
    uint32_t VL = L->VL;
    if (p->kind == 5 || shared_rows(L, p, m)) /* kind 5: the rows are the second input's vectors */
        return TS_OK;
    uint64_t rows = blk_row0(p, p->NT - 1, p->KT - 1, VL) +
                    (p->kind != 4 || blk_used(p, p->NT - 1, p->KT - 1, VL) ? blk_stored(p, p->NT - 1, VL) : 0);
    m->woff = L->rot % L->nW;
    m->wfirst = 0;
    m->wn = L->nW;
    m->band = band_kind(L, p);
    m->e2n = 0;
    bool done = false;
    ts_status rc;
    if (p->kind == 4 && ((rc = cat_rows(L, p, m, rows, &done)) != TS_OK || done))
        return rc;
    uint32_t wwords = wrow_words(L, m, rows);
    uint64_t wav;
    uint32_t e2words = 0;
    char what[96];
    snprintf(what, sizeof what, "weights '%s'", p->wid >= 0 ? ts_graph_get_tensor(L->g, p->wid)->name : "(0/1 blocks)");
    rc = lt_region(L, 0, wwords, what, p->nd, true, 1, &m->wbase, &wav);
    if (rc == TS_EINPUT && p->kind != 4 && L->err) {
        /* the west MEM is full (ViT's last layer): the east slices hold the rows, read westward
         * through the VXM to the planes; where neither has room, the west's shortfall is told */
        ts_err west = *L->err;
        west.detail = NULL;
        ts_err_free(L->err);
        ts_err_init(L->err);
        m->woff = L->rot % L->nE;
        m->wfirst = L->nW;
        m->wn = L->nE;
        uint32_t ewords = wrow_words(L, m, rows);
        if ((rc = lt_region(L, 1, ewords, what, p->nd, true, 1, &m->wbase, &wav)) != TS_OK) {
            ts_err_free(L->err);
            ts_err_init(L->err);
            if (rc != TS_EINPUT || (rc = split_rows(L, p, m, rows, what, &wwords, &ewords)) != TS_OK) {
                ts_err_free(L->err);
                *L->err = west;
                return rc;
            }
            ts_err_free(&west);
        }
        L->room_short = false; /* the east had room */
        if (!m->wsplit)
            wwords = ewords;
        e2words = ewords;
    }
    image im, im2, im3;
    if (rc != TS_OK || (rc = lt_img_init(L, &im, m->wn, m->wbase, wwords)) != TS_OK)
        return rc;
    if (m->wsplit && (rc = lt_img_init(L, &im2, L->nE, m->w2base, m->e2n ? m->e2n : e2words)) != TS_OK) {
        lt_img_flush(L, &im, 0); /* frees it */
        return rc;
    }
    if (m->wsplit && m->e2n && (rc = lt_img_init(L, &im3, L->nE, m->w3base, e2words - m->e2n)) != TS_OK) {
        lt_img_flush(L, &im, 0); /* frees them */
        lt_img_flush(L, &im2, 0);
        return rc;
    }
    if (p->kind == 4)
        L->cats[L->ncats - 1].wbase = m->wbase;
    const ts_graph_tensor *wt = p->wid >= 0 ? ts_graph_get_tensor(L->g, p->wid) : NULL;
    uint64_t g = 0;
    for (uint32_t nt = 0; nt < p->NT; nt++)
        for (uint32_t kt = 0; kt < p->KT; kt++) {
            uint32_t nv = p->kind == 4 && !blk_used(p, nt, kt, VL) ? 0 : blk_stored(p, nt, VL);
            for (uint32_t r = 0; r < nv; r++, g++) {
                uint64_t k2 = m->w2off + g - m->wsplit;
                uint32_t sm = 0, sw = 0;
                if (!m->wsplit || g < m->wsplit)
                    wrow_at(L, m, g, &sm, &sw);
                uint64_t wi = k2 / L->nE;
                uint8_t *row = !m->wsplit || g < m->wsplit ? im.s[sm - m->wfirst] + (size_t)(sw - m->wbase) * VL
                               : m->e2n && wi >= m->e2n    ? im3.s[k2 % L->nE] + (size_t)(wi - m->e2n) * VL
                                                           : im2.s[k2 % L->nE] + (size_t)wi * VL;
                if (p->kind == 4)
                    memcpy(row, L->cats[L->ncats - 1].img + g * VL, VL);
                if (p->kind != 4)
                    wgt_row(L, p, wt, p->rep ? r : nt * VL + r, kt, VL, row);
            }
        }
    if (m->wsplit) { /* no east copy: the east holds the rows past wsplit already */
        ts_status r1 = lt_img_flush(L, &im, 0), r2 = lt_img_flush(L, &im2, L->nW),
                  r3 = m->e2n ? lt_img_flush(L, &im3, L->nW) : TS_OK;
        if ((rc = r1 != TS_OK ? r1 : r2 != TS_OK ? r2 : r3) != TS_OK)
            return rc;
        L->words_used += (uint64_t)e2words * L->nE;
    } else if ((rc = east_rows(L, p, m, rows, &im)) != TS_OK || (rc = lt_img_flush(L, &im, m->wfirst)) != TS_OK)
        return rc;
    L->words_used += (uint64_t)wwords * m->wn;
    return keep_rows(L, p, m);
}

/* Bias and scale, replicated in every east slice (4 byte planes per tile of outputs). Without a
 * bias in the compact layout (L->compact) every tile reads the same 4 words of zeros. */
static ts_status consts(lt *L, const prod *p, pmem *m)
{
    m->ct = (L->compact || L->lean) && p->bid < 0 ? 1 : p->NT; /* LEAN: one kept zero bias */
    uint32_t VL = L->VL, NT = m->ct, cwords = 4 * NT + 4, sb;
    memcpy(&sb, &p->scale, 4);
    /* without a bias the words depend on the tiles and the scale alone: laid out once (BERT's moves
     * and attention products, 12 layers of them, would take the east MEM a batch of 4 needs) */
    for (uint32_t i = 0; p->bid < 0 && i < L->nzc; i++)
        if (L->zc[i][0] == NT && L->zc[i][1] == sb) {
            m->cbase = L->zc[i][2];
            return TS_OK;
        }
    ts_status rc = lt_const_region(L, cwords, "the bias and scale", p->nd, &m->cbase);
    if (rc == TS_OK && p->bid < 0 && L->nzc < LT_ZC_MAX) {
        L->zc[L->nzc][0] = NT;
        L->zc[L->nzc][1] = sb;
        L->zc[L->nzc++][2] = m->cbase;
    }
    image im;
    if (rc != TS_OK || (rc = lt_img_init(L, &im, L->nE, m->cbase, cwords)) != TS_OK)
        return rc;
    for (uint32_t e = 0; e < L->nE; e++) {
        for (uint32_t l = 0; l < NT * VL; l++) {
            uint32_t n = l; /* lane l computes output n; written in slots, tile r's slot r only */
            if (p->rep)
                n = l % VL >= l / VL * p->N && l % VL < (l / VL + 1) * p->N ? l % VL - l / VL * p->N : p->N;
            int32_t b = bias_of(L, p, n); /* past N, the lanes of 1 (ones_lanes) */
            for (int by = 0; by < 4; by++)
                im.s[e][((size_t)(4 * (l / VL) + (uint32_t)by)) * VL + l % VL] = (uint8_t)((uint32_t)b >> (8 * by));
        }
        for (uint32_t l = 0; l < VL; l++)
            for (int by = 0; by < 4; by++)
                im.s[e][((size_t)(4 * NT + (uint32_t)by)) * VL + l] = (uint8_t)(sb >> (8 * by));
    }
    return lt_const_flush(L, &im);
}

/* LEAN: the partial sums in runs. Striped, slot q's 4 words lie in the 4 slices after slot q - 1's, so
 * a pass streaming a vector a cycle takes each slice of a buffer about once in 5 cycles, each access
 * with a nop before it in the slice's queue. In runs, row r = q / NT of output tile t = q mod NT lies
 * in the slices of group (r / PSUM_RUN) mod (hE / 4), 4 slices a group, at word t ptw + (r / (PSUM_RUN
 * groups)) PSUM_RUN + r mod PSUM_RUN: PSUM_RUN passes in a row take the same 4 slices, a word a cycle.
 * A product of fewer rows keeps them striped: GPT-2's LM head (the last position alone, 158 output
 * tiles) took 2,528 words of a bank half in runs, which no half had, 15 striped. */
#define PSUM_RUN 16

/* The slice (*mem) and word of byte plane b of partial-sum slot q in buffer buf. */
static void psum_word(const lt *L, const pmem *pm, uint64_t q, uint32_t NT, uint32_t buf, uint32_t b,
                      uint32_t *mem, uint32_t *word)
{
    if (!pm->prun) {
        uint64_t k = q * 4 + b;
        *mem = L->nW + buf * pm->hE + (uint32_t)(k % pm->hE);
        *word = pm->pbases[buf] + (uint32_t)(k / pm->hE);
        return;
    }
    uint64_t r = q / NT, t = q % NT, ng = pm->hE / 4;
    *mem = L->nW + buf * pm->hE + (uint32_t)(4 * ((r / pm->prun) % ng) + b);
    *word = pm->pbases[buf] + (uint32_t)(t * pm->ptw + (r / (pm->prun * ng)) * pm->prun + r % pm->prun);
}

/* Partial sums: 4 words per output vector, striped over the east MEM, in two buffers, each on
 * half of the east slices and in its own bank: a pass reads one and writes the other, so no slice
 * mixes the reads and writes of one block. */
static ts_status psum_regions(lt *L, const prod *p, uint32_t rows, bool runs, pmem *m)
{
    m->hE = L->nE / 2;
    m->pbases[0] = m->pbases[1] = 0;
    m->pwords = (uint32_t)ts_geom_cdiv(m->nparts, m->hE);
    m->prun = m->ptw = 0;
    if (runs) { /* in runs (psum_word) */
        uint64_t per = (uint64_t)PSUM_RUN * (m->hE / 4);
        m->prun = PSUM_RUN;
        m->ptw = (uint32_t)(ts_geom_cdiv(rows, per) * PSUM_RUN);
        m->pwords = m->ptw * p->NT;
    }
    uint64_t av2 = 0;
    ts_status rc;
    m->pav = 0;
    if (m->pwords &&
        (rc = lt_region(L, 1, m->pwords, "the int32 partial sums", p->nd, false, 1, &m->pbases[0], &m->pav)) != TS_OK)
        return rc;
    if (m->pwords &&
        (rc = lt_region(L, 1, m->pwords, "the int32 partial sums", p->nd, false, 0, &m->pbases[1], &av2)) != TS_OK) {
        if (lt_al_put(lt_alloc_of(L, 1, m->pbases[0]), m->pbases[0], m->pwords, m->pav))
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        return rc;
    }
    if (av2 > m->pav)
        m->pav = av2;
    return TS_OK;
}

static ts_status psums(lt *L, const prod *p, uint32_t rows, bool need, pmem *m)
{
    m->nparts = p->KT > 1 && need ? (uint64_t)rows * p->NT * 4 : 0;
    return psum_regions(L, p, rows, L->lean_runs && m->nparts && L->nE / 2 >= 4 && rows >= PSUM_RUN, m);
}

/* ---- schedule ---- */

/* The state of one product's schedule. */
typedef struct psched {
    prod *p;
    pmem m;
    ts_lower_tsp_layer *ly;
    uint32_t *firstk, *lastk; /* per output vector and tile: its first and last block with an input */
    uint32_t *rmem, *rword;   /* the current block's rows: slice and word */
    uint32_t *ermem, *erword; /* ... their east copy (pm.east) */
    uint64_t *rlb;            /* kind 5: ... and the cycle each may be read from */
    uint64_t *pready;         /* per output vector and tile: partial sum readable from */
    uint8_t *pbuf;            /* ... and the buffer holding it */
    lt_need *need;            /* kind 6 in pairs or quads: a packing group's needs (pack_pixel) */
    uint64_t rd_last;         /* the last read of the input */
    /* the current block */
    uint32_t kt, nt, nv;
    uint32_t m0, m1;          /* the output vectors' rows of this chunk (partial sums for them only) */
    int planes[4], np;
    uint64_t lbs[4], last_abcs[4]; /* per plane: first abc after the install, last abc */
} psched;

/* The planes: 0 and 1 the west ones (W0, W1), 2 and 3 the east ones (E0, E1). A west plane takes its
 * values flowing west, an east one flowing east. */
static uint32_t plane_pos(const lt *L, int pl)
{
    return pl < 2 ? L->tg->pos_mxm_w[pl] : L->tg->pos_mxm_e[pl - 2];
}

static uint32_t plane_q(const lt *L, int pl)
{
    return L->tg->q_mxm + L->tg->mxm_queues * (pl < 2 ? (uint32_t)pl : L->tg->mxm_west + (uint32_t)pl - 2);
}

static int plane_dir(int pl)
{
    return pl < 2 ? WEST : EAST;
}

/* An iw of one block's rows on plane pl at cycles I .. I + VL / 16 - 1 (16 rows a cycle). */
typedef struct install_arg {
    int pl;
    const uint32_t *rows_mem, *rows_word;
    const uint64_t *rows_lb; /* per row: the cycle its read may issue from (an activation's), NULL: 0 */
    const uint8_t *per;      /* with rows_lb: rows installed in each cycle (rows_plan) */
    uint32_t ncyc;           /* ... over this many cycles */
    uint32_t nvalid, tag;
    uint32_t row0;           /* the rows are block rows row0 .. row0 + nvalid - 1, the others zeros */
    unsigned seg;            /* the stretches of the rows' streams (west rows to a west plane: SEG_W) */
    bool band;               /* the rows lie in runs (pmem.band): their lw on consecutive cycles (try_lw_run) */
} install_arg;

/* An activation's rows lie in any slices, and one slice reads one word a cycle: each cycle of the
 * install takes the next rows up to 16 while their slices differ (an iw of fewer streams);
 * returns the cycles. (Q Kᵀ of BERT's [S, h, d] keys: rows 12 vectors apart, 11 rows to a cycle.) */
static uint32_t rows_plan(const lt *L, const uint32_t *rmem, uint32_t nvalid, uint32_t row0, uint8_t *per)
{
    uint32_t c = 0;
    for (uint32_t r = 0; r < L->VL; c++) {
        uint64_t used[4] = {0}; /* slices up to 256 */
        uint32_t n = 0;
        while (r < L->VL && n < IW_STREAMS) {
            if (r - row0 < nvalid) { /* block rows row0 .. row0 + nvalid - 1 (wraps below row0) */
                uint32_t m = rmem[r - row0] & 255;
                if ((used[m >> 6] >> (m & 63)) & 1)
                    break;
                used[m >> 6] |= 1ull << (m & 63);
            }
            n++;
            r++;
        }
        per[c] = (uint8_t)n;
    }
    return c;
}

/* try_install for rows read from an activation: a->per[c] rows in cycle c. */
static bool try_install_rows(lt *L, const install_arg *a, uint64_t I)
{
    uint32_t pp = L->tg->pos_mxm_w[a->pl], q = L->tg->q_mxm + L->tg->mxm_queues * (uint32_t)a->pl, r = 0;
    for (uint32_t c = 0; c < a->ncyc; c++) {
        uint64_t t = I + c;
        if (!lt_take(L, &L->q[q].issue, t))
            return false;
        for (uint32_t i = 0; i < a->per[c]; i++, r++) {
            uint32_t v = r - a->row0; /* wraps below row0 */
            if (!lt_take_stream(L, WEST, (int)i, t, pp, SEG_W))
                return false;
            if (v < a->nvalid ? !lt_rd(L, a->rows_mem[v], a->rows_word[v], t, pp, WEST, (int)i, a->tag, a->rows_lb[v])
                              : !lt_rd_any(L, 0, 0, t, pp, WEST, (int)i, a->tag))
                return false;
        }
        E1(L, q, t, LT_IW, L->tg->reg.i8, lt_sreg(L, WEST, 0), (int32_t)a->per[c], (int32_t)a->tag);
    }
    return true;
}

/* Rows c 16 .. c 16 + 15 of a's block, read from the west MEM onto the 16 streams into plane pp by
 * one instruction op (iw or lw) of queue q at cycle t (rows past the block's valid ones read
 * anything). */
static bool rows16(lt *L, const install_arg *a, uint32_t c, uint64_t t, uint32_t pp, uint32_t q, int op)
{
    int dir = plane_dir(a->pl);
    if (!lt_take(L, &L->q[q].issue, t))
        return false;
    for (uint32_t i = 0; i < IW_STREAMS; i++) {
        uint32_t r = c * IW_STREAMS + i - a->row0; /* wraps below row0 */
        if (!lt_take_stream(L, dir, (int)i, t, pp, a->seg))
            return false;
        if (r < a->nvalid ? !lt_rd(L, a->rows_mem[r], a->rows_word[r], t, pp, dir, (int)i, a->tag, 0)
            : dir == WEST ? !lt_rd_any(L, 0, 0, t, pp, WEST, (int)i, a->tag)
                          : !lt_rd_any(L, 1, L->ezero - 1, t, pp, EAST, (int)i, a->tag))
            return false;
    }
    E1(L, q, t, op, L->tg->reg.i8, lt_sreg(L, dir, 0), IW_STREAMS, (int32_t)a->tag);
    return true;
}

static bool try_install(lt *L, const void *arg, uint64_t I, uint64_t *w)
{
    const install_arg *a = arg;
    uint32_t pp = plane_pos(L, a->pl), q = plane_q(L, a->pl);
    (void)w;
    if (a->rows_lb)
        return try_install_rows(L, a, I);
    for (uint32_t c = 0; c < L->VL / IW_STREAMS; c++)
        if (!rows16(L, a, c, I + c, pp, q, LT_IW))
            return false;
    return true;
}

/* One lw of an install through the weight buffer: rows c 16 .. c 16 + 15 of the block at cycle t. */
typedef struct lw_arg { const install_arg *a; uint32_t c; } lw_arg;

static bool try_lw(lt *L, const void *arg, uint64_t t, uint64_t *w)
{
    const install_arg *a = ((const lw_arg *)arg)->a;
    (void)w;
    return rows16(L, a, ((const lw_arg *)arg)->c, t, plane_pos(L, a->pl), plane_q(L, a->pl), LT_LW);
}

/* The iw that copies the weight buffer into the plane at cycle t. */
static bool try_iw_buf(lt *L, const void *arg, uint64_t t, uint64_t *w)
{
    const install_arg *a = arg;
    uint32_t q = plane_q(L, a->pl);
    (void)w;
    if (!lt_take(L, &L->q[q].issue, t))
        return false;
    E1(L, q, t, LT_IW, L->tg->reg.i8, L->tg->reg.nul, 0, 0);
    return true;
}

/* LEAN, rows in runs (wrow_at): the VL / 16 lw of an install on consecutive cycles from t, so that each
 * slice reads its run of rows with no nop between them, where they fit at a cycle from which they end
 * before the plane's last abc (the iw no later for it) or at the first; past that the try succeeds
 * with nothing placed and *run says so (the lw then go one by one, install_buffered). */
typedef struct lw_run { const install_arg *a; uint64_t first, last; bool *run; } lw_run;

static bool try_lw_run(lt *L, const void *arg, uint64_t t, uint64_t *w)
{
    const lw_run *r = arg;
    uint32_t n = L->VL / IW_STREAMS;
    (void)w;
    if (t != r->first && t + n > r->last) {
        *r->run = false;
        return true;
    }
    for (uint32_t c = 0; c < n; c++)
        if (!rows16(L, r->a, c, t + c, plane_pos(L, r->a->pl), plane_q(L, r->a->pl), LT_LW))
            return false;
    *r->run = true;
    return true;
}

/* An install through the weight buffer (every block whose rows are laid-out weights): the VL / 16 lw
 * fill the buffer while the plane still streams the block before, from the cycle after that
 * block's own copy, each where its reads fit (under LEAN with rows in runs, on consecutive cycles
 * where they can: try_lw_run); one iw copies the buffer after the plane's last abc, so the plane
 * waits one cycle instead of the install's 20 and its reads' turns among the passes around. *I the
 * iw's cycle. */
static ts_status install_buffered(lt *L, const install_arg *a, const ts_graph_node *nd, uint64_t *I)
{
    uint64_t t = L->buf_free[a->pl], w;
    ts_status rc = TS_OK;
    bool run = false;
    if (a->band) {
        lw_run r = {a, t, L->plane_busy[a->pl], &run};
        if ((rc = lt_search(L, try_lw_run, &r, NULL, &t, &w, nd, true)) != TS_OK)
            return rc;
        if (run)
            t += L->VL / IW_STREAMS;
        else
            t = L->buf_free[a->pl];
    }
    for (uint32_t c = 0; !run && c < L->VL / IW_STREAMS && rc == TS_OK; c++, t++) {
        lw_arg la = {a, c};
        rc = lt_search(L, try_lw, &la, NULL, &t, &w, nd, true);
    }
    if (rc != TS_OK)
        return rc;
    *I = t > L->plane_busy[a->pl] ? t : L->plane_busy[a->pl]; /* after the last lw and the last abc */
    if ((rc = lt_search(L, try_iw_buf, a, NULL, I, &w, nd, true)) == TS_OK)
        L->buf_free[a->pl] = *I + 1;
    return rc;
}

/* Install the current block on plane s->planes[j]: through the weight buffer where the plane still
 * streams, else by iw; s->lbs[j] its first abc's cycle from then on. */
static ts_status install_on(lt *L, psched *s, int j)
{
    uint8_t per[TS_TSP_TARGET_MAX_STREAMS * 64];
    uint32_t ncyc = L->VL / IW_STREAMS;
    uint32_t jrow0 = s->p->kind == 5 && s->p->jd ? (s->kt / s->p->CT) * s->p->jd % L->VL : 0;
    if (s->p->kind == 5 && L->VL <= sizeof per)
        ncyc = rows_plan(L, s->rmem, s->nv, jrow0, per);
    int pl = s->planes[j];
    install_arg a = {.pl = pl, .rows_mem = pl < 2 ? s->rmem : s->ermem, .rows_word = pl < 2 ? s->rword : s->erword,
                     .nvalid = s->nv, .rows_lb = s->p->kind == 5 ? s->rlb : NULL, .per = per, .ncyc = ncyc,
                     .tag = lt_new_tag(L), .row0 = s->p->rep ? s->nt * s->p->N : 0,
                     .seg = pl >= 2 ? SEG_E : s->m.wfirst == L->nW || s->m.wsplit ? SEG_ALL : SEG_W,
                     .band = s->m.band && (pl < 2 || (s->m.wfirst == L->nW && !s->m.wsplit))};
    if (s->p->kind == 5 && s->p->jd) /* A V writing the join: head h's rows at its channels, zeros around */
        a.row0 = jrow0;
    if (s->p->kind == 4 && s->p->cat.inplace) { /* a split in place: its group's rows, zeros around them */
        a.row0 = (s->kt % (uint32_t)s->p->cat.Z) * (uint32_t)s->p->cat.Cout;
        a.nvalid = (uint32_t)s->p->cat.Cout;
    }
    uint64_t I = L->plane_busy[a.pl], w;
    for (uint32_t r = 0; a.rows_lb && r < s->nv; r++) /* row r is read about r / 16 cycles after I */
        if (a.rows_lb[r] > I + L->VL / IW_STREAMS)
            I = a.rows_lb[r] - L->VL / IW_STREAMS;
    if (!a.rows_lb && L->buf_free[a.pl] < L->plane_busy[a.pl]) {
        ts_status rc = install_buffered(L, &a, s->p->nd, &I);
        if (rc != TS_OK)
            return rc;
        lt_span(s->ly, I, I + 1);
        s->ly->blocks++;
        s->lbs[j] = I + L->tg->d_func.iw;
        s->last_abcs[j] = I;
        return TS_OK;
    }
    ts_status rc = lt_search(L, try_install, &a, NULL, &I, &w, s->p->nd, true);
    if (rc == TS_OK && a.rows_lb && L->rdmax > s->p->r->last_read)
        s->p->r->last_read = L->rdmax;
    if (rc != TS_OK)
        return rc;
    lt_span(s->ly, I, I + ncyc);
    s->ly->blocks++;
    s->lbs[j] = I + ncyc - 1 + L->tg->d_func.iw;
    s->last_abcs[j] = I;
    return TS_OK;
}

/* Install the current block: a block with many passes goes on both planes, which take every other
 * pass; else the blocks alternate between the planes, one installing while the other streams. Under
 * LEAN every block goes on one plane, the planes in turn: an install is 320 MEM reads and 20 iw, and
 * BERT-base's blocks of 128 passes each installed twice were 536 k of its 7.02 M entries (the
 * schedule 477,421 -> 523,877 cycles; docs/lowering-tsp.md, *LEAN*). A
 * block of weights installs through the plane's weight buffer (install_buffered) where the plane
 * still streams after the buffer's last copy (buf_free < plane_busy), so the lw overlap its passes;
 * on a plane with nothing to overlap (its first block) the 20 lw and the copy would take a cycle
 * more than the 20 iw. A block whose rows are an activation's vectors (kind 5, Q Kᵀ) is read by iw
 * as its rows become ready, a few rows a cycle where they share a slice (rows_plan). */
static ts_status install_block(lt *L, psched *s)
{
    const prod *p = s->p;
    bool east = s->m.east;
    /* a Conv of one reduction block and several output tiles on the west planes alone (ResNet-50's
     * 256 -> 1024 1 x 1 convs of 196 pixels), or of as many tiles as planes or more on all four
     * (the 1 x 1 convs written in 5 slots for stage 1's packed 3 x 3 convs): its blocks go to the
     * planes in turn, one plane installing the next tile while the others stream, rather than each
     * block on every plane; a packed Conv with several bases: the planes take the blocks in turn
     * (sched_blocks) */
    bool turns = !L->mode && p->kind == 2 && p->KT == 1 && p->NT >= (east ? 4u : 2u);
    bool many = p->M >= DUAL_PASSES && (p->kind != 6 || p->pl.nb < 2) && !turns && !L->lean;
    int npl = east ? 4 : 2;
    /* the last of 4 k + 1 tiles in turn on all four planes (stage 1's 1 x 1 convs written in 5 slots)
     * goes on two, the planes of the first two tiles, which take every other pass, rather than on
     * the first tile's plane alone after that tile's passes; the next lone block on the plane of
     * the fourth (tile 3's: it streamed one tile where the first two planes streamed one and a half) */
    bool split = turns && east && p->NT % 4u == 1 && s->nt + 1 == p->NT;
    s->np = many ? npl : split ? 2 : 1;
    for (int j = 0; j < s->np; j++)
        s->planes[j] = many ? j : (L->next_plane % npl + j) % npl;
    if (!many)
        L->next_plane = (L->next_plane % npl + (split ? 3 : 1)) % npl;
    s->lbs[0] = s->lbs[1] = s->last_abcs[0] = s->last_abcs[1] = 0;
    for (int j = 0; j < s->np; j++) {
        ts_status rc = install_on(L, s, j);
        if (rc != TS_OK)
            return rc;
    }
    return TS_OK;
}

typedef struct pass {
    int pl;
    uint32_t kt;             /* its block */
    int64_t xv;              /* activation vector, -1 zeros */
    bool first, final;
    uint32_t pmem[4], pword[4]; /* partial sums: slices, words read (not first) */
    uint32_t wmem[4], wword[4]; /* slices, words the new partial sums go to (not final) */
    uint64_t pready;
    uint32_t bword, sword;   /* bias (first) and scale (final) words, in every E slice */
    uint32_t omem, oword;    /* final: output vector */
    uint64_t lb;             /* earliest abc */
} pass;

/* Cycles the int8 value of a final pass may wait in its latch for the operand of a fused Add. */
#define ADD_WAIT 4

/* The end of a final pass with an Add fused (p->res): the scaled f32 value v2 to int8 (rounded and
 * saturated as always), plus the other operand's vector read from the west MEM (`adds`, saturating:
 * the Add of two int8 tensors), Relu where the Add has a lone one after it, written to the output
 * vector; *wdone the write's cycle. The operand arrives when the int8 value is ready, or up to
 * ADD_WAIT cycles later, the value held in its latch. */
static bool requant_add(lt *L, const prod *p, const pass *ps, val *v2, uint32_t tag, uint64_t *wdone)
{
    const ts_tsp_regs *R = &L->tg->reg;
    val v3, x, r;
    int so;
    if (!lt_vop(L, LT_CVT, R->i8, R->f32, v2->t, v2, NULL, -1, 0, tag, &v3, NULL))
        return false;
    /* the output's vector index, the operand's too (one shape, no slots) */
    uint64_t i = (uint64_t)(ps->oword - p->y->base) * L->nW + ps->omem - p->y->off;
    uint32_t mem, word;
    lt_slot(L, p->res, i, &mem, &word);
    for (uint32_t d = 0; d <= ADD_WAIT; d++) {
        size_t mark = L->nu, pm = L->npd;
        val a = v3;
        if (lt_hold(L, &a, v3.t + d) && lt_vin_w(L, mem, word, v3.t + d, tag, p->res->ready[i], &x)) {
            bool ok;
            if (p->relu) {
                val s;
                ok = lt_vop(L, LT_ADDS, R->i8, 0, v3.t + d, &a, &x, -1, 0, tag, &s, NULL) &&
                     lt_vop(L, LT_RELU, R->i8, 0, s.t, &s, NULL, P_FROMV_W, 1, tag, &r, &so);
            } else {
                ok = lt_vop(L, LT_ADDS, R->i8, 0, v3.t + d, &a, &x, P_FROMV_W, 1, tag, &r, &so);
            }
            if (ok && lt_wr(L, ps->omem, ps->oword, r.t, L->tg->pos_vxm, WEST, so, tag, p->y->avail, wdone))
                return true;
        }
        lt_undo_to(L, mark, pm);
    }
    return false;
}

/* The VXM half of a final pass: sum (int32, in a latch) to f32, times the scale, to int8 (and
 * Relu, or a fused Add: requant_add), written to the output vector; *wdone the write's cycle. */
static bool requant(lt *L, const prod *p, const pass *ps, val *sum, uint32_t tag, bool kept, uint64_t *wdone)
{
    const ts_tsp_regs *R = &L->tg->reg;
    val v1, v2, v3, v4, scl;
    uint32_t stag = tag; /* the scale's tag, which the f32 sum takes on to meet it */
    kept = kept && lt_kept_in(L, &L->ks, ps->sword, R->f32, sum->t + lt_vop_lat(L, LT_CVT), tag, &scl, &stag);
    if (!lt_vop_tags(L, LT_CVT, R->f32, R->i32, sum->t, sum, NULL, -1, 0, tag, stag, &v1, NULL))
        return false;
    if (!kept && !lt_scale_in(L, ps->sword, v1.t, tag, &scl))
        return false;
    if (!lt_vop_tags(L, LT_MUL, R->f32, 0, v1.t, &v1, &scl, -1, 0, stag, tag, &v2, NULL))
        return false;
    int so;
    uint64_t tb;
    if (p->res)
        return requant_add(L, p, ps, &v2, tag, wdone);
    if (p->relu) {
        if (!lt_vop(L, LT_CVT, R->i8, R->f32, v2.t, &v2, NULL, -1, 0, tag, &v3, NULL) ||
            !lt_vop(L, LT_RELU, R->i8, 0, v3.t, &v3, NULL, P_FROMV_W, 1, tag, &v4, &so))
            return false;
        tb = v4.t;
    } else {
        if (!lt_vop(L, LT_CVT, R->i8, R->f32, v2.t, &v2, NULL, P_FROMV_W, 1, tag, &v3, &so))
            return false;
        tb = v3.t;
    }
    return lt_wr(L, ps->omem, ps->oword, tb, L->tg->pos_vxm, WEST, so, tag, p->y->avail, wdone);
}

/* A first pass's bias at the VXM at cycle t from a latch where the product keeps it (lt_kept_in):
 * *btag its tag, which the value it is added to takes on. False (nothing taken, *btag as it was)
 * where the pass reads it from the east MEM. */
static bool kept_bias(lt *L, uint32_t bword, uint64_t t, uint32_t tag, val *v, uint32_t *btag)
{
    return L->keep_bias && lt_kept_in(L, &L->kb, bword, L->tg->reg.i32, t, tag, v, btag);
}

/* One pass with its abc at T: the activation westward to the plane, the products eastward to the
 * VXM, the bias or partial sums westward from the east MEM, their sum to the east MEM (or, on the
 * last block, requantised to the output); *wdone the cycle of its last write. */
typedef struct pass_arg { const prod *p; const pass *ps; } pass_arg;

/* The plane half of a pass with its abc at T: the activation to the plane, the abc, the acc; *acc
 * the products as they reach the VXM, tagged atag (a kept bias's tag where they meet it). */
static bool pass_plane(lt *L, const prod *p, const pass *ps, uint64_t T, uint32_t tag, uint32_t atag, val *acc)
{
    const ts_tsp_target *P = L->tg;
    uint32_t pp = plane_pos(L, ps->pl), q = plane_q(L, ps->pl), pv = P->pos_vxm;
    int s, in = plane_dir(ps->pl), out = in == WEST ? EAST : WEST; /* to the plane, from it to the VXM */
    if (!lt_take(L, &L->q[q + 1].issue, T) || !lt_take(L, &L->q[q + 2].issue, T + P->d_func.abc))
        return false;
    /* the activation from the west MEM to the plane: westward, or eastward past the VXM and the east MEM */
    if (!lt_take_group(L, in == WEST ? P_ACT : P_EACT, 1, T, pp, &s))
        return false;
    if (ps->xv >= 0) {
        uint32_t mem, word;
        tens *x = blk_x(p, ps->kt);
        lt_slot(L, x, (uint64_t)ps->xv, &mem, &word);
        if (!lt_rd(L, mem, word, T, pp, in, s, tag, x->ready[ps->xv]))
            return false;
    } else if (!lt_rd_any(L, 0, 0, T, pp, in, s, tag)) {
        return false;
    }
    E1(L, q + 1, T, LT_ABC, P->reg.i8, lt_sreg(L, in, s), 0, (int32_t)tag, (int32_t)tag);
    /* the products to the VXM: eastward from a west plane, westward (as the east MEM's values) from an east one */
    uint64_t ta = T + P->d_func.abc + P->d_func.acc, A = ta + (out == EAST ? pv - pp : pp - pv);
    int sa;
    if (!lt_take_group(L, out == EAST ? P_W2V_E : P_E2V_W, 4, ta, pp, &sa))
        return false;
    E1(L, q + 2, T + P->d_func.abc, LT_ACC, lt_sreg(L, out, sa), (int32_t)tag, (int32_t)atag);
    *acc = (val){.alu = -1, .dir = out, .s = sa, .t = A};
    return true;
}

static bool try_pass(lt *L, const void *arg, uint64_t T, uint64_t *wdone)
{
    const prod *p = ((const pass_arg *)arg)->p;
    const pass *ps = ((const pass_arg *)arg)->ps;
    const ts_tsp_target *P = L->tg;
    uint32_t pv = P->pos_vxm;
    uint32_t tag = L->ptag ? L->ptag : L->tag % 65535 + 1, btag = tag, pp = plane_pos(L, ps->pl);
    val acc, part, sum;
    bool blk = ps->first && ps->final && p->blanes; /* the bias comes through the block (bias_lanes) */
    bool kept = ps->first && !blk &&
                kept_bias(L, ps->bword, T + P->d_func.abc + P->d_func.acc + (pp > pv ? pp - pv : pv - pp), tag, &part,
                          &btag);
    if (!pass_plane(L, p, ps, T, tag, btag, &acc))
        return false;
    uint64_t A = acc.t;
    if (blk) {
        if (!requant(L, p, ps, &acc, tag, L->keep_scale, wdone))
            return false;
        L->tag = L->ptag ? L->tag : tag;
        return true;
    }
    if (!kept) { /* bias or partial sums, westward from the east MEM */
        int sb;
        if (!lt_take_group(L, P_E2V_W, 4, A, pv, &sb))
            return false;
        for (int b = 0; b < 4; b++) {
            if (ps->first ? !lt_rd_any(L, 1, ps->bword + (uint32_t)b, A, pv, WEST, sb + b, tag)
                          : !lt_rd(L, ps->pmem[b], ps->pword[b], A, pv, WEST, sb + b, tag, ps->pready))
                return false;
        }
        part = (val){.alu = -1, .dir = WEST, .s = sb, .t = A};
    }
    if (ps->final) {
        if (!lt_vop_tags(L, LT_ADD, P->reg.i32, 0, A, &acc, &part, -1, 0, btag, tag, &sum, NULL) ||
            !requant(L, p, ps, &sum, tag, L->keep_scale, wdone))
            return false;
        L->tag = L->ptag ? L->tag : tag;
        return true;
    }
    int sd;
    if (!lt_vop_tags(L, LT_ADD, P->reg.i32, 0, A, &acc, &part, P_FROMV_E, 4, btag, tag, &sum, &sd))
        return false;
    uint64_t last = 0;
    for (int b = 0; b < 4; b++) {
        uint64_t w;
        if (!lt_wr(L, ps->wmem[b], ps->wword[b], A + P->d_func.add, pv, EAST, sd + b, tag, 0, &w))
            return false;
        if (w > last)
            last = w;
    }
    *wdone = last;
    L->tag = L->ptag ? L->tag : tag;
    return true;
}

/* Pass m of the current block on plane pl: its addresses and its earliest abc. */
static uint64_t plan_pass(lt *L, const psched *s, uint32_t m, int64_t xv, int j, pass *ps)
{
    const prod *p = s->p;
    const pmem *pm = &s->m;
    uint32_t kt = s->kt, nt = s->nt;
    int pl = s->planes[j];
    *ps = (pass){.pl = pl, .kt = kt, .xv = xv, .first = kt == s->firstk[(uint64_t)m * p->NT + nt],
              .final = kt == s->lastk[(uint64_t)m * p->NT + nt]};
    uint64_t pi = (uint64_t)m * p->NT + nt, pc = (uint64_t)(m - s->m0) * p->NT + nt;
    for (uint32_t b = 0; b < 4; b++)
        if (pm->nparts) {
            uint32_t rb = s->pbuf[pi], wb = wbuf(p, kt);
            psum_word(L, pm, pc, p->NT, rb, b, &ps->pmem[b], &ps->pword[b]);
            psum_word(L, pm, pc, p->NT, wb, b, &ps->wmem[b], &ps->wword[b]);
        }
    ps->pready = pm->nparts ? s->pready[pi] : 0;
    ps->bword = pm->cbase + 4 * (pm->ct > 1 ? nt : 0);
    ps->sword = pm->cbase + 4 * pm->ct;
    if (ps->final)
        lt_slot(L, p->y, (uint64_t)m * p->y->T + (p->rep ? 0 : nt), &ps->omem, &ps->oword);
    uint64_t T = s->lbs[j] > s->last_abcs[j] ? s->lbs[j] : s->last_abcs[j];
    if (!ps->first && ps->pready > T)
        T = ps->pready;
    if (!ps->final && pm->pav > T)
        T = pm->pav;
    if (xv >= 0) {
        uint32_t xm, xw;
        tens *x = blk_x(p, kt);
        lt_slot(L, x, (uint64_t)xv, &xm, &xw);
        uint32_t xp = lt_mem_pos(L, xm), pp = plane_pos(L, pl);
        uint64_t e = x->ready[xv] + L->tg->d_func.read + (xp > pp ? xp - pp : pp - xp);
        if (e > T)
            T = e;
    }
    return T;
}

/* Stream every output vector with an input in the current block through it, the planes taking
 * turns. */
static ts_status stream_block(lt *L, psched *s)
{
    const prod *p = s->p;
    uint32_t turn = 0;
    for (uint32_t m = s->m0; m < s->m1; m++) {
        int64_t xv = pix_in(p, m, s->nt) ? act_vec(p, m, s->kt) : -1;
        if (xv < 0)
            continue;
        int j = (int)(turn++ % (uint32_t)s->np);
        pass ps;
        uint64_t T = plan_pass(L, s, m, xv, j, &ps), w;
        pass_arg a = {p, &ps};
        ts_status rc = lt_search(L, try_pass, &a, NULL, &T, &w, p->nd, true);
        if (rc != TS_OK)
            return rc;
        if (ps.xv >= 0 && L->rdmax > s->rd_last)
            s->rd_last = L->rdmax;
        uint64_t pi = (uint64_t)m * p->NT + s->nt;
        if (ps.final) {
            p->y->ready[(uint64_t)m * p->y->T + (p->rep ? 0 : s->nt)] = w + L->tg->d_func.write + 1;
        } else {
            s->pready[pi] = w + L->tg->d_func.write + 1;
            s->pbuf[pi] = (uint8_t)wbuf(p, s->kt);
        }
        lt_span(s->ly, T, w);
        s->last_abcs[j] = T;
        s->ly->passes++;
    }
    for (int j = 0; j < s->np; j++)
        L->plane_busy[s->planes[j]] = s->last_abcs[j];
    return TS_OK;
}

/* Kind 6: the b-th block, by anti-diagonals of (group, base): block (g, v) beside (g + 1, v - 1),
 * which reads the partial sums (g, v - 1) wrote, in the other buffer than (g, v) writes (wbuf). */
static uint32_t pack_order(const prod *p, uint32_t b)
{
    uint32_t G = p->pl.G, R = p->pl.R;
    for (uint32_t d = 0, i = 0; d + 1 < G + R; d++)
        for (uint32_t g = 0; g < G; g++)
            if (d >= g && d - g < R && i++ == b)
                return g * R + (d - g);
    return b;
}

/* The current block's laid-out rows (block row g on): their slices and words, west and east. */
static void blk_rows(lt *L, psched *s, uint64_t g)
{
    const prod *p = s->p;
    /* a split in place: its group's rows first (install_on puts them at their row, zeros elsewhere) */
    uint32_t nr = p->kind == 4 && p->cat.inplace ? (uint32_t)p->cat.Cout : s->nv;
    for (uint32_t r = 0; r < nr; r++) {
        uint64_t e = s->m.ewoff + g + r;
        if (s->m.wsplit && g + r >= s->m.wsplit) { /* split_rows: the east part */
            uint64_t k2 = s->m.w2off + g + r - s->m.wsplit;
            s->rmem[r] = L->nW + (uint32_t)(k2 % L->nE);
            s->rword[r] = east_word(&s->m, k2 / L->nE);
        } else
            wrow_at(L, &s->m, g + r, &s->rmem[r], &s->rword[r]);
        s->ermem[r] = L->nW + (uint32_t)(e % L->nE);
        s->erword[r] = s->m.ewbase + (uint32_t)(e / L->nE);
        if (s->m.wfirst == L->nW && !s->m.wsplit) { /* the rows lie in the east: their own place */
            s->ermem[r] = s->rmem[r];
            s->erword[r] = s->rword[r];
        }
    }
}

/* The rows of output vectors whose partial sums are kept at once: all of them, unless their
 * buffer would take more than 3/4 of a bank half of the east slices (ResNet-50's 3 x 3 convs at
 * batch 8), then chunks that fit, each streaming every block again. */
static uint32_t chunk_rows(const lt *L, const prod *p)
{
    uint64_t hE = L->nE / 2, limit = (uint64_t)L->half * 3 / 4, per = (uint64_t)p->NT * 4;
    if (p->KT <= 1 || ts_geom_cdiv((uint64_t)p->M * per, hE) <= limit)
        return p->M;
    uint64_t rows = limit * hE / per;
    return rows ? (uint32_t)rows : 1;
}

/* A packed Conv of two groups on four planes (pair_mode): its two blocks of a base on a pair of
 * planes at once (W0 and W1, or E0 and E1), a pixel's two abc timed so that both products reach the
 * VXM in one cycle, where they are added, with the bias, to be requantised: no partial sums in the
 * east MEM. A 1 x 1 Conv of two reduction blocks with the east copy goes the same way; of several
 * output tiles not in slots, a tile on each pair in turn. */
static bool pair_mode(const lt *L, const psched *s)
{
    const prod *p = s->p;
    if (p->kind == 2) /* a 1 x 1 Conv of two blocks, written in slots or not */
        return p->KT == 2 && p->w.kh * p->w.kw == 1 && p->G == 1 && s->m.east && L->tg->mxm_east >= 2;
    return p->kind == 6 && p->pl.G == 2 && p->NT == 1 && !p->rep && s->m.east && L->tg->mxm_east >= 2;
}

typedef struct pair_arg { const prod *p; const pass *ps[2]; } pair_arg;

/* The pair's abc: the second plane's (the farther from the VXM) earlier by the difference. */
static uint64_t pair_lag(const lt *L, const pass *a, const pass *b)
{
    uint32_t pv = L->tg->pos_vxm, pa = plane_pos(L, a->pl), pb = plane_pos(L, b->pl);
    uint32_t da = pa > pv ? pa - pv : pv - pa, db = pb > pv ? pb - pv : pv - pb;
    return db - da; /* db >= da: the pair's planes are given nearer first */
}

static bool try_pair(lt *L, const void *arg, uint64_t T, uint64_t *wdone)
{
    const pair_arg *a = arg;
    const ts_tsp_target *P = L->tg;
    uint32_t tag = L->tag % 65535 + 1;
    uint64_t lag = pair_lag(L, a->ps[0], a->ps[1]);
    val x0, x1, s1, bias, s2;
    uint32_t btag = tag;
    if (T < lag || !pass_plane(L, a->p, a->ps[0], T, tag, tag, &x0) ||
        !pass_plane(L, a->p, a->ps[1], T - lag, tag, tag, &x1))
        return false;
    bool kept = kept_bias(L, a->ps[0]->bword, x0.t + lt_vop_lat(L, LT_ADD), tag, &bias, &btag);
    if (!lt_vop_tags(L, LT_ADD, P->reg.i32, 0, x0.t, &x0, &x1, -1, 0, tag, btag, &s1, NULL) ||
        (!kept && !lt_bias_in(L, a->ps[0]->bword, s1.t, tag, &bias)) ||
        !lt_vop_tags(L, LT_ADD, P->reg.i32, 0, s1.t, &s1, &bias, -1, 0, btag, tag, &s2, NULL) ||
        !requant(L, a->p, a->ps[0], &s2, tag, L->keep_scale, wdone))
        return false;
    L->tag = tag;
    return true;
}

/* The earliest abc of plane j's pass of activation vector xv (-1: zeros). */
static uint64_t pass_lb(lt *L, const psched *s, int j, int64_t xv)
{
    uint64_t T = s->lbs[j] > s->last_abcs[j] ? s->lbs[j] : s->last_abcs[j];
    if (xv >= 0) {
        uint32_t xm, xw;
        lt_slot(L, s->p->x, (uint64_t)xv, &xm, &xw);
        uint32_t xp = lt_mem_pos(L, xm), pp = plane_pos(L, s->planes[j]);
        uint64_t e = s->p->x->ready[xv] + L->tg->d_func.read + (xp > pp ? xp - pp : pp - xp);
        if (e > T)
            T = e;
    }
    return T;
}

static ts_status pack_pixel(lt *L, const prod *p, tens *pk, ts_lower_tsp_layer *ly, uint32_t m, uint32_t g0, uint32_t g1, lt_need *need);
static ts_status pack_block(lt *L, prod *p, tens *pk, ts_lower_tsp_layer *ly);

/* Base by base: its group-0 block on W0 and E0, its group-1 block on W1 and E1, the pixels of the
 * base alternating between the west and the east pair. A 1 x 1 Conv of two reduction blocks (ResNet's
 * 512-channel ones of 784 pixels) goes the same way, its blocks for groups, the slots of its output
 * for bases (one base if it writes no slots): no partial sums. */
static ts_status sched_pairs(lt *L, psched *s)
{
    prod *p = s->p;
    uint32_t R = p->kind == 6 ? p->pl.R : p->NT; /* a 1 x 1 Conv of two blocks: a base per slot */
    s->np = 4;
    for (int j = 0; j < 4; j++)
        s->planes[j] = j;
    s->nt = 0;
    s->nv = tile_rows(p, 0, L->VL);
    for (uint32_t b = 0; b < R; b++) {
        bool any = false;
        for (uint32_t m = 0; m < p->M && !any; m++)
            any = p->kind == 6 ? pbase(p, m) == b : pix_in(p, m, b);
        if (!any)
            continue;
        if (p->kind != 6) { /* slot b's tile: its weight rows at row offset b C (install_on) */
            s->nt = b;
            s->nv = tile_rows(p, b, L->VL);
        }
        /* a 1 x 1 Conv of several output tiles, not in slots: tile b on one pair, the pairs in turn */
        bool tiles = p->kind == 2 && !p->rep && p->NT > 1;
        for (int j = 0; j < 4; j++) { /* W0, W1, E0, E1: groups (blocks) 0, 1, 0, 1 */
            if (tiles && j / 2 != (int)(b % 2))
                continue;
            s->kt = p->kind == 6 ? (uint32_t)(j & 1) * R + b : (uint32_t)(j & 1);
            blk_rows(L, s, blk_row0(p, s->nt, s->kt, L->VL));
            ts_status rc = install_on(L, s, j);
            if (rc != TS_OK)
                return rc;
        }
        uint32_t turn = 0;
        for (uint32_t m = 0; m < p->M; m++) {
            if (p->kind == 6 ? pbase(p, m) != b : !pix_in(p, m, b))
                continue;
            int j0 = tiles ? (int)(b % 2) * 2 : (int)(turn++ % 2) * 2; /* the pair's nearer plane: W0 or E0 */
            /* a packed Conv's packed vectors just before its passes, so that the VXM takes both in turn */
            if (p->kind == 6 && !p->packed) {
                ts_status rc = pack_pixel(L, p, p->x, s->ly, m, 0, 2, s->need);
                if (rc != TS_OK)
                    return rc;
            }
            pass ps[2];
            for (int g = 0; g < 2; g++) {
                uint32_t kt = p->kind == 6 ? (uint32_t)g * R + b : (uint32_t)g;
                ps[g] = (pass){.pl = s->planes[j0 + g], .kt = kt, .xv = act_vec(p, m, kt), .first = true, .final = true,
                               .bword = s->m.cbase + 4 * (s->m.ct > 1 ? s->nt : 0), .sword = s->m.cbase + 4 * s->m.ct};
            }
            uint64_t yi = (uint64_t)m * p->y->T + (p->kind == 6 || p->rep ? 0 : s->nt); /* its tile's vector */
            lt_slot(L, p->y, yi, &ps[0].omem, &ps[0].oword);
            pair_arg a = {p, {&ps[0], &ps[1]}};
            uint64_t lag = pair_lag(L, &ps[0], &ps[1]), T = pass_lb(L, s, j0, ps[0].xv), w;
            uint64_t T1 = pass_lb(L, s, j0 + 1, ps[1].xv);
            if (T1 + lag > T)
                T = T1 + lag;
            ts_status rc = lt_search(L, try_pair, &a, NULL, &T, &w, p->nd, true);
            if (rc != TS_OK)
                return rc;
            if (L->rdmax > s->rd_last)
                s->rd_last = L->rdmax;
            p->y->ready[yi] = w + L->tg->d_func.write + 1;
            lt_span(s->ly, T - lag, w);
            s->last_abcs[j0] = T;
            s->last_abcs[j0 + 1] = T - lag;
            s->ly->passes += 2;
        }
        for (int j = 0; j < 4; j++)
            if (!tiles || j / 2 == (int)(b % 2)) /* the other pair's planes were not this tile's */
                L->plane_busy[j] = s->last_abcs[j];
    }
    return TS_OK;
}

/* A packed Conv of five groups on four planes (quad_mode; ResNet's 128-channel 3 x 3 convs, 2 slots):
 * per base, group 4's block on the four planes first, whose passes (the planes in turn) add the bias
 * and write their partial sums, then groups 0 to 3 on W0, W1, E0, E1 at once: a pixel's four abc
 * timed so that the products reach the VXM in one cycle, added two and two, then together, then to
 * the partial sum, and requantised. One partial sum a pixel, not four. */
static bool quad_mode(const lt *L, const psched *s)
{
    const prod *p = s->p;
    return p->kind == 6 && p->pl.G == 5 && p->NT == 1 && !p->rep && s->m.east && L->tg->mxm_east >= 2 &&
           chunk_rows(L, p) == p->M;
}

typedef struct quad_arg { const prod *p; const pass *ps[4]; bool bias; /* the bias, not a partial sum */ } quad_arg;

/* A plane's distance from the VXM. */
static uint32_t plane_dist(const lt *L, int pl)
{
    uint32_t pv = L->tg->pos_vxm, pp = plane_pos(L, pl);
    return pp > pv ? pp - pv : pv - pp;
}

static bool try_quad(lt *L, const void *arg, uint64_t T, uint64_t *wdone)
{
    const quad_arg *a = arg;
    const pass *ps = a->ps[0];
    const ts_tsp_target *P = L->tg;
    uint32_t tag = L->tag % 65535 + 1, pv = P->pos_vxm, d0 = plane_dist(L, ps->pl);
    val x[4], s01, s23, sum, part, fin;
    for (int i = 0; i < 4; i++) { /* a farther plane's abc earlier, so every product arrives with W0's */
        uint64_t lag = plane_dist(L, a->ps[i]->pl) - d0;
        if (T < lag || !pass_plane(L, a->p, a->ps[i], T - lag, tag, tag, &x[i]))
            return false;
    }
    int sb;
    uint32_t btag = tag;
    bool kept = a->bias && kept_bias(L, ps->bword, x[0].t + 2 * lt_vop_lat(L, LT_ADD), tag, &part, &btag);
    if (!lt_vop(L, LT_ADD, P->reg.i32, 0, x[0].t, &x[0], &x[1], -1, 0, tag, &s01, NULL) ||
        !lt_vop(L, LT_ADD, P->reg.i32, 0, x[2].t, &x[2], &x[3], -1, 0, tag, &s23, NULL) ||
        !lt_vop_tags(L, LT_ADD, P->reg.i32, 0, s01.t, &s01, &s23, -1, 0, tag, btag, &sum, NULL))
        return false;
    if (a->bias) {
        if (!kept && !lt_bias_in(L, ps->bword, sum.t, tag, &part))
            return false;
    } else {
        if (!lt_take_group(L, P_E2V_W, 4, sum.t, pv, &sb))
            return false;
        for (int b = 0; b < 4; b++)
            if (!lt_rd(L, ps->pmem[b], ps->pword[b], sum.t, pv, WEST, sb + b, tag, ps->pready))
                return false;
        part = (val){.alu = -1, .dir = WEST, .s = sb, .t = sum.t};
    }
    if (!lt_vop_tags(L, LT_ADD, P->reg.i32, 0, sum.t, &sum, &part, -1, 0, btag, tag, &fin, NULL) ||
        !requant(L, a->p, ps, &fin, tag, L->keep_scale, wdone))
        return false;
    L->tag = tag;
    return true;
}

/* Blocks k .. k + n - 1 of output tile s->nt installed on planes 0 .. n - 1, block k + j on plane j. */
static ts_status install_blocks(lt *L, psched *s, uint32_t k, int n)
{
    s->np = n;
    for (int j = 0; j < n; j++) {
        s->planes[j] = j;
        s->kt = k + (uint32_t)j;
        blk_rows(L, s, blk_row0(s->p, s->nt, s->kt, L->VL));
        ts_status rc = install_on(L, s, j);
        if (rc != TS_OK)
            return rc;
    }
    return TS_OK;
}

/* The partial-sum words of slot q in buffer buf: an output pixel m's slot is m - s->m0, or
 * (m - s->m0) * NT + nt where the tiles of a product share the buffer. */
static void psum_at(const lt *L, const psched *s, uint64_t q, uint32_t buf, uint32_t *mem, uint32_t *word)
{
    for (uint32_t b = 0; b < 4; b++)
        psum_word(L, &s->m, q, s->p->NT, buf, b, &mem[b], &word[b]);
}

/* Group g's block of base b on plane j. */
static ts_status install_group(lt *L, psched *s, uint32_t g, uint32_t b, int j)
{
    s->kt = g * s->p->pl.R + b;
    blk_rows(L, s, blk_row0(s->p, 0, s->kt, L->VL));
    return install_on(L, s, j);
}

/* Base b's group-4 passes, the four planes in turn: bias added, partial sums written to buffer b & 1. */
static ts_status quad_lead(lt *L, psched *s, uint32_t b)
{
    prod *p = s->p;
    uint32_t turn = 0, buf = b & 1, kt = 4 * p->pl.R + b;
    for (uint32_t m = 0; m < p->M; m++) {
        if (pbase(p, m) != b)
            continue;
        int j = (int)(turn++ % 4);
        if (!p->packed) { /* its group-4 packed vector just before this pass (as in sched_pairs) */
            ts_status rc = pack_pixel(L, p, p->x, s->ly, m, 4, 5, s->need);
            if (rc != TS_OK)
                return rc;
        }
        pass ps = {.pl = s->planes[j], .kt = kt, .xv = act_vec(p, m, kt), .first = true, .bword = s->m.cbase};
        psum_at(L, s, m - s->m0, buf, ps.wmem, ps.wword);
        uint64_t T = pass_lb(L, s, j, ps.xv), w;
        if (s->m.pav > T)
            T = s->m.pav;
        pass_arg a = {p, &ps};
        ts_status rc = lt_search(L, try_pass, &a, NULL, &T, &w, p->nd, true);
        if (rc != TS_OK)
            return rc;
        if (L->rdmax > s->rd_last)
            s->rd_last = L->rdmax;
        s->pready[m] = w + L->tg->d_func.write + 1;
        s->pbuf[m] = (uint8_t)buf;
        lt_span(s->ly, T, w);
        s->last_abcs[j] = T;
        s->ly->passes++;
    }
    for (int j = 0; j < 4; j++)
        L->plane_busy[j] = s->last_abcs[j];
    return TS_OK;
}

/* After a quad's search (its lead pass at T, the output written at w): the reads' last cycle,
 * output slot yi of the product ready after the write, each plane's last abc (the lead plane's
 * distance d0) and the layer's span and passes. */
static void quad_done(lt *L, psched *s, uint64_t yi, uint64_t T, uint64_t w, uint32_t d0)
{
    if (L->rdmax > s->rd_last)
        s->rd_last = L->rdmax;
    s->p->y->ready[yi] = w + L->tg->d_func.write + 1;
    for (int g = 0; g < 4; g++) {
        uint64_t tg = T - (plane_dist(L, s->planes[g]) - d0);
        s->last_abcs[g] = tg;
        lt_span(s->ly, tg, w);
    }
    s->ly->passes += 4;
}

/* Base b's pixels through groups 0 to 3 on the four planes at once. */
static ts_status quad_main(lt *L, psched *s, uint32_t b)
{
    prod *p = s->p;
    for (uint32_t m = 0; m < p->M; m++) {
        if (pbase(p, m) != b)
            continue;
        if (!p->packed) { /* its packed vectors of groups 0 to 3 just before these passes */
            ts_status rc = pack_pixel(L, p, p->x, s->ly, m, 0, 4, s->need);
            if (rc != TS_OK)
                return rc;
        }
        pass ps[4];
        uint64_t T = 0, w;
        uint32_t d0 = plane_dist(L, s->planes[0]);
        for (int g = 0; g < 4; g++) {
            uint32_t kt = (uint32_t)g * p->pl.R + b;
            ps[g] = (pass){.pl = s->planes[g], .kt = kt, .xv = act_vec(p, m, kt), .final = true};
            uint64_t t = pass_lb(L, s, g, ps[g].xv) + plane_dist(L, s->planes[g]) - d0;
            T = t > T ? t : T;
        }
        psum_at(L, s, m - s->m0, s->pbuf[m], ps[0].pmem, ps[0].pword);
        ps[0].pready = s->pready[m];
        ps[0].sword = s->m.cbase + 4 * s->m.ct;
        lt_slot(L, p->y, (uint64_t)m * p->y->T, &ps[0].omem, &ps[0].oword);
        quad_arg a = {p, {&ps[0], &ps[1], &ps[2], &ps[3]}, false};
        ts_status rc = lt_search(L, try_quad, &a, NULL, &T, &w, p->nd, true);
        if (rc != TS_OK)
            return rc;
        quad_done(L, s, (uint64_t)m * p->y->T, T, w, d0);
    }
    for (int j = 0; j < 4; j++)
        L->plane_busy[j] = s->last_abcs[j];
    return TS_OK;
}

static ts_status sched_quads(lt *L, psched *s)
{
    prod *p = s->p;
    s->np = 4;
    for (int j = 0; j < 4; j++)
        s->planes[j] = j;
    s->nt = 0;
    s->nv = tile_rows(p, 0, L->VL);
    for (uint32_t b = 0; b < p->pl.R; b++) {
        bool any = false;
        for (uint32_t m = 0; m < p->M && !any; m++)
            any = pbase(p, m) == b;
        ts_status rc = TS_OK;
        for (int j = 0; j < 4 && any && rc == TS_OK; j++)
            rc = install_group(L, s, 4, b, j);
        if (any && rc == TS_OK)
            rc = quad_lead(L, s, b);
        for (int j = 0; j < 4 && any && rc == TS_OK; j++)
            rc = install_group(L, s, (uint32_t)j, b, j);
        if (any && rc == TS_OK)
            rc = quad_main(L, s, b);
        if (rc != TS_OK)
            return rc;
    }
    return TS_OK;
}

/* A 1 x 1 Conv of four reduction blocks with the east copy (q1_mode; ResNet-50's layer3.1-3.5.conv1,
 * 1,024 -> 256 channels, and layer4.0.conv1, 1,024 -> 512, 196 pixels), tile after tile: block j on
 * plane j (W0, W1, E0, E1), a
 * pixel's four abc timed so that the products reach the VXM in one cycle, added two and two, then
 * together, then to the bias, and requantised (try_quad): no partial sums. */
static bool q1_mode(const lt *L, const psched *s)
{
    const prod *p = s->p;
    return p->kind == 2 && p->KT == 4 && p->w.kh * p->w.kw == 1 && p->G == 1 && !p->rep &&
           s->m.east && L->tg->mxm_east >= 2 && s->m0 == 0 && s->m1 == p->M;
}

static ts_status sched_q1(lt *L, psched *s)
{
    prod *p = s->p;
    for (s->nt = 0; s->nt < p->NT; s->nt++) {
        uint32_t nt = s->nt;
        s->nv = tile_rows(p, nt, L->VL);
        ts_status rc = install_blocks(L, s, 0, 4);
        if (rc != TS_OK)
            return rc;
        uint32_t d0 = plane_dist(L, s->planes[0]);
        for (uint32_t m = 0; m < p->M; m++) {
            pass ps[4];
            uint64_t T = 0, w;
            for (int g = 0; g < 4; g++) {
                ps[g] = (pass){.pl = s->planes[g], .kt = (uint32_t)g, .xv = act_vec(p, m, (uint32_t)g), .first = true,
                               .final = true};
                uint64_t t = pass_lb(L, s, g, ps[g].xv) + plane_dist(L, s->planes[g]) - d0;
                T = t > T ? t : T;
            }
            ps[0].bword = s->m.cbase + 4 * (s->m.ct > 1 ? nt : 0);
            ps[0].sword = s->m.cbase + 4 * s->m.ct;
            lt_slot(L, p->y, (uint64_t)m * p->y->T + nt, &ps[0].omem, &ps[0].oword);
            quad_arg a = {p, {&ps[0], &ps[1], &ps[2], &ps[3]}, true};
            rc = lt_search(L, try_quad, &a, NULL, &T, &w, p->nd, true);
            if (rc != TS_OK)
                return rc;
            quad_done(L, s, (uint64_t)m * p->y->T + nt, T, w, d0);
        }
        for (int j = 0; j < 4; j++)
            L->plane_busy[j] = s->last_abcs[j];
    }
    return TS_OK;
}

/* Block (s->kt, s->nt): its rows, its install, its passes; nothing where no pixel has an input. */
static ts_status sched_one(lt *L, psched *s)
{
    const prod *p = s->p;
    uint32_t VL = L->VL;
    s->nv = tile_rows(p, s->nt, VL);
    /* rows are stored tile by tile, block by block; only the last tile is short */
    uint64_t g = blk_row0(p, s->nt, s->kt, VL);
    for (uint32_t r = 0; r < s->nv && p->kind == 5; r++) {
        /* row n of head h: the second input's vector for (h, n), this block's channel tile */
        uint64_t h = s->kt / p->CT, v = (h * p->sh + (uint64_t)(p->jd ? r : s->nt * VL + r) * p->sn) * p->r->T + s->kt % p->CT +
                                        (p->hz ? (p->hc0 + h * (VL / p->hz)) / VL : 0);
        lt_slot(L, p->r, v, &s->rmem[r], &s->rword[r]);
        s->rlb[r] = p->r->ready[v];
    }
    if (p->kind != 5)
        blk_rows(L, s, g);
    bool any = false;
    for (uint32_t m = s->m0; m < s->m1 && !any && blk_used(p, s->nt, s->kt, VL); m++)
        any = pix_in(p, m, s->nt) && act_vec(p, m, s->kt) >= 0;
    if (!any)
        return TS_OK;
    ts_status rc = install_block(L, s);
    return rc != TS_OK ? rc : stream_block(L, s);
}

/* A 3 x 3 (or larger) Conv of 32 pixels or more, or a 1 x 1 one of 32 to 255 (fewer than QUAD_PASSES:
 * no east copy), without the east copy, on the west planes (wpair_mode; ResNet's stages 3 and 4, 196
 * and 49 pixels): its reduction blocks two by two, block
 * k on W0 and k + 1 on W1 at once, a pixel's two abc timed so that both products reach the VXM in
 * one cycle, added, then to the bias or the partial sum: one partial sum written and read a pixel
 * for two blocks. */
static bool wpair_mode(const lt *L, const psched *s)
{
    const prod *p = s->p;
    return p->kind == 2 && (p->w.kh * p->w.kw > 1 || p->M < QUAD_PASSES) && !L->mode && p->G == 1 && !p->rep &&
           !s->m.east && p->KT >= 2 && p->M >= 32 && s->m0 == 0 && s->m1 == p->M && L->tg->mxm_west >= 2;
}

typedef struct wpair_arg { const prod *p; const pass *ps[2]; } wpair_arg;

/* A pass's partial sum, an int32 in four words on streams sd .. sd + 3 from the VXM at cycle t,
 * written east into its four MEM words; *wdone the last write's cycle. */
static bool psum_write(lt *L, const pass *ps, uint64_t t, int sd, uint32_t tag, uint64_t *wdone)
{
    uint64_t last = 0;
    for (int b = 0; b < 4; b++) {
        uint64_t w;
        if (!lt_wr(L, ps->wmem[b], ps->wword[b], t, L->tg->pos_vxm, EAST, sd + b, tag, 0, &w))
            return false;
        last = w > last ? w : last;
    }
    *wdone = last;
    return true;
}

static bool try_wpair(lt *L, const void *arg, uint64_t T, uint64_t *wdone)
{
    const wpair_arg *a = arg;
    const pass *ps = a->ps[0];
    const ts_tsp_target *P = L->tg;
    uint32_t tag = L->tag % 65535 + 1, pv = P->pos_vxm;
    uint64_t lag = pair_lag(L, a->ps[0], a->ps[1]);
    val x0, x1, s1, part, sum;
    int sb, sd;
    if (T < lag || !pass_plane(L, a->p, a->ps[0], T, tag, tag, &x0) ||
        !pass_plane(L, a->p, a->ps[1], T - lag, tag, tag, &x1) ||
        !lt_vop(L, LT_ADD, P->reg.i32, 0, x0.t, &x0, &x1, -1, 0, tag, &s1, NULL) ||
        !lt_take_group(L, P_E2V_W, 4, s1.t, pv, &sb))
        return false;
    for (int b = 0; b < 4; b++)
        if (ps->first ? !lt_rd_any(L, 1, ps->bword + (uint32_t)b, s1.t, pv, WEST, sb + b, tag)
                      : !lt_rd(L, ps->pmem[b], ps->pword[b], s1.t, pv, WEST, sb + b, tag, ps->pready))
            return false;
    part = (val){.alu = -1, .dir = WEST, .s = sb, .t = s1.t};
    if (ps->final) {
        if (!lt_vop(L, LT_ADD, P->reg.i32, 0, s1.t, &s1, &part, -1, 0, tag, &sum, NULL) ||
            !requant(L, a->p, ps, &sum, tag, L->keep_scale, wdone))
            return false;
        L->tag = tag;
        return true;
    }
    if (!lt_vop(L, LT_ADD, P->reg.i32, 0, s1.t, &s1, &part, P_FROMV_E, 4, tag, &sum, &sd))
        return false;
    if (!psum_write(L, ps, s1.t + P->d_func.add, sd, tag, wdone))
        return false;
    L->tag = tag;
    return true;
}

/* Blocks k (on W0) and k + 1 (on W1) of output tile s->nt: installed, then every pixel with an input
 * in both as a pair, one with an input in one of them as a pass of its own. */
static ts_status wpair_block(lt *L, psched *s, uint32_t k)
{
    prod *p = s->p;
    uint32_t nt = s->nt, VL = L->VL;
    s->nv = tile_rows(p, nt, VL);
    ts_status rc = install_blocks(L, s, k, 2);
    if (rc != TS_OK)
        return rc;
    for (uint32_t m = s->m0; m < s->m1; m++) {
        int64_t xa = act_vec(p, m, k), xb = act_vec(p, m, k + 1);
        if (xa < 0 && xb < 0)
            continue;
        uint64_t pi = (uint64_t)m * p->NT + nt, T, w;
        pass ps[2];
        int j = xa >= 0 ? 0 : 1; /* a lone pass: the plane of its block */
        s->kt = k + (uint32_t)j;
        T = plan_pass(L, s, m, j ? xb : xa, j, &ps[0]);
        bool pair = xa >= 0 && xb >= 0;
        if (pair) {
            /* the pair is first if no block before k has an input, final if none after k + 1 */
            ps[0].final = s->lastk[pi] == k + 1;
            if (ps[0].final)
                lt_slot(L, p->y, (uint64_t)m * p->y->T + nt, &ps[0].omem, &ps[0].oword);
            s->kt = k + 1;
            uint64_t t1 = plan_pass(L, s, m, xb, 1, &ps[1]) + pair_lag(L, &ps[0], &ps[1]);
            T = t1 > T ? t1 : T;
            if (!ps[0].final && s->m.pav > T)
                T = s->m.pav;
        }
        /* the partial sums go to the buffer the pixel's last ones are not in */
        uint32_t wb = ps[0].first ? (k / 2) & 1 : s->pbuf[pi] ^ 1u;
        psum_at(L, s, (uint64_t)(m - s->m0) * p->NT + nt, wb, ps[0].wmem, ps[0].wword);
        if (pair) {
            wpair_arg a = {p, {&ps[0], &ps[1]}};
            rc = lt_search(L, try_wpair, &a, NULL, &T, &w, p->nd, true);
        } else {
            pass_arg a = {p, &ps[0]};
            rc = lt_search(L, try_pass, &a, NULL, &T, &w, p->nd, true);
        }
        if (rc != TS_OK)
            return rc;
        if (L->rdmax > s->rd_last)
            s->rd_last = L->rdmax;
        if (ps[0].final) {
            p->y->ready[(uint64_t)m * p->y->T + nt] = w + L->tg->d_func.write + 1;
        } else {
            s->pready[pi] = w + L->tg->d_func.write + 1;
            s->pbuf[pi] = (uint8_t)wb;
        }
        uint64_t lag = pair ? pair_lag(L, &ps[0], &ps[1]) : 0;
        lt_span(s->ly, T - lag, w);
        s->last_abcs[j] = T;
        if (pair)
            s->last_abcs[1] = T - lag;
        s->ly->passes += pair ? 2 : 1;
    }
    for (int j = 0; j < 2; j++)
        L->plane_busy[j] = s->last_abcs[j];
    return TS_OK;
}

/* A Conv of kquad_kind with the east copy: its reduction blocks four by four, block k + j on plane j
 * (W0, W1, E0, E1) at once, a pixel's four abc timed so that the four products reach the VXM in one
 * cycle, added two and two, then together, then to the bias or the partial sum: one partial sum
 * written and read a pixel for four blocks. Of 4 q + 2 or 4 q + 3 blocks, blocks 0 and 1 go first in a
 * west pair (wpair_block); a last lone block on the planes in turn (sched_one). */
static bool kquad_mode(const lt *L, const psched *s)
{
    const prod *p = s->p;
    return kquad_kind(p) && !L->mode && s->m.east && s->m0 == 0 && s->m1 == p->M && L->tg->mxm_west >= 2 &&
           L->tg->mxm_east >= 2;
}

/* try_quad with a partial sum in (not first) or the bias (first), and out (not final) or the
 * requantised output (final): the chain of ps[0]. */
static bool try_kquad(lt *L, const void *arg, uint64_t T, uint64_t *wdone)
{
    const quad_arg *a = arg;
    const pass *ps = a->ps[0];
    const ts_tsp_target *P = L->tg;
    uint32_t tag = L->tag % 65535 + 1, pv = P->pos_vxm, d0 = plane_dist(L, ps->pl);
    val x[4], s01, s23, sum, part, fin;
    for (int i = 0; i < 4; i++) {
        uint64_t lag = plane_dist(L, a->ps[i]->pl) - d0;
        if (T < lag || !pass_plane(L, a->p, a->ps[i], T - lag, tag, tag, &x[i]))
            return false;
    }
    int sb, sd;
    uint32_t btag = tag;
    bool kept = ps->first && kept_bias(L, ps->bword, x[0].t + 2 * lt_vop_lat(L, LT_ADD), tag, &part, &btag);
    if (!lt_vop(L, LT_ADD, P->reg.i32, 0, x[0].t, &x[0], &x[1], -1, 0, tag, &s01, NULL) ||
        !lt_vop(L, LT_ADD, P->reg.i32, 0, x[2].t, &x[2], &x[3], -1, 0, tag, &s23, NULL) ||
        !lt_vop_tags(L, LT_ADD, P->reg.i32, 0, s01.t, &s01, &s23, -1, 0, tag, btag, &sum, NULL))
        return false;
    if (ps->first) {
        if (!kept && !lt_bias_in(L, ps->bword, sum.t, tag, &part))
            return false;
    } else {
        if (!lt_take_group(L, P_E2V_W, 4, sum.t, pv, &sb))
            return false;
        for (int b = 0; b < 4; b++)
            if (!lt_rd(L, ps->pmem[b], ps->pword[b], sum.t, pv, WEST, sb + b, tag, ps->pready))
                return false;
        part = (val){.alu = -1, .dir = WEST, .s = sb, .t = sum.t};
    }
    if (ps->final) {
        if (!lt_vop_tags(L, LT_ADD, P->reg.i32, 0, sum.t, &sum, &part, -1, 0, btag, tag, &fin, NULL) ||
            !requant(L, a->p, ps, &fin, tag, L->keep_scale, wdone))
            return false;
        L->tag = tag;
        return true;
    }
    if (!lt_vop_tags(L, LT_ADD, P->reg.i32, 0, sum.t, &sum, &part, P_FROMV_E, 4, btag, tag, &fin, &sd))
        return false;
    if (!psum_write(L, ps, sum.t + P->d_func.add, sd, tag, wdone))
        return false;
    L->tag = tag;
    return true;
}

/* Blocks k to k + 3 of output tile s->nt on W0, W1, E0, E1: installed, then every pixel with an input
 * in one of them as a quad (the zero word where a block has none). */
static ts_status kquad_block(lt *L, psched *s, uint32_t k)
{
    prod *p = s->p;
    uint32_t nt = s->nt, VL = L->VL;
    s->nv = tile_rows(p, nt, VL);
    ts_status rc = install_blocks(L, s, k, 4);
    if (rc != TS_OK)
        return rc;
    uint32_t d0 = plane_dist(L, s->planes[0]);
    for (uint32_t m = s->m0; m < s->m1; m++) {
        uint64_t pi = (uint64_t)m * p->NT + nt, T = 0, w;
        if (s->firstk[pi] == UINT32_MAX || s->firstk[pi] > k + 3 || s->lastk[pi] < k)
            continue; /* no input in these four blocks */
        pass ps[4];
        for (int g = 0; g < 4; g++) {
            uint32_t kt = k + (uint32_t)g;
            ps[g] = (pass){.pl = s->planes[g], .kt = kt, .xv = act_vec(p, m, kt)};
            uint64_t t = pass_lb(L, s, g, ps[g].xv) + plane_dist(L, s->planes[g]) - d0;
            T = t > T ? t : T;
        }
        ps[0].first = s->firstk[pi] >= k;
        ps[0].final = s->lastk[pi] <= k + 3;
        ps[0].bword = s->m.cbase + 4 * (s->m.ct > 1 ? nt : 0);
        ps[0].sword = s->m.cbase + 4 * s->m.ct;
        uint32_t wb = ps[0].first ? (k / 4) & 1 : s->pbuf[pi] ^ 1u;
        uint64_t q = (uint64_t)(m - s->m0) * p->NT + nt;
        psum_at(L, s, q, s->pbuf[pi], ps[0].pmem, ps[0].pword);
        psum_at(L, s, q, wb, ps[0].wmem, ps[0].wword);
        if (!ps[0].first) {
            ps[0].pready = s->pready[pi];
            if (ps[0].pready > T + 3 * lt_vop_lat(L, LT_ADD))
                T = ps[0].pready - 3 * lt_vop_lat(L, LT_ADD);
        }
        if (ps[0].final)
            lt_slot(L, p->y, (uint64_t)m * p->y->T + nt, &ps[0].omem, &ps[0].oword);
        else if (s->m.pav > T)
            T = s->m.pav;
        quad_arg a = {p, {&ps[0], &ps[1], &ps[2], &ps[3]}, ps[0].first};
        rc = lt_search(L, try_kquad, &a, NULL, &T, &w, p->nd, true);
        if (rc != TS_OK)
            return rc;
        if (L->rdmax > s->rd_last)
            s->rd_last = L->rdmax;
        if (ps[0].final) {
            p->y->ready[(uint64_t)m * p->y->T + nt] = w + L->tg->d_func.write + 1;
        } else {
            s->pready[pi] = w + L->tg->d_func.write + 1;
            s->pbuf[pi] = (uint8_t)wb;
        }
        for (int g = 0; g < 4; g++) {
            uint64_t tg = T - (plane_dist(L, s->planes[g]) - d0);
            s->last_abcs[g] = tg;
            lt_span(s->ly, tg, w);
        }
        s->ly->passes += 4;
    }
    for (int j = 0; j < 4; j++)
        L->plane_busy[j] = s->last_abcs[j];
    return TS_OK;
}

/* Every block, reduction-major: the output tiles' partial-sum chains interleave, so a block need
 * not wait for the previous block of its own tile to write its partial sums. */
static ts_status sched_blocks(lt *L, psched *s)
{
    const prod *p = s->p;
    if (pair_mode(L, s))
        return sched_pairs(L, s);
    if (quad_mode(L, s))
        return sched_quads(L, s);
    if (q1_mode(L, s))
        return sched_q1(L, s);
    bool wp = wpair_mode(L, s), kq = kquad_mode(L, s);
    uint32_t q0 = kq && p->KT % 4 >= 2 ? 2 : 0, pair_end = kq ? q0 : p->KT;
    for (uint32_t b = 0; b < p->KT; b++)
        for (s->nt = 0; s->nt < p->NT; s->nt++) {
            ts_status rc;
            if (kq && b >= q0 && b + 3 < p->KT && blk_used(p, s->nt, b, L->VL) && blk_used(p, s->nt, b + 1, L->VL) &&
                blk_used(p, s->nt, b + 2, L->VL) && blk_used(p, s->nt, b + 3, L->VL)) {
                if ((rc = kquad_block(L, s, b)) != TS_OK)
                    return rc;
                if (s->nt + 1 == p->NT)
                    b += 3;
                continue;
            }
            if ((wp || kq) && b + 1 < pair_end && blk_used(p, s->nt, b, L->VL) && blk_used(p, s->nt, b + 1, L->VL)) {
                if ((rc = wpair_block(L, s, b)) != TS_OK)
                    return rc;
                if (s->nt + 1 == p->NT)
                    b++;
                continue;
            }
            /* a packed Conv: by anti-diagonals (pack_order), the planes taking the blocks in turn, so
             * a group's passes (bias read, partial sums written) run beside the next group's (partial
             * sums and scale read), which share the streams from the east */
            s->kt = p->kind == 6 ? pack_order(p, b) : b;
            if ((rc = sched_one(L, s)) != TS_OK)
                return rc;
        }
    return TS_OK;
}

/* The schedule's per-vector arrays; the first and last block of every output vector. */
static ts_status psched_init(lt *L, psched *s)
{
    const prod *p = s->p;
    s->firstk = ts_calloc((size_t)p->M * p->NT, sizeof *s->firstk);
    s->lastk = ts_calloc((size_t)p->M * p->NT, sizeof *s->lastk);
    s->rmem = ts_calloc(L->VL, sizeof *s->rmem);
    s->rword = ts_calloc(L->VL, sizeof *s->rword);
    s->ermem = ts_calloc(L->VL, sizeof *s->ermem);
    s->erword = ts_calloc(L->VL, sizeof *s->erword);
    s->rlb = ts_calloc(L->VL, sizeof *s->rlb);
    if (p->kind == 6 && !(s->need = ts_malloc(sizeof *s->need)))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    if (p->KT > 1) {
        s->pready = ts_calloc(p->M * p->NT, sizeof *s->pready);
        s->pbuf = ts_calloc(p->M * p->NT, 1);
    }
    if (!s->firstk || !s->lastk || !s->rmem || !s->rword || !s->ermem || !s->erword || !s->rlb ||
        (p->KT > 1 && (!s->pready || !s->pbuf)))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (uint32_t m = 0; m < p->M; m++)
        for (uint32_t nt = 0; nt < p->NT; nt++) {
            uint64_t i = (uint64_t)m * p->NT + nt;
            s->firstk[i] = UINT32_MAX;
            for (uint32_t kt = 0; kt < p->KT && pix_in(p, m, nt); kt++)
                if (act_vec(p, m, kt) >= 0 && blk_used(p, nt, kt, L->VL)) {
                    if (s->firstk[i] == UINT32_MAX)
                        s->firstk[i] = kt;
                    s->lastk[i] = kt;
                }
        }
    return TS_OK;
}

static void psched_free(psched *s)
{
    ts_free(s->firstk);
    ts_free(s->lastk);
    ts_free(s->rmem);
    ts_free(s->rword);
    ts_free(s->ermem);
    ts_free(s->erword);
    ts_free(s->rlb);
    ts_free(s->pready);
    ts_free(s->pbuf);
    ts_free(s->need);
}

/* Memory, then the schedule of every block, chunk by chunk of output rows; each chunk's
 * partial-sum buffers are freed after their last write. */
/* Does a product's scale stay in a latch while its final passes read it (lt_kept_in), where each
 * read it from the east MEM on 4 streams of the E MEM -> VXM pool? A Conv's, on the wide pools; of a
 * packed one, in quads only (sched_quads): the pairs' passes (sched_pairs) and their packed sums are
 * bound by the VXM's ALUs, of which a kept latch takes one. */
static bool keep_scale(const lt *L, const psched *s)
{
    const prod *p = s->p;
    return L->lean || (L->mode < 2 && (p->kind == 2 || p->kind == 3 || (p->kind == 6 && quad_mode(L, s))));
}

static ts_status sched_product(lt *L, prod *p, ts_lower_tsp_layer *ly)
{
    psched s = {.p = p, .ly = ly};
    ts_status rc;
    if ((rc = weights(L, p, &s.m)) != TS_OK || (rc = consts(L, p, &s.m)) != TS_OK)
        return rc;
    L->keep_scale = keep_scale(L, &s);
    /* LEAN: each tile's bias kept too while that tile's first passes read it */
    L->keep_bias = L->keep_scale && (s.m.ct == 1 || L->lean);
    L->ks = L->kb = (lt_kept){.n = 0};
    L->ptag = L->lean ? lt_new_tag(L) : 0;
    bool pair = pair_mode(L, &s); /* no partial sums */
    if (p->kind == 6 && !p->packed && !pair && !quad_mode(L, &s) && (rc = pack_block(L, p, p->x, ly)) != TS_OK)
        return rc;
    uint32_t rows = pair ? p->M : chunk_rows(L, p);
    if ((rc = psched_init(L, &s)) != TS_OK) {
        psched_free(&s);
        return rc;
    }
    for (s.m0 = 0; s.m0 < p->M && rc == TS_OK; s.m0 = s.m1) {
        s.m1 = p->M - s.m0 < rows ? p->M : s.m0 + rows;
        bool short_before = L->room_short;
        if ((rc = psums(L, p, s.m1 - s.m0, !pair, &s.m)) == TS_EINPUT && s.m.wsplit && rows > 1) {
            rc = TS_OK; /* split rows left the east too little for the buffers: smaller chunks */
            rows = (rows + 1) / 2;
            s.m1 = s.m0;
            L->room_short = short_before;
            if (L->err) {
                ts_err_free(L->err);
                ts_err_init(L->err);
            }
            continue;
        }
        if (rc != TS_OK || (rc = sched_blocks(L, &s)) != TS_OK)
            break;
        if (s.m.pwords) {
            uint64_t pl = 0;
            for (uint64_t i = (uint64_t)s.m0 * p->NT; i < (uint64_t)s.m1 * p->NT; i++)
                if (s.pready[i] > pl)
                    pl = s.pready[i];
            if (lt_al_put(lt_alloc_of(L, 1, s.m.pbases[0]), s.m.pbases[0], s.m.pwords, pl) ||
                lt_al_put(lt_alloc_of(L, 1, s.m.pbases[1]), s.m.pbases[1], s.m.pwords, pl))
                rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
        }
    }
    for (int i = 0; i < (p->kind == 4 ? p->cat.n : 1); i++) {
        tens *x = p->kind == 4 ? p->cat.x[i] : p->x;
        if (s.rd_last > x->last_read)
            x->last_read = s.rd_last;
    }
    psched_free(&s);
    lt_kept_end(L, &L->ks);
    lt_kept_end(L, &L->kb);
    L->keep_scale = L->keep_bias = false;
    L->ptag = 0;
    return rc;
}

/* ---- a MatMul's second activation transposed on the planes ---- */

/* A tensor of P pixels x C channels in a region of the west MEM that is not a graph tensor's (the
 * one-hot vectors, Bᵀ); fresh: initial data. */
static ts_status place_temp(lt *L, const ts_graph_node *nd, tens *x, uint32_t P, uint32_t C, const char *what,
                            bool fresh, int bank)
{
    memset(x, 0, sizeof *x);
    x->P = P;
    x->C = C;
    x->T = (uint32_t)ts_geom_cdiv(C, L->VL);
    x->off = L->rot % L->nW;
    x->nw = (uint32_t)ts_geom_cdiv((uint64_t)x->off + (uint64_t)P * x->T, L->nW);
    ts_status rc = lt_region(L, 0, x->nw, what, nd, fresh, bank, &x->base, &x->avail);
    if (rc != TS_OK)
        return rc;
    x->ready = ts_calloc((size_t)P * x->T, sizeof *x->ready);
    if (!x->ready)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    x->placed = true;
    x->owner = -1;
    L->words_used += (uint64_t)x->nw * L->nW;
    return TS_OK;
}

static void free_temp(lt *L, tens *x)
{
    if (x->placed && lt_al_put(lt_alloc_of(L, 0, x->base), x->base, x->nw, x->last_read))
        L->oom = true;
    ts_free(x->ready);
    x->ready = NULL;
    x->placed = false;
}

/* For A V (B = V not a Transpose the product can read through): Bᵀ [H, N, K] into *R, computed on
 * the planes: the one-hot vectors e_j (L->onehot, initial data) streamed through blocks whose row k of
 * head h is B's vector (h, k) give output lane k of (h, j) = B[h][k][j], with scale 1 (exact).
 * Lanes of B past N meet e_j's zeros. Then p's rows are Bᵀ's vectors. Where B is a head split
 * (p->hz, lt_v_split), row k of head h is the split's input vector (k, h / hz), all hz heads of its
 * tile in it, and head h's e_j is 1 in lane (h N + j) mod VL, where that head's channel j lies. */
static ts_status transpose_rows(lt *L, prod *p, ts_lower_tsp_layer *ly, tens *R)
{
    uint32_t H = p->H, K = p->K, N = p->N, VL = L->VL, EC = p->hz ? VL : N; /* EC tells the two sets apart */
    /* laid out once: every layer's A V has the same heads and widths; in the compact layout one set
     * per shape (a decoder's q Kᵀ and p V alternate) */
    tens *E = &L->onehot[0];
    for (uint32_t i = 0; L->compact && i < LT_ONEHOT_MAX; i++) {
        E = &L->onehot[i];
        if (!E->placed || (E->P == H * N && E->C == EC && L->onehot_c0[i] == p->hc0))
            break;
    }
    ts_status rc = TS_OK;
    if (!E->placed || E->P != H * N || E->C != EC || L->onehot_c0[E - L->onehot] != p->hc0) {
        L->onehot_c0[E - L->onehot] = p->hc0;
        ts_free(E->ready);
        image im;
        if ((rc = place_temp(L, p->nd, E, H * N, EC, "the one-hot vectors", true, 0)) != TS_OK ||
            (rc = lt_img_init(L, &im, L->nW, E->base, E->nw)) != TS_OK)
            return rc;
        for (uint64_t m = 0; m < (uint64_t)H * N; m++) {
            uint64_t j = p->hz ? (p->hc0 + m) % VL : m % N, k = E->off + m * E->T + j / VL;
            im.s[k % L->nW][(size_t)(k / L->nW) * VL + j % VL] = 1;
        }
        rc = lt_img_flush(L, &im, 0);
    }
    if (rc != TS_OK ||
        (rc = place_temp(L, p->nd, R, H * N, K, "the transposed second input", false, lt_bank_pref(L, p->x))) != TS_OK)
        return rc;
    prod t = {.nd = p->nd, .wid = -1, .bid = -1, .x = E, .y = R, .r = p->r, .rid = p->rid, .kind = 5, .H = H,
              .Mh = N, .sh = p->hz ? 0 : K, .sn = 1, .hz = p->hz, .hc0 = p->hc0, .M = H * N, .K = N, .N = K, .CT = E->T,
              .KT = H * E->T, .NT = (uint32_t)ts_geom_cdiv(K, VL), .scale = 1.0f};
    if ((rc = sched_product(L, &t, ly)) != TS_OK)
        return rc;
    p->r = R;
    p->sh = N;
    p->sn = 1;
    p->hz = 0;
    return TS_OK;
}

/* ---- a narrow Conv's taps packed into one vector (kind 6) ---- */

/* Whether product p writes its output y (tensor yid) in slots for Convs that pack their taps: every
 * reader of y is such a Conv (packable) with the same slots and factor, and the passes its packing
 * saves outnumber the cycles p's R - 1 more installs per block cost (40 each, with their latency).
 * Then p->rep, p->pl, p->pW, p->pHW are set: p's output tiles are the slots. */
static bool pack_slots(const lt *L, prod *p, int yid)
{
    if (p->kind == 4 || p->kind == 5 || p->G > 1 || p->N > L->VL / 2 || L->t[yid].output ||
        ts_graph_get_tensor(L->g, yid)->is_output)
        return false;
    size_t n;
    const int *c = ts_graph_consumers(L->g, yid, &n);
    pplan pl = {0};
    ts_geom_window w = {0};
    uint64_t saved = 0;
    for (size_t i = 0; i < n; i++) {
        const ts_graph_node *nd = ts_graph_get_node(L->g, c[i]);
        pplan q;
        ts_geom_window v;
        for (size_t k = 1; k < nd->nin; k++)
            if (nd->in[k] == yid)
                return false;
        if (nd->in[0] != yid || !packable(L, nd, &q, &v) || (i && (q.R != pl.R || q.k != pl.k)) ||
            v.C != p->N || (uint64_t)(v.N * v.H * v.W) != p->M)
            return false;
        pl = q;
        w = v;
        saved += (uint64_t)(v.kh * v.kw - q.G) * (uint64_t)(v.N * v.Ho * v.Wo) / 2;
    }
    if (!n || pl.R * p->N > L->VL || saved <= (uint64_t)(pl.R - 1) * p->KT * 40)
        return false;
    p->rep = pl.R;
    p->repk = pl.k;
    p->pW = w.W;
    p->pHW = w.H * w.W;
    return true;
}

/* One packed vector v of pk: the sum of its taps' input vectors, each written in its slot. */
typedef struct pack_arg {
    tens *x0, *pk;
    uint64_t v;
    uint32_t n;
    int64_t src[PACK_MAX];
} pack_arg;

/* Cycle of the VXM at which term i arrives: the first two at A, then one a cycle. */
static uint64_t term_at(uint32_t i)
{
    return i ? i - 1 : 0;
}

/* The sum as a chain of adds through the latches, add i (of term i) at A + i - 1, the last one's
 * result to the west MEM; a lone term is added to the zeros of word 0 of the next slice. */
static bool try_pack(lt *L, const void *arg, uint64_t A, uint64_t *w)
{
    const pack_arg *a = arg;
    uint32_t tag = L->tag % 65535 + 1, pv = L->tg->pos_vxm, m0, w0, mem, word;
    int32_t i8 = L->tg->reg.i8;
    val acc, y;
    int so = -1;
    lt_slot(L, a->x0, (uint64_t)a->src[0], &m0, &w0);
    if (!lt_vin_w(L, m0, w0, A, tag, a->x0->ready[a->src[0]], &acc))
        return false;
    if (a->n == 1 && (!lt_vin_w(L, (m0 + 1) % L->nW, 0, A, tag, 0, &y) ||
                      !lt_vop(L, LT_ADD, i8, 0, A, &acc, &y, P_PACK_W, 1, tag, &acc, &so)))
        return false;
    for (uint32_t i = 1; i < a->n; i++) {
        uint64_t t = A + term_at(i);
        bool ok;
        lt_slot(L, a->x0, (uint64_t)a->src[i], &mem, &word);
        ok = i == 1 ? lt_vin_w2(L, mem, word, t, tag, a->x0->ready[a->src[i]], &acc, m0, &y)
                    : lt_vin_w(L, mem, word, t, tag, a->x0->ready[a->src[i]], &y);
        if (!ok || !lt_vop(L, LT_ADD, i8, 0, t, &acc, &y, i + 1 == a->n ? P_PACK_W : -1, 1, tag, &acc, &so))
            return false;
    }
    lt_slot(L, a->pk, a->v, &mem, &word);
    if (!lt_wr(L, mem, word, acc.t, pv, WEST, so, tag, a->pk->avail, w))
        return false;
    L->tag = tag;
    return true;
}

/* What every cycle of a packing group needs (lt_need): its reads, its adds, its write. */
static void pack_need(const lt *L, const pack_arg *a, lt_need *n)
{
    uint32_t m0, w0, mem, word, d = lt_vop_lat(L, LT_ADD);
    *n = (lt_need){0};
    lt_slot(L, a->x0, (uint64_t)a->src[0], &m0, &w0);
    lt_need_vin(L, n, m0, w0, 0);
    for (uint32_t i = 1; i < a->n; i++) {
        lt_slot(L, a->x0, (uint64_t)a->src[i], &mem, &word);
        if (i == 1)
            lt_need_vin2(L, n, mem, word, 0, true, m0);
        else
            lt_need_vin(L, n, mem, word, (int64_t)term_at(i));
        lt_need_vop(L, n, LT_ADD, (int64_t)term_at(i), i + 1 == a->n ? P_PACK_W : -1, 1);
    }
    if (a->n == 1)
        lt_need_vop(L, n, LT_ADD, 0, P_PACK_W, 1);
    lt_slot(L, a->pk, a->v, &mem, &word);
    lt_need_wr(L, n, mem, word, (int64_t)(term_at(a->n > 1 ? a->n - 1 : 0) + d), L->tg->pos_vxm, WEST, a->pk->avail);
}

/* Pixel m's packed vectors of groups g0 .. g1 - 1 (pk: G a pixel), each one VXM group: the sum of its taps' input vectors,
 * each in its own slot. A packed vector all of whose taps fall in the pads is not written (act_vec
 * reads zeros for it). */
static ts_status pack_pixel(lt *L, const prod *p, tens *pk, ts_lower_tsp_layer *ly, uint32_t m, uint32_t g0, uint32_t g1, lt_need *need)
{
    pack_arg a = {.x0 = p->x0, .pk = pk};
    for (uint32_t g = g0; g < g1; g++) {
        a.v = (uint64_t)m * pk->T + g;
        if (!(a.n = pack_taps(p, m, g, a.src)))
            continue;
        uint64_t A = 0, w;
        for (uint32_t i = 0; i < a.n; i++) {
            uint32_t mem, word;
            lt_slot(L, a.x0, (uint64_t)a.src[i], &mem, &word);
            uint64_t e = a.x0->ready[a.src[i]] + L->tg->d_func.read + (L->tg->pos_vxm - lt_mem_pos(L, mem));
            if (e > A + term_at(i))
                A = e - term_at(i);
        }
        pack_need(L, &a, need);
        ts_status rc = lt_search(L, try_pack, &a, need, &A, &w, p->nd, true);
        if (rc != TS_OK)
            return rc;
        pk->ready[a.v] = w + L->tg->d_func.write + 1;
        if (L->rdmax > a.x0->last_read)
            a.x0->last_read = L->rdmax;
        lt_span(ly, A, w);
    }
    return TS_OK;
}

/* Every pixel's packed vectors, before the first pass (a packed Conv in neither pairs nor quads). */
static ts_status pack_block(lt *L, prod *p, tens *pk, ts_lower_tsp_layer *ly)
{
    lt_need *need = ts_malloc(sizeof *need);
    ts_status rc = need ? TS_OK : ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (uint32_t m = 0; m < p->M && rc == TS_OK; m++)
        rc = pack_pixel(L, p, pk, ly, m, 0, p->pl.G, need);
    ts_free(need);
    return rc;
}

/* ---- the operator ---- */

/* A product of one reduction block and more final passes than this (ResNet-50's stage-1 conv3, 3,136
 * pixels) keeps its Add apart (fused_add): its passes go at the rate of the VXM's ALUs, 4 operations
 * each, and the Add's 2 a vector, fixed in each pass's chain, would slow them more than an Add of its
 * own, whose operations fill the cycles the passes leave (measured: ResNet-50 60,138 cycles this way,
 * 60,728 with stage 1's fused too; MobileNetV2 179,134 and 179,322). */
#define ADD_VXM_PASSES 2048

/* The Add fused into product p's requantisation, whose output `out` it reads as its one consumer, else
 * -1: an Add of two activations of one shape (no broadcast) whose other operand (*res) is a tensor
 * the lowering placed already, in lanes 0 .. C - 1 (not in slots). Each final pass then adds that
 * operand's vector to its int8 value as the Add would (requant_add); the Add's lone Relu goes with
 * it. ResNet's conv3 (or downsample) with the shortcut, MobileNetV2's projection with the block's
 * input. */
static int fused_add(const lt *L, const prod *p, int out, int *res)
{
    size_t n;
    const int *c = ts_graph_consumers(L->g, out, &n);
    const ts_graph_tensor *t = ts_graph_get_tensor(L->g, out);
    if (p->kind == 4 || n != 1 || t->is_output)
        return -1;
    if (p->KT == 1 && (uint64_t)p->M * p->NT > ADD_VXM_PASSES)
        return -1;
    const ts_graph_node *a = ts_graph_get_node(L->g, c[0]);
    if (a->op != TS_OP_ADD || a->nin != 2 || a->in[0] == a->in[1])
        return -1;
    int o = a->in[a->in[0] == out ? 1 : 0];
    const ts_graph_tensor *ot = ts_graph_get_tensor(L->g, o), *at = ts_graph_get_tensor(L->g, a->out[0]);
    const tens *x = &L->t[o];
    if ((ot->kind != TS_TENSOR_ACTIVATION && ot->kind != TS_TENSOR_INPUT) || !x->placed || x->rep ||
        x->P != p->M || x->C != p->N || ot->rank != t->rank || at->rank != t->rank ||
        memcmp(ot->dims, t->dims, (size_t)t->rank * sizeof *t->dims) ||
        memcmp(at->dims, t->dims, (size_t)t->rank * sizeof *t->dims))
        return -1;
    *res = o;
    return c[0];
}

/* The lanes of 1 past its C channels that tensor id's readers take their biases from (bias_lanes):
 * every reader a 1 x 1 Conv of one block (C + lanes <= VL), one group, stride 1 and no pads (every
 * output pixel reads one input vector), with a bias; or a lone MaxPool whose output they all read
 * (the maximum of 1s is 1). 0 where a reader is another. */
static uint32_t ones_used(const lt *L, int id, uint32_t C)
{
    size_t n;
    const int *c = ts_graph_consumers(L->g, id, &n);
    if (!n || ts_graph_get_tensor(L->g, id)->is_output)
        return 0;
    const ts_graph_node *c0 = ts_graph_get_node(L->g, c[0]);
    if (n == 1 && c0->op == TS_OP_MAXPOOL)
        return ones_used(L, c0->out[0], C);
    uint32_t most = 0;
    for (size_t i = 0; i < n; i++) {
        const ts_graph_node *cn = ts_graph_get_node(L->g, c[i]);
        ts_geom_window w;
        if (cn->op != TS_OP_CONV || cn->nin < 3 || cn->in[0] != id || cn->attrs.group > 1 ||
            !ts_geom_window_of(L->g, cn, &w) || w.kh != 1 || w.kw != 1 || w.Ho != w.H || w.Wo != w.W || w.C != C)
            return 0;
        uint32_t lanes = lanes_for(L, cn->in[2], (uint32_t)w.M);
        if (!lanes)
            return 0;
        most = lanes > most ? lanes : most;
    }
    return C + most <= L->VL ? most : 0;
}

/* The lanes of 1 a product writes past its N outputs for the 1 x 1 Convs that read them (ones_used,
 * tensor yid), so that they take their biases in their blocks (bias_lanes): the product's bias in
 * those lanes is one_bias, requantised to 1 (and Relu keeps it), added on the VXM or, with its bias in
 * its block (kind 3), in the block's rows past N. For a product of one output tile, not in slots,
 * without a fused Add, with a bias; 0 else. */
static uint32_t ones_lanes(const lt *L, const prod *p, int yid)
{
    int32_t one = one_bias(p->scale);
    if (p->NT != 1 || p->rep || p->res || p->bid < 0 || !one)
        return 0;
    if (p->kind == 3 ? !p->blanes || one > 127 * (int32_t)p->blanes : p->kind != 2 && p->kind != 6)
        return 0;
    return ones_used(L, yid, p->N);
}

/* MatMul, Gemm or Conv: its geometry, its output placed (a lone Relu after it fused: the Relu's
 * output is the product's; an Add after it fused, fused_add: the Add's, or its Relu's), then its
 * schedule; an im2col input laid out for it is freed after. */
ts_status lt_lower_product(lt *L, const ts_graph_node *nd, ts_lower_tsp_layer *ly)
{
    bool cat = nd->op == TS_OP_CONCAT || nd->op == TS_OP_SLICE || nd->op == TS_OP_TRANSPOSE || nd->op == TS_OP_EXPAND ||
               nd->op == TS_OP_RESHAPE;
    prod p = {.nd = nd, .bid = -1, .wid = cat ? -1 : nd->in[1]};
    tens im2 = {0};
    int xid = nd->in[0], out = nd->out[0];
    ts_status rc = nd->op == TS_OP_CONV ? conv_shape(L, nd, &p, &im2)
                 : cat                  ? cat_shape(L, nd, &p)
                                        : matmul_shape(L, nd, &p);
    if (rc == TS_OK && !p.x->placed)
        rc = ts_lower_fail(L->err, nd, "its input is not an int8 activation the lowering placed");
    if (rc != TS_OK) {
        ts_free(im2.ready);
        return rc;
    }
    if (cat && p.cat.out != out) { /* a split writing a folded Transpose's output: what lies between is done */
        for (int id = out; id != p.cat.out;) {
            size_t n;
            L->t[id].fused = true;
            id = ts_graph_get_node(L->g, ts_graph_consumers(L->g, id, &n)[0])->out[0];
        }
        out = p.cat.out;
    }
    const ts_graph_node *jn = p.kind == 5 ? lt_av_join(L, nd) : NULL;
    if (jn)
        out = jn->out[0]; /* A V writes the head join's output */
    p.NT = (uint32_t)ts_geom_cdiv(p.N, L->VL);
    int mmout = out, ba = p.kind == 0 && nd->op == TS_OP_MATMUL ? ts_lower_tsp_bias_add(L->g, nd, &p.bid) : -1;
    if (ba >= 0) { /* the Add of its bias folded: the product writes the Add's output */
        p.fbias = true;
        out = ts_graph_get_node(L->g, ba)->out[0];
    }
    int rid = -1, ad = jn ? -1 : fused_add(L, &p, out, &rid);
    int aout = ad >= 0 ? ts_graph_get_node(L->g, ad)->out[0] : out; /* the value the product computes */
    int fu = jn ? -1 : lt_fused_relu(L, aout);
    p.relu = fu >= 0;
    p.res = ad >= 0 ? &L->t[rid] : NULL;
    p.scale = cat ? 1.0f : ts_lower_tsp_scale(p.K); /* a Concat moves its values unchanged */
    ly->scale = p.scale;
    int yid = fu >= 0 ? ts_graph_get_node(L->g, fu)->out[0] : aout;
    tens pk = {0};
    if (p.kind == 6) { /* the packed vectors in the other bank than the input, the output in the input's */
        rc = place_temp(L, nd, &pk, p.M, p.CT * L->VL, "the packed taps", false, lt_bank_pref(L, p.x0));
        p.x = &pk;
    }
    if (rc != TS_OK ||
        (rc = lt_place(L, yid, jn ? p.Mh : p.M, jn ? p.H * p.N : p.N, nd, false, lt_bank_pref(L, p.x))) != TS_OK) {
        ts_free(im2.ready);
        free_temp(L, &pk);
        return rc;
    }
    p.y = &L->t[yid];
    if (cat && p.cat.inplace) /* every lane written, the graph's channels kept */
        p.y->C = (uint32_t)p.cat.Cout;
    if (!p.res && pack_slots(L, &p, yid)) /* a fused Add's other operand is not in slots */
        p.NT = p.rep; /* the slots are its output tiles */
    p.y->rep = p.rep;
    p.y->repk = p.repk;
    p.y->nonneg = p.relu;
    p.y->ones = p.ones = ones_lanes(L, &p, yid);
    zero_tail(L, &p);
    int done[3] = {out, aout, mmout};
    for (int k = 0; k < 3; k++) {
        /* the Adds and the Relu are done: their outputs are this product's */
        int id = done[k];
        if (id == yid || (k && id == out))
            continue;
        L->t[id] = L->t[yid];
        L->t[id].ready = NULL;
        L->t[id].placed = false;
        L->t[id].fused = true;
    }
    tens bt = {0};
    /* a packed Conv that may go in pairs or quads packs each pixel just before its passes
     * (sched_pairs; quad_lead and quad_main); had
     * every pixel been packed first, the adds would take the VXM's ALUs until the producer's last
     * slot, and the passes, whose VXM operations must fall on given cycles, would wait for them */
    p.packed = p.kind == 6 && !((p.pl.G == 2 || p.pl.G == 5) && p.NT == 1 && !p.rep && east_kind(L, &p));
    rc = p.tb ? transpose_rows(L, &p, ly, &bt) : p.packed ? pack_block(L, &p, &pk, ly) : TS_OK;
    if (jn) { /* output pixel s, head h's block a reduction block of its tile */
        p.jd = p.N;
        p.M = p.Mh;
        p.N = p.H * p.jd;
        p.NT = (uint32_t)ts_geom_cdiv(p.N, L->VL);
    }
    if (rc == TS_OK)
        rc = sched_product(L, &p, ly);
    free_temp(L, &bt);
    free_temp(L, &pk);
    if (p.kind == 3) {
        if (lt_al_put(lt_alloc_of(L, 0, im2.base), im2.base, im2.nw, im2.last_read))
            L->oom = true;
        ts_free(im2.ready);
    }
    if (rc != TS_OK)
        return rc;
    if (p.res) { /* every read of the Add's operand came before its pass's write */
        if (ly->last > p.res->last_read)
            p.res->last_read = ly->last;
        lt_release(L, rid);
    }
    if (p.kind == 5)
        lt_release(L, p.rid);
    for (int i = 0; i < (cat ? p.cat.n : 1); i++) {
        int id = cat ? p.cat.ids[i] : p.kind == 5 ? p.xid : xid;
        bool again = false; /* an input given twice is released once */
        for (int j = 0; j < i; j++)
            again |= p.cat.ids[j] == id;
        if (!again)
            lt_release(L, id);
    }
    return TS_OK;
}
