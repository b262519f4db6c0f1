/* workloads/ipu/lower_ipu_conv.c — Conv on the IPU's AMP, planner (a) (and the Gemm of one row,
 * a 1x1 Conv of its K channels).
 *
 * Conv (batch 1, group 1, no dilation) as an im2col'd matrix product on the AMP. The output is
 * split three ways over tiles t = (gk * ngc + gc) * nrb + gr: groups of AMP units of output
 * channels (gc), blocks of output rows (gr) and parts of the input channels (gk). A tile gathers
 * its input channels over the input rows its output rows need (halo rows included), copies them
 * into a zeroed, padded image when the Conv pads, and for each of its output pixels builds the
 * pixel's im2col row in a worker buffer (a table of byte offsets within the image added to the
 * pixel's base offset from a table of bases) and multiplies it on the AMP with its coefficient
 * blocks (its weights only: weights are split over gc and gk, repeated over gr). A kernel larger
 * than 1x1 reads a channel-last image instead, every pixel's inputs kh runs of kw x channels read
 * by the AMP loop itself. Partial sums over gk are added in a tree, one superstep per level: in
 * level d a tile with gk = d mod 2d sends its sums to gk - d, which adds them. The output stays on
 * the gk = 0 tiles, each channel's pixels of the tile in a row of rb * Wo.
 *
 * The passes: the plan (conv_choose, by conv_cost), its geometry, the gather of the input, the
 * memory, then per tile its weights, its image and its pixel kernel, then the tree.
 */
#include <string.h>

#include "core/alloc.h"
#include "core/half.h"
#include "workloads/ipu/lower_ipu_int.h"

/* A Conv's plan and its memory. */
typedef struct cv_plan {
    bool half;            /* f16v4amp (U16 units of 4 inputs), else f32v2amp (units of 2) */
    bool pad;             /* the Conv pads: the input is copied into a zeroed, padded image */
    bool hwc;             /* a kernel larger than 1x1: a channel-last image, no im2col row */
    uint32_t U;           /* AMP units */
    uint64_t per, eb;     /* inputs per AMP step; bytes of a kernel input */
    uint64_t nq, WI;      /* output-channel groups; padded image width */
    /* the choice: groups per tile, row blocks of rb rows, input-channel parts of cpk channels */
    uint64_t qpt, nrb, rb, nks, cpk;
    /* derived */
    uint64_t ngc;         /* channel groups of tiles */
    uint32_t tn, tout;    /* tiles; tiles holding the output (gk = 0), of one image */
    uint64_t nimg;        /* images of the batch, each on tn tiles of its own (conv_gtile) */
    uint64_t pbk;         /* output pixels per channel row of a tile */
    uint64_t NB;          /* input rows of the largest row block */
    uint64_t HI, WIm;     /* the image the kernel reads */
    uint64_t Cs;          /* channel-last: channels per image pixel (1 otherwise) */
    uint64_t kpm;         /* AMP steps of the longest row */
    /* memory */
    uint64_t img, colbuf, wbytes, bbytes, waddr, baddr, out, alt, rbuf, bt;
} cv_plan;

/* One tile's part of the plan. */
typedef struct cv_tile {
    uint64_t gr, gc, gk;  /* row block, channel group, input-channel part */
    uint64_t ci0, cp;     /* its input channels */
    uint64_t K, kp;       /* inputs of a pixel, AMP steps */
    uint64_t q0, q1;      /* its output-channel groups */
    uint64_t npx;         /* its output pixels */
    int64_t iylo;         /* the image row of its first output row's first input row */
    uint64_t ya, nbt;     /* its first input row (0 if padding), input rows gathered */
    bool bias;
} cv_tile;

static float cv_weight(const cv_shape *s, uint64_t m, uint64_t c, uint64_t ky, uint64_t kx)
{
    if (s->wmode == 1)
        return ts_fill_value_f32(s->Wt, s->wid, m * s->C + c);
    if (s->wmode == 2)
        return ts_fill_value_f32(s->Wt, s->wid, c * s->M + m);
    return ts_fill_value_f32(s->Wt, s->wid, ((m * s->C + c) * s->kh + ky) * s->kw + kx);
}

/* The chip's tile of image img's tile t: the output tiles (gk = 0) of the images first, image by
 * image, so that the batch's output is one layout (its planes the batch's channels), then the
 * tiles of the other input-channel parts. */
static uint32_t conv_gtile(const cv_plan *pn, uint64_t img, uint64_t t)
{
    return (uint32_t)(t < pn->tout ? img * pn->tout + t : pn->nimg * pn->tout + img * (pn->tn - pn->tout) + t - pn->tout);
}

/* ---- the plan ---- */

/* The plan's terms that the shape fixes. f16 (f16v4amp: U16 units of 4 inputs) when asked for,
 * the channels are even (the inputs are converted in pairs) and the AMP has 2, 4 or 8 f16 units;
 * else f32 (f32v2amp: units of 2). */
static void conv_terms(const lw *L, const cv_shape *s, cv_plan *pn)
{
    pn->half = s->half && s->C % 2 == 0 && L->units16 >= 2 && L->units16 <= 8 && L->units16 % 2 == 0;
    pn->U = pn->half ? L->units16 : L->units;
    pn->per = pn->half ? 4 : 2;
    pn->eb = pn->half ? 2 : 4;
    pn->nq = ts_geom_cdiv(s->M, pn->U);
    pn->pad = s->pt || s->pl || s->pbot || s->pr;
    pn->hwc = s->kh * s->kw > 1;
    pn->WI = s->Wd + s->pl + s->pr;
}

/* The limits a plan is priced against: the operator's buffers within 1/3 of the tile, its weights
 * per tile within 1.05 times an even share of them over the chip (weights stay for the whole run);
 * and the AMP loop's issues per input of a group. */
typedef struct cv_limits {
    uint64_t tb, wb;
    double ki;
    bool steps; /* a product of one row whose weights take more than 1/32 of each tile: parts of its
                 * inputs cut to whole AMP steps and priced as held (padded to them), so that they
                 * spread evenly (an OPT-13B layer's fc1: 160 KiB a tile, 144 so) */
} cv_limits;

/* The estimated tile cycles of q groups per tile, nr_ row blocks of r rows, input-channel parts of
 * cp channels (nk parts), with ng channel groups of tiles; XP is the input's placement. Issues:
 * the six workers fill every cycle. */
static double conv_cost(const lw *L, const cv_shape *s, const cv_plan *pn, const cv_limits *lim, const lw_place *XP,
                        uint64_t q, uint64_t ng, uint64_t r, uint64_t nr_, uint64_t cp, uint64_t nk)
{
    const uint64_t H = s->H, Wd = s->Wd, M = s->M, kh = s->kh, kw = s->kw, sh = s->sh, P = s->Ho * s->Wo;
    const bool half = pn->half, hwc = pn->hwc, pad = pn->pad;
    const uint32_t U = pn->U;
    const uint64_t per = pn->per, eb = pn->eb, WI = pn->WI;
    const double ki = lim->ki;
    uint64_t Kt = cp * kh * kw, npx = r * s->Wo;
    uint64_t band = (r - 1) * sh + kh < H + s->pt + s->pbot ? (r - 1) * sh + kh : H;
    uint64_t cpe = ts_geom_cdiv(cp, per) * per; /* channel-last image: channels padded */
    double comp = (double)(ts_geom_cdiv(npx, L->workers) * L->workers) *
                  (hwc ? (double)(8 + (double)q * (ki * (double)(kh * kw * cpe) + 12 + 2 * kh))
                       : (double)(3 * Kt + 8) + (double)q * (ki * (double)Kt + 12));
    /* gathering: what a tile receives, or what a tile holding the input sends (every receiver of
     * its words in turn), whichever is more */
    double recv = (double)(cp * band * Wd);
    double send = recv * (double)(ng * nr_ * nk) / (double)(XP->ntiles ? XP->ntiles : 1);
    double gat = 1.5 * (recv > send ? recv : send) + (pad || hwc ? 3.0 * (double)(cpe * band * WI) : 0);
    double lev = 0;
    for (uint64_t d = 1; d < nk; d *= 2)
        lev++;
    double red = lev * (5.0 * (double)(q * U * npx) + 150);
    /* exchange rounds: about one per input tile a tile reads from */
    double rounds = XP->inner ? (double)(ts_geom_cdiv(cp, XP->cb) + 1) * (double)(band * Wd / XP->pb + 1)
                              : (double)(cp * band * Wd / XP->chunk + 1);
    if (nr_ == 1 && !XP->inner)
        rounds = (double)(cp * H * Wd / XP->chunk + 1);
    /* and the next operator's: about one per group of this output's channels (f16: per group and
     * row block, and on images of 28 x 28 or less 16 cycles per channel and row block, as a blocked
     * output is sent in pieces per channel and row block, each a few supervisor instructions; tried
     * on ResNet-50: without it layer3.0's downsample took 2.4 M cycles instead of 1.5 M, with it
     * also on 56 x 56 layer1.0's 0.9 M instead of 0.3 M; the f32 plans, calibrated without these
     * terms, keep the old one) */
    double cost = comp + gat + red + 250.0 * (rounds + (double)(half ? ng * nr_ : ng)) +
                  (half && nr_ > 1 && P <= 784 ? 16.0 * (double)(M * nr_) : 0);
    double mem = 4.0 * (double)(cp * band * Wd + (hwc ? cpe * band * WI * eb / 4 : pad ? cpe * band * WI : 0) +
                                (hwc ? 0 : L->workers * (Kt + 1)) + q * U * npx * (nk > 1 ? 3 : 1));
    double wt = (double)eb * (double)(q * U * (lim->steps ? ts_geom_cdiv(Kt, per) * per : Kt));
    /* past a limit, every byte costs as much as 1024 cycles */
    cost += 1024.0 * ((mem > (double)lim->tb ? mem - (double)lim->tb : 0) +
                      (wt > (double)lim->wb ? wt - (double)lim->wb : 0));
    return cost;
}

/* The plan: groups per tile qpt, row blocks nrb, input-channel parts nks, the cheapest by
 * conv_cost; q doubles up to all groups, the row blocks take each count once (the fewest rows),
 * the parts double up to what the tiles left allow. */
static void conv_choose(const lw *L, const cv_shape *s, const lw_place *XP, cv_plan *pn)
{
    const uint64_t C = s->C, Ho = s->Ho, nq = pn->nq, P = s->Ho * s->Wo;
    const bool half = pn->half;
    const uint64_t T = L->T / pn->nimg; /* a batch: each image on its own tiles */
    cv_limits lim = {.tb = L->p->target.sram_bytes / 3};
    /* AMP loop issues per input of a group: (U + 2) per step of per inputs, taken as 2 for f32 (as
     * calibrated) and scaled by the f16 loop's ratio to it */
    lim.ki = half ? 2.0 * (pn->U + 2) * 2 / (6.0 * (double)pn->per) : 2.0;
    lim.wb = (uint64_t)(1.05 * (double)(s->M * C * s->kh * s->kw * pn->eb) / (double)T);
    lim.steps = P == 1 && s->wmode && lim.wb > L->p->target.sram_bytes / 32;
    if (lim.wb < 2048)
        lim.wb = 2048;
    double best = 0;
    pn->qpt = pn->nrb = pn->nks = pn->rb = pn->cpk = 0;
    for (uint64_t q = ts_geom_cdiv(nq, T); q <= nq; q = q * 2 > nq && q < nq ? nq : q * 2) {
        uint64_t ng = ts_geom_cdiv(nq, q), sp = T / ng;
        if (pn->nimg > 1 && s->M % (q * pn->U)) { /* a batch: whole channel groups an image */
            if (q == nq)
                break;
            continue;
        }
        for (uint64_t r = Ho; r >= 1; r--) {
            uint64_t nr_ = ts_geom_cdiv(Ho, r);
            if (r < Ho && ts_geom_cdiv(Ho, r + 1) == nr_)
                continue; /* the same number of blocks with fewer rows */
            if (nr_ > sp)
                break;
            /* f16 on images of 14 x 14 or less: whole images only. Blocked outputs of small images
             * are sent to the next operator's many channel groups in pieces per channel and row
             * block; on ResNet-50's 14 x 14 layers that took tile 0's supervisor code past the
             * tile memory (the cost does not price code). */
            if (half && nr_ > 1 && P <= 196)
                continue;
            for (uint64_t k = 1; k <= sp / nr_; k = k * 2 > sp / nr_ && k < sp / nr_ ? sp / nr_ : k * 2) {
                uint64_t cp = ts_geom_cdiv(C, k);
                if (lim.steps)
                    cp = ts_geom_cdiv(cp, pn->per) * pn->per;
                uint64_t nk = ts_geom_cdiv(C, cp);
                if (half && cp % 2)
                    continue; /* f16 inputs are converted in channel pairs */
                double cost = conv_cost(L, s, pn, &lim, XP, q, ng, r, nr_, cp, nk);
                if (!pn->qpt || cost < best) {
                    pn->qpt = q, pn->nrb = nr_, pn->rb = r, pn->nks = nk, pn->cpk = cp;
                    best = cost;
                }
            }
        }
        if (q == nq)
            break;
    }
}

/* What follows from the choice: tiles, pixels per tile, the image the kernel reads. */
/* The image rows [ya, yb) that row block gr (of rb output rows) reads; empty (yb <= ya) for a
 * block wholly in the padding, above the image or below it. */
static void block_rows(const cv_shape *s, uint64_t rb, uint64_t gr, uint64_t *ya, uint64_t *yb)
{
    int64_t lo = (int64_t)(gr * rb * s->sh) - (int64_t)s->pt;
    uint64_t oy1 = (gr + 1) * rb < s->Ho ? (gr + 1) * rb : s->Ho;
    int64_t hi = (int64_t)((oy1 - 1) * s->sh + s->kh) - (int64_t)s->pt;
    *ya = lo > 0 ? (uint64_t)lo : 0;
    *yb = hi <= 0 ? 0 : hi < (int64_t)s->H ? (uint64_t)hi : s->H;
}

static void conv_geometry(const cv_shape *s, cv_plan *pn)
{
    const uint64_t H = s->H, kh = s->kh, sh = s->sh, rb = pn->rb;
    pn->ngc = ts_geom_cdiv(pn->nq, pn->qpt);
    pn->tn = (uint32_t)(pn->ngc * pn->nrb * pn->nks);
    pn->tout = (uint32_t)(pn->ngc * pn->nrb);
    pn->pbk = rb * s->Wo;
    uint64_t HB = (rb - 1) * sh + kh; /* padded image rows of a row block */
    /* input rows of each row block: [ya, yb) of the image rows from iy_lo on */
    uint64_t NB = 0;
    for (uint64_t gr = 0; gr < pn->nrb; gr++) {
        uint64_t ya, yb;
        block_rows(s, rb, gr, &ya, &yb);
        if (yb > ya && yb - ya > NB)
            NB = yb - ya;
    }
    if (pn->nrb == 1)
        NB = H;
    pn->NB = NB;
    pn->HI = pn->pad || pn->hwc ? HB : NB;
    pn->WIm = pn->pad || pn->hwc ? pn->WI : s->Wd;
    pn->Cs = pn->hwc ? ts_geom_cdiv(pn->cpk, pn->per) * pn->per : 1;
    pn->kpm = pn->hwc ? kh * s->kw * pn->Cs / pn->per : ts_geom_cdiv(pn->cpk * kh * s->kw, pn->per);
}

/* The input ranges of every tile: its channels over the input rows of its row block (whole
 * images: one run of channels). */
static void conv_ranges(const cv_shape *s, const cv_plan *pn, lw_scr *sc)
{
    const uint64_t C = s->C, H = s->H, Wd = s->Wd;
    for (uint64_t img = 0; img < pn->nimg; img++)
        for (uint32_t tl = 0; tl < pn->tn; tl++) {
            uint32_t t = conv_gtile(pn, img, tl);
            uint64_t gr = tl % pn->nrb, gk = tl / pn->tout, x0 = s->x0 + img * C * H * Wd;
            uint64_t ci0 = gk * pn->cpk, ci1 = ci0 + pn->cpk < C ? ci0 + pn->cpk : C;
            if (pn->nrb == 1) {
                sc->lo[t] = x0 + ci0 * H * Wd;
                sc->hi[t] = x0 + ci1 * H * Wd;
                sc->nr[t] = 1;
            } else {
                uint64_t ya, yb;
                block_rows(s, pn->rb, gr, &ya, &yb);
                sc->lo[t] = x0 + ci0 * H * Wd + ya * Wd;
                sc->hi[t] = sc->lo[t] + (yb > ya ? yb - ya : 0) * Wd;
                sc->nr[t] = (uint32_t)(ci1 - ci0);
            }
        }
}

/* The memory: the image and the im2col rows (the operator's), the weights and bias (initial
 * data), the output and, with parts, the second sum buffer and the receive buffer. */
static void conv_alloc(lw *L, const cv_shape *s, cv_plan *pn)
{
    const uint64_t sums = pn->qpt * pn->U * pn->pbk * 4;
    pn->img = pn->pad || pn->hwc ? lwi_talloc(L, pn->hwc ? pn->Cs * pn->HI * pn->WIm * pn->eb
                                                          : pn->cpk * pn->HI * pn->WIm * 4)
                                 : 0;
    pn->colbuf = pn->hwc ? 0 : lwi_talloc(L, L->workers * pn->kpm * 8);
    pn->wbytes = pn->qpt * pn->kpm * pn->U * 8;
    pn->bbytes = pn->qpt * pn->U * 4;
    if (s->wkeep && s->wkeep->set) { /* a later image of a batch: the first image's weights */
        pn->waddr = s->wkeep->waddr;
        pn->baddr = s->wkeep->baddr;
    } else {
        pn->waddr = lwi_salloc(L, pn->wbytes);
        pn->baddr = s->Bt ? lwi_salloc(L, pn->bbytes) : 0;
    }
    pn->out = lwi_alloc(L, sums);
    pn->alt = pn->rbuf = 0;
    if (pn->nks > 1) {
        pn->alt = lwi_alloc(L, sums);
        pn->rbuf = lwi_talloc(L, sums);
    }
}

/* The table of a pixel's base offset within the image, for the pixels of a row block. */
static ts_status conv_bases(lw *L, const ts_graph_node *n, const cv_shape *s, cv_plan *pn)
{
    uint32_t *bv = ts_calloc(pn->pbk, 4);
    if (!bv)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory lowering '%s'", n->name);
    for (uint64_t ly = 0; ly < pn->rb; ly++)
        for (uint64_t ox = 0; ox < s->Wo; ox++)
            bv[ly * s->Wo + ox] = (uint32_t)((ly * s->sh * pn->WIm + ox * s->sw) * pn->Cs * (pn->hwc ? pn->eb : 4));
    ts_status rc = TS_OK;
    pn->bt = lwi_stable(L, bv, pn->pbk * 4, (uint32_t)(pn->nimg * pn->tn), &rc);
    ts_free(bv);
    return rc;
}

/* Tile t's part of the plan (of an image; its input rows from the gather's ranges in sc at the
 * chip's tile tg). */
static cv_tile conv_tile(const cv_shape *s, const cv_plan *pn, const lw_scr *sc, uint32_t t, uint32_t tg)
{
    cv_tile c = {.gr = t % pn->nrb, .gc = t / pn->nrb % pn->ngc, .gk = t / pn->tout};
    c.ci0 = c.gk * pn->cpk;
    c.cp = c.ci0 + pn->cpk < s->C ? pn->cpk : s->C - c.ci0;
    c.K = pn->hwc ? s->kh * s->kw * pn->Cs : c.cp * s->kh * s->kw;
    c.kp = ts_geom_cdiv(c.K, pn->per);
    c.q0 = c.gc * pn->qpt;
    c.q1 = c.q0 + pn->qpt < pn->nq ? c.q0 + pn->qpt : pn->nq;
    uint64_t oy0 = c.gr * pn->rb, oy1 = oy0 + pn->rb < s->Ho ? oy0 + pn->rb : s->Ho;
    c.npx = (oy1 - oy0) * s->Wo;
    c.iylo = (int64_t)(oy0 * s->sh) - (int64_t)s->pt;
    c.ya = c.iylo > 0 ? (uint64_t)c.iylo : 0;
    c.nbt = pn->nrb == 1 ? s->H : (sc->hi[tg] - sc->lo[tg]) / s->Wd;
    c.bias = s->Bt && c.gk == 0;
    return c;
}

/* ---- per tile ---- */

/* The coefficient blocks [q][k/per][u][per] (f16: halves) and bias (f32) of the tiles of c's channel
 * group and input-channel part (the same on each of their row blocks and images) into w, which
 * holds wbytes + bbytes. */
static void conv_weights_build(const cv_shape *s, const cv_plan *pn, const cv_tile *c, float *w)
{
    const uint64_t kh = s->kh, kw = s->kw, Cs = pn->Cs, per = pn->per, K = c->K, kp = c->kp;
    const uint32_t U = pn->U;
    memset(w, 0, pn->wbytes + pn->bbytes);
    uint16_t *w16 = (uint16_t *)w;
    float *bb = w + pn->wbytes / 4;
    for (uint64_t q = c->q0; q < c->q1; q++)
        for (uint32_t u = 0; u < U; u++) {
            uint64_t m = q * U + u;
            if (m >= s->M)
                continue;
            for (uint64_t k = 0; k < K; k++) {
                float v = 0;
                if (!pn->hwc)
                    v = cv_weight(s, m, c->ci0 + k / (kh * kw), k / kw % kh, k % kw);
                else if (k % Cs < c->cp) /* k = (ky * kw + kx) * Cs + c */
                    v = cv_weight(s, m, c->ci0 + k % Cs, k / Cs / kw, k / Cs % kw);
                uint64_t at = (((q - c->q0) * kp + k / per) * U + u) * per + k % per;
                if (pn->half)
                    w16[at] = ts_f32_to_f16(v);
                else
                    w[at] = v;
            }
            if (c->bias)
                bb[(q - c->q0) * U + u] = ts_fill_value_f32(s->Bt, s->bid, m);
        }
}

/* Tile t's weights and bias (built in w by conv_weights_build) as its initial data. */
static ts_status conv_weights(lw *L, const cv_plan *pn, const cv_tile *c, uint32_t t, const float *w)
{
    ts_status rc = lwi_seg(L, t, pn->waddr, w, (c->q1 - c->q0) * c->kp * pn->U * 8);
    if (rc == TS_OK && c->bias)
        rc = lwi_seg(L, t, pn->baddr, w + pn->wbytes / 4, pn->bbytes);
    return rc;
}

/* Zero `rows` rows of `row` bytes (a multiple of 4) from img, rows over the workers. */
static void conv_zero(lw *L, uint32_t t, uint64_t img, uint64_t rows, uint64_t row)
{
    uint64_t rwh = ts_geom_cdiv(rows, L->workers);
    size_t entry = LWT(t).wrk.n;
    lwi_emit_start_row(L, t, (uint32_t)rows, (uint32_t)rwh);
    W(t, MULI, RM(3), RM(1), (int32_t)row);
    W(t, SETZI, RM(4), (int32_t)img, 0);
    W(t, ADD, RM(3), RM(3), RM(4));
    W(t, SETZI, RA(0), 0, 0);
    W(t, SETZI, RM(5), (int32_t)(rwh * row / 4), 0);
    W(t, RPT, RM(5), 1, 0);
    W(t, ST32STEP, RA(0), RM(3), 4);
    W(t, EXIT, 0, 0, 0);
    lwi_run_all(L, t, entry);
}

/* A channel-last image: zeroed (rows over the workers), then the gathered channels copied in,
 * each at its place in every pixel (channels over the workers, f16: channel pairs, both rounded
 * into one word of the pixel; two runs, since the last workers' blocks overlap). */
static void conv_image_hwc(lw *L, const cv_shape *s, const cv_plan *pn, const cv_tile *c, uint32_t t, uint64_t src)
{
    const uint64_t Wd = s->Wd, NB = pn->NB, WIm = pn->WIm, Cs = pn->Cs, nbt = c->nbt;
    conv_zero(L, t, pn->img, pn->HI, WIm * Cs * pn->eb);
    if (!nbt) /* a row block wholly in the padding reads no image row */
        return;
    size_t entry = LWT(t).wrk.n;
    uint64_t at = pn->img + ((uint64_t)((int64_t)c->ya - c->iylo) * WIm + s->pl) * Cs * pn->eb;
    if (pn->half) {
        uint64_t rwp = ts_geom_cdiv(c->cp / 2, L->workers), cs = NB * Wd * 4;
        lwi_emit_start_row(L, t, (uint32_t)(c->cp / 2), (uint32_t)rwp);
        W(t, MULI, RM(2), RM(1), (int32_t)(2 * cs));
        W(t, SETZI, RM(3), (int32_t)src, 0);
        W(t, ADD, RM(2), RM(2), RM(3));
        W(t, SHLI, RM(3), RM(1), 2);
        W(t, SETZI, RM(4), (int32_t)at, 0);
        W(t, ADD, RM(3), RM(3), RM(4));
        W(t, SETZI, RM(5), (int32_t)rwp - 1, 0);
        W(t, SETZI, RM(8), (int32_t)Wd, 0);
        size_t ch = W(t, SETZI, RM(6), (int32_t)nbt - 1, 0);
        size_t row = W(t, RPT, RM(8), 4, 0);
        W(t, LD32, RA(1), RM(2), (int32_t)cs);
        W(t, LD32STEP, RA(0), RM(2), 4);
        W(t, F32V2TOF16, RA(0), RA(0), 0);
        W(t, ST32STEP, RA(0), RM(3), (int32_t)(Cs * 2));
        W(t, ADDI, RM(3), RM(3), (int32_t)((WIm - Wd) * Cs * 2));
        W(t, BRNZDEC, RM(6), (int32_t)row, 0);
        W(t, ADDI, RM(2), RM(2), (int32_t)((NB - nbt) * Wd * 4 + cs));
        W(t, ADDI, RM(3), RM(3), (int32_t)(4 - (int64_t)(nbt * WIm * Cs * 2)));
        W(t, BRNZDEC, RM(5), (int32_t)ch, 0);
        W(t, EXIT, 0, 0, 0);
        lwi_run_all(L, t, entry);
        return;
    }
    uint64_t rwc = ts_geom_cdiv(c->cp, L->workers);
    lwi_emit_start_row(L, t, (uint32_t)c->cp, (uint32_t)rwc);
    W(t, MULI, RM(2), RM(1), (int32_t)(NB * Wd * 4));
    W(t, SETZI, RM(3), (int32_t)src, 0);
    W(t, ADD, RM(2), RM(2), RM(3));
    W(t, SHLI, RM(3), RM(1), 2);
    W(t, SETZI, RM(4), (int32_t)at, 0);
    W(t, ADD, RM(3), RM(3), RM(4));
    W(t, SETZI, RM(5), (int32_t)rwc - 1, 0);
    W(t, SETZI, RM(8), (int32_t)Wd, 0);
    size_t ch = W(t, SETZI, RM(6), (int32_t)nbt - 1, 0);
    size_t row = W(t, RPT, RM(8), 2, 0);
    W(t, LD32STEP, RA(0), RM(2), 4);
    W(t, ST32STEP, RA(0), RM(3), (int32_t)(Cs * 4));
    W(t, ADDI, RM(3), RM(3), (int32_t)((WIm - Wd) * Cs * 4));
    W(t, BRNZDEC, RM(6), (int32_t)row, 0);
    W(t, ADDI, RM(2), RM(2), (int32_t)((NB - nbt) * Wd * 4));
    W(t, ADDI, RM(3), RM(3), (int32_t)(4 - (int64_t)(nbt * WIm * Cs * 4)));
    W(t, BRNZDEC, RM(5), (int32_t)ch, 0);
    W(t, EXIT, 0, 0, 0);
    lwi_run_all(L, t, entry);
}

/* A padded image, channel-major: zeroed (its padding), then the rows copied in (channels over the
 * workers; two runs, since the last workers' channel blocks overlap). */
static void conv_image_pad(lw *L, const cv_shape *s, const cv_plan *pn, const cv_tile *c, uint32_t t, uint64_t src)
{
    const uint64_t Wd = s->Wd, NB = pn->NB, HI = pn->HI, WIm = pn->WIm, nbt = c->nbt;
    uint64_t rwc = ts_geom_cdiv(c->cp, L->workers);
    conv_zero(L, t, pn->img, c->cp, HI * WIm * 4);
    if (!nbt) /* a row block wholly in the padding reads no image row */
        return;
    size_t entry = LWT(t).wrk.n;
    lwi_emit_start_row(L, t, (uint32_t)c->cp, (uint32_t)rwc);
    W(t, MULI, RM(2), RM(1), (int32_t)(NB * Wd * 4));
    W(t, SETZI, RM(3), (int32_t)src, 0);
    W(t, ADD, RM(2), RM(2), RM(3));
    W(t, MULI, RM(3), RM(1), (int32_t)(HI * WIm * 4));
    W(t, SETZI, RM(4), (int32_t)(pn->img + ((uint64_t)((int64_t)c->ya - c->iylo) * WIm + s->pl) * 4), 0);
    W(t, ADD, RM(3), RM(3), RM(4));
    W(t, SETZI, RM(5), (int32_t)rwc - 1, 0);
    W(t, SETZI, RM(8), (int32_t)Wd, 0);
    size_t ch = W(t, SETZI, RM(6), (int32_t)nbt - 1, 0);
    size_t row = W(t, RPT, RM(8), 2, 0);
    W(t, LD32STEP, RA(0), RM(2), 4);
    W(t, ST32STEP, RA(0), RM(3), 4);
    W(t, ADDI, RM(3), RM(3), (int32_t)((WIm - Wd) * 4));
    W(t, BRNZDEC, RM(6), (int32_t)row, 0);
    W(t, ADDI, RM(2), RM(2), (int32_t)((NB - nbt) * Wd * 4));
    W(t, ADDI, RM(3), RM(3), (int32_t)((HI - nbt) * WIm * 4));
    W(t, BRNZDEC, RM(5), (int32_t)ch, 0);
    W(t, EXIT, 0, 0, 0);
    lwi_run_all(L, t, entry);
}

/* A worker's pointers for its first pixel (start row in $m1 from lwi_emit_start_row): $m10 into the
 * table bt of pixel offsets, $m3 into the output out (a word per pixel); $m1 = rw - 1 pixels to go
 * after it, $m11 = r11 (the AMP step count the kernel reads). */
static void emit_pixel_ptrs(lw *L, uint32_t t, uint64_t bt, uint64_t out, uint32_t rw, int32_t r11)
{
    W(t, SHLI, RM(10), RM(1), 2);
    W(t, SETZI, RM(3), (int32_t)bt, 0);
    W(t, ADD, RM(10), RM(10), RM(3));
    W(t, SHLI, RM(3), RM(1), 2);
    W(t, SETZI, RM(4), (int32_t)out, 0);
    W(t, ADD, RM(3), RM(3), RM(4));
    W(t, SETZI, RM(1), (int32_t)rw - 1, 0);
    W(t, SETZI, RM(11), r11, 0);
}

/* The end of a worker's pixel loop: the pixel's AMP groups from the weights at waddr, the output
 * pointer to the next pixel, back to pc `pixel` while pixels are left, exit. */
static void emit_pixel_groups(lw *L, uint32_t t, const mm_args *m, uint64_t waddr, size_t pixel)
{
    W(t, SETZI, RM(5), (int32_t)waddr, 0);
    W(t, SETZI, RM(8), (int32_t)m->bias, 0);
    W(t, MOV, RM(6), RM(3), 0);
    lwi_emit_amp_groups(L, t, m);
    W(t, ADDI, RM(3), RM(3), 4);
    W(t, BRNZDEC, RM(1), (int32_t)pixel, 0);
    W(t, EXIT, 0, 0, 0);
}

/* The pixel's im2col row at $m14 from its base $m9 in the image: channel by channel, kernel row by
 * row (2 issues per element; f16: channel pairs rounded into one word, 4 issues per pair, then zero
 * words to a whole step), and the pad position of an odd row zero (its weight is zero too). */
static void emit_im2col_row(lw *L, const cv_shape *s, const cv_plan *pn, const cv_tile *c, uint32_t t)
{
    const uint64_t kh = s->kh, kw = s->kw, HI = pn->HI, WIm = pn->WIm, cp = c->cp;
    const uint64_t Kpad = 2 * c->kp; /* 32-bit words of a row */
    if (pn->half) {
        W(t, SETZI, RM(13), (int32_t)(cp / 2), 0);
        W(t, RPT, RM(13), 4, 0);
        W(t, LD32, RA(1), RM(9), (int32_t)(HI * WIm * 4));
        W(t, LD32STEP, RA(0), RM(9), (int32_t)(2 * HI * WIm * 4));
        W(t, F32V2TOF16, RA(0), RA(0), 0);
        W(t, ST32STEP, RA(0), RM(14), 4);
        if (cp / 2 < Kpad) /* at most one word: kp = ceil(cp / 4) steps of two words */
            W(t, SETZI, RA(1), 0, 0);
        for (uint64_t z = cp / 2; z < Kpad; z++)
            W(t, ST32STEP, RA(1), RM(14), 4);
    } else if (kh * kw == 1) {
        W(t, SETZI, RM(13), (int32_t)cp, 0);
        W(t, RPT, RM(13), 2, 0);
        W(t, LD32STEP, RA(0), RM(9), (int32_t)(HI * WIm * 4));
        W(t, ST32STEP, RA(0), RM(14), 4);
    } else {
        W(t, SETZI, RM(7), (int32_t)cp - 1, 0);
        W(t, SETZI, RM(13), (int32_t)kw, 0);
        size_t ch = W(t, MOV, RM(4), RM(9), 0);
        W(t, SETZI, RM(8), (int32_t)kh - 1, 0);
        size_t kr = W(t, MOV, RM(12), RM(4), 0);
        W(t, RPT, RM(13), 2, 0);
        W(t, LD32STEP, RA(0), RM(12), 4);
        W(t, ST32STEP, RA(0), RM(14), 4);
        W(t, ADDI, RM(4), RM(4), (int32_t)(WIm * 4));
        W(t, BRNZDEC, RM(8), (int32_t)kr, 0);
        W(t, ADDI, RM(9), RM(9), (int32_t)(HI * WIm * 4));
        W(t, BRNZDEC, RM(7), (int32_t)ch, 0);
    }
    if (c->K % 2)
        W(t, ST32, RA(1), RM(14), 0);
}

/* The tile's pixels over its workers, each multiplied on the AMP with the tile's coefficient
 * blocks: read from the channel-last image by the AMP loop itself, or from the pixel's im2col row
 * in the worker's buffer. im is the image (or the gathered input) the kernel reads. */
static void conv_pixels(lw *L, const cv_shape *s, const cv_plan *pn, const cv_tile *c, uint32_t t, uint64_t im)
{
    const uint32_t U = pn->U;
    uint32_t rw = (uint32_t)ts_geom_cdiv(c->npx, L->workers);
    mm_args m = {.rows = (uint32_t)c->npx, .nq = (uint32_t)(c->q1 - c->q0), .kp = (uint32_t)c->kp,
                 .nq_real = (c->q1 * U < s->M ? c->q1 * U : s->M) - c->q0 * U, .units = U, .half = pn->half,
                 .a_stride = 0, .w = pn->waddr, .bias = c->bias ? pn->baddr : 0, .out = pn->out, .out_row = 4,
                 .out_q = (int64_t)(U * pn->pbk * 4), .out_u = (int64_t)(pn->pbk * 4)};
    size_t entry = LWT(t).wrk.n;
    if (pn->hwc) {
        m.taps = (uint32_t)s->kh;
        m.tap_skip = (int32_t)((pn->WIm - s->kw) * pn->Cs * pn->eb);
        lwi_emit_start_row(L, t, (uint32_t)c->npx, rw);
        emit_pixel_ptrs(L, t, pn->bt, pn->out, rw, (int32_t)(s->kw * pn->Cs / pn->per));
        size_t hpix = W(t, LD32STEP, RM(9), RM(10), 4);
        W(t, ADD, RM(2), RM(9), RM(0));
        emit_pixel_groups(L, t, &m, pn->waddr, hpix);
        lwi_run_all_m0(L, t, entry, im);
        return;
    }
    lwi_emit_start_row(L, t, (uint32_t)c->npx, rw);
    W(t, GET, RM(2), TS_IPU_CSR_WORKER, 0);
    W(t, MULI, RM(2), RM(2), (int32_t)(2 * c->kp * 4));
    W(t, SETZI, RM(3), (int32_t)pn->colbuf, 0);
    W(t, ADD, RM(2), RM(2), RM(3));
    emit_pixel_ptrs(L, t, pn->bt, pn->out, rw, (int32_t)c->kp);
    W(t, SETZI, RA(1), 0, 0);
    size_t pix = W(t, LD32STEP, RM(9), RM(10), 4);
    W(t, ADD, RM(9), RM(9), RM(0));
    W(t, MOV, RM(14), RM(2), 0);
    emit_im2col_row(L, s, pn, c, t);
    emit_pixel_groups(L, t, &m, pn->waddr, pix);
    lwi_run_all_m0(L, t, entry, im);
}

/* Every tile: its weights, its image (channel-last, or padded), its pixels. */
static ts_status conv_tiles(lw *L, const ts_graph_node *n, const cv_shape *s, const cv_plan *pn, const lw_scr *sc)
{
    float *w = ts_calloc(pn->wbytes / 4 + pn->bbytes / 4, 4);
    if (!w)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory lowering '%s'", n->name);
    ts_status rc = TS_OK;
    /* the weights are built once for consecutive tiles of the same channel group and part (the
     * row blocks, innermost), and not at all in the first pass, which places no data */
    const bool place = (!s->wkeep || !s->wkeep->set) && !L->measure;
    uint64_t wgc = UINT64_MAX, wgk = UINT64_MAX;
    for (uint64_t i = 0; i < pn->nimg * pn->tn && rc == TS_OK; i++) {
        uint32_t tl = (uint32_t)(i % pn->tn), t = conv_gtile(pn, i / pn->tn, tl);
        cv_tile c = conv_tile(s, pn, sc, tl, t);
        if (place && (c.gc != wgc || c.gk != wgk)) {
            conv_weights_build(s, pn, &c, w);
            wgc = c.gc, wgk = c.gk;
        }
        if (place && (rc = conv_weights(L, pn, &c, t, w)) != TS_OK)
            break;
        if (pn->hwc)
            conv_image_hwc(L, s, pn, &c, t, sc->where[t]);
        else if (pn->pad)
            conv_image_pad(L, s, pn, &c, t, sc->where[t]);
        conv_pixels(L, s, pn, &c, t, pn->pad || pn->hwc ? pn->img : sc->where[t]);
    }
    ts_free(w);
    return rc;
}

/* ---- the partial sums ---- */

/* The partial sums over the input channels added in a tree, one superstep per level; a receiver
 * writes cur + received into the other buffer (so workers whose blocks overlap write the same
 * values). The buffer that holds the sums at the end. */
static uint64_t conv_reduce(lw *L, const cv_plan *pn)
{
    const uint64_t nks = pn->nks, out = pn->out, alt = pn->alt;
    const uint32_t tout = pn->tout;
    uint64_t fin = out;
    for (uint64_t d = 1; d < nks; d *= 2) {
        for (uint64_t i = 0; i < pn->nimg * tout; i++) {
            uint32_t t = (uint32_t)(i % tout);
            uint64_t gc = t / pn->nrb, q0 = gc * pn->qpt, q1 = q0 + pn->qpt < pn->nq ? q0 + pn->qpt : pn->nq;
            uint64_t nw = (q1 - q0) * pn->U * pn->pbk;
            /* the tile's current buffer: out after an even number of additions */
            for (uint64_t gk = 0; gk + d < nks; gk += 2 * d) {
                uint32_t tr = conv_gtile(pn, i / tout, gk * tout + t), ts_ = conv_gtile(pn, i / tout, (gk + d) * tout + t);
                uint64_t adds_r = 0, adds_s = 0;
                for (uint64_t e = 1; e < d; e *= 2) {
                    adds_r += gk + e < nks;
                    adds_s += gk + d + e < nks;
                }
                uint64_t cur = adds_r % 2 ? alt : out, nxt = adds_r % 2 ? out : alt;
                uint64_t scur = adds_s % 2 ? alt : out;
                lwi_recv(L, tr, pn->rbuf, ts_, nw);
                lwi_send(L, ts_, scur, tr, nw);
                S(tr, RXWAIT, 0, 0, 0);
                uint32_t rw = (uint32_t)ts_geom_cdiv(nw, L->workers);
                size_t entry = LWT(tr).wrk.n;
                lwi_emit_start_row(L, tr, (uint32_t)nw, rw);
                W(tr, SHLI, RM(1), RM(1), 2);
                W(tr, SETZI, RM(2), (int32_t)cur, 0);
                W(tr, ADD, RM(2), RM(2), RM(1));
                W(tr, SETZI, RM(5), (int32_t)pn->rbuf, 0);
                W(tr, ADD, RM(5), RM(5), RM(1));
                W(tr, SETZI, RM(3), (int32_t)nxt, 0);
                W(tr, ADD, RM(3), RM(3), RM(1));
                W(tr, SETZI, RM(4), (int32_t)rw, 0);
                W(tr, RPT, RM(4), 4, 0);
                W(tr, LD32STEP, RA(0), RM(2), 4);
                W(tr, LD32STEP, RA(1), RM(5), 4);
                W(tr, F32ADD, RA(0), RA(0), RA(1));
                W(tr, ST32STEP, RA(0), RM(3), 4);
                W(tr, EXIT, 0, 0, 0);
                lwi_run_all(L, tr, entry);
                if (gk == 0)
                    fin = nxt;
            }
        }
        lwi_sync_all(L);
    }
    return fin;
}

ts_status lwi_lower_conv_shape(lw *L, const ts_graph_node *n, lw_scr *sc, const cv_shape *s)
{
    cv_plan pn = {.nimg = s->N > 1 ? s->N : 1};
    conv_terms(L, s, &pn);
    conv_choose(L, s, &L->pl[n->in[0]], &pn);
    if (!pn.qpt) /* a batch whose channels are no whole AMP groups an image */
        return lwi_unsupported(L, n, "a batch whose output channels are not a multiple of the AMP's units");
    conv_geometry(s, &pn);
    conv_ranges(s, &pn, sc);
    uint32_t tall = (uint32_t)(pn.nimg * pn.tn);
    if (!s->wkeep) /* a batch's images one after another keep tile 0 */
        lwi_place_op(L, tall, true);
    ts_status rc = lwi_gather(L, n->in[0], tall, sc->lo, sc->hi, sc->nr, s->H * s->Wd, pn.NB * s->Wd, false,
                              sc->where);
    if (rc != TS_OK)
        return rc;
    conv_alloc(L, s, &pn);
    if ((rc = conv_bases(L, n, s, &pn)) != TS_OK)
        return rc;
    if ((rc = conv_tiles(L, n, s, &pn, sc)) != TS_OK)
        return rc;
    if (s->wkeep && !s->wkeep->set)
        *s->wkeep = (cv_wkeep){true, pn.waddr, pn.baddr};
    lwi_use_tiles(L, tall);
    lwi_sync_all(L);
    uint64_t fin = conv_reduce(L, &pn);
    if (pn.alt)
        lwi_release(L, fin == pn.out ? pn.alt : pn.out);
    lw_place *o = &L->pl[n->out[0]];
    *o = (lw_place){.ntiles = (uint32_t)(pn.nimg * pn.tout), .t0 = L->base, .chunk = pn.qpt * pn.U * pn.pbk,
                    .addr = fin, .es = 4};
    if (pn.nrb > 1) {
        o->inner = s->Ho * s->Wo;
        o->cb = pn.qpt * pn.U;
        o->pb = pn.pbk;
        o->nrb = (uint32_t)pn.nrb;
    }
    return TS_OK;
}

ts_status lwi_lower_conv(lw *L, const ts_graph_node *n, lw_scr *sc)
{
    const ts_graph *g = L->g;
    const ts_graph_tensor *X = ts_graph_get_tensor(g, n->in[0]);
    const ts_graph_tensor *Wt = ts_graph_get_tensor(g, n->in[1]);
    const ts_graph_attrs *at = &n->attrs;
    ts_geom_window w;
    if (!ts_geom_window_of(g, n, &w))
        return lwi_unsupported(L, n, "an input, output or weight that is not 4-d");
    if (Wt->kind == TS_TENSOR_ACTIVATION || Wt->kind == TS_TENSOR_INPUT)
        return lwi_unsupported(L, n, "weights computed at run time");
    ts_status rc = lwi_need_placed(L, n, n->in[0]);
    if (rc != TS_OK)
        return rc;
    /* on the workers: groups, dilations, and a batch the AMP kernel cannot split by images */
    if (at->group != 1 || at->dilations[0] != 1 || at->dilations[1] != 1 || (uint64_t)w.N > L->T ||
        (w.N > 1 && ((uint64_t)w.M % L->units || (L->units16 && (uint64_t)w.M % L->units16))))
        return lwi_lower_dconv(L, n, sc, &w);
    cv_shape s = {.C = (uint64_t)w.C, .H = (uint64_t)w.H, .Wd = (uint64_t)w.W, .M = (uint64_t)w.M,
                  .kh = (uint64_t)w.kh, .kw = (uint64_t)w.kw, .sh = (uint64_t)w.sh, .sw = (uint64_t)w.sw,
                  .pt = (uint64_t)w.pt, .pl = (uint64_t)w.pl, .pbot = (uint64_t)w.pb, .pr = (uint64_t)w.pr,
                  .Ho = (uint64_t)w.Ho, .Wo = (uint64_t)w.Wo, .Wt = Wt, .wid = n->in[1],
                  .Bt = n->nin > 2 ? ts_graph_get_tensor(g, n->in[2]) : NULL, .bid = n->nin > 2 ? n->in[2] : -1,
                  .half = X->dtype == TS_DT_F16, .N = (uint64_t)w.N};
    if (w.N > 1 && L->mmshare > 4) /* the images side by side did not fit: one after another */
        return lwi_lower_conv_images(L, n, sc, &s);
    return lwi_lower_conv_shape(L, n, sc, &s);
}
