/* workloads/ipu/lower_ipu_pool.c — MaxPool, AveragePool and GlobalAveragePool, planner (a).
 *
 * Over (n, c) planes, which are contiguous in NCHW: planes partitioned over tiles and, within a
 * tile, over its workers. MaxPool and AveragePool copy each plane into a padded image (filled with
 * -FLT_MAX, or 0) large enough for the last window, and read each window by kernel rows; an average
 * is scaled by 1 / the number of positions its window counts (a table). With one plane a tile the
 * image is filled first (a superstep of its own) and the plane's rows are gathered straight into
 * it; otherwise the planes are gathered, then copied in plane by plane.
 *
 * A MaxPool whose input is blocked in whole image rows (a Conv's output: blocks of channels by
 * rows, lw_place.inner) is pooled where those blocks lie instead (pool_blocked): a tile takes a
 * block of output rows of some of a block's channels, gathers the input rows its windows read (its
 * rows and the halo rows of the blocks beside), a row of all its channels a round, and its workers
 * take its channels: per output row the kernel rows' maximum column by column into a row padded
 * with -FLT_MAX, then the windows along it. The output keeps the blocked layout.
 */
#include <assert.h>
#include <float.h>

#include "core/alloc.h"
#include "workloads/ipu/lower_ipu_int.h"

/* A pool's shape and plan. */
typedef struct pool_plan {
    bool gap, avg, direct;   /* GlobalAveragePool; AveragePool; planes gathered straight into the image */
    uint64_t H, Wd, HW;      /* input plane */
    uint64_t Ho, Wo, P;      /* output plane */
    uint64_t R, rp;          /* planes, planes per tile */
    uint32_t tn;             /* tiles */
    uint64_t kh, kw, sy, sx; /* window and strides */
    uint64_t pt, pl;         /* padding before the first row and column */
    uint64_t HP, WP;         /* the padded image */
    uint64_t img, rtab, out;
} pool_plan;

/* The shape of window w, the partition and the padded image, large enough for the last window
 * (ceil_mode). */
static void pool_shape(const lw *L, const ts_graph_node *n, const ts_geom_window *w, pool_plan *pp)
{
    bool gap = n->op == TS_OP_GLOBALAVGPOOL;
    *pp = (pool_plan){.gap = gap, .avg = n->op == TS_OP_AVGPOOL};
    pp->H = (uint64_t)w->H, pp->Wd = (uint64_t)w->W, pp->HW = pp->H * pp->Wd;
    pp->Ho = (uint64_t)w->Ho, pp->Wo = (uint64_t)w->Wo, pp->P = pp->Ho * pp->Wo;
    pp->R = (uint64_t)(w->N * w->C);
    pp->kh = (uint64_t)w->kh, pp->kw = (uint64_t)w->kw;
    pp->rp = ts_geom_cdiv(pp->R, L->T);
    pp->tn = (uint32_t)ts_geom_cdiv(pp->R, pp->rp);
    pp->pt = (uint64_t)w->pt, pp->pl = (uint64_t)w->pl;
    pp->HP = pp->H + (uint64_t)w->pt + (uint64_t)w->pb;
    pp->WP = pp->Wd + (uint64_t)w->pl + (uint64_t)w->pr;
    pp->sy = (uint64_t)w->sh, pp->sx = (uint64_t)w->sw;
    if ((pp->Ho - 1) * pp->sy + pp->kh > pp->HP)
        pp->HP = (pp->Ho - 1) * pp->sy + pp->kh;
    if ((pp->Wo - 1) * pp->sx + pp->kw > pp->WP)
        pp->WP = (pp->Wo - 1) * pp->sx + pp->kw;
    pp->direct = !gap && pp->rp == 1;
}

/* Tile t's workers fill the padded image with -FLT_MAX (MaxPool) or 0 (rows over the workers). */
static void pool_fill(lw *L, uint32_t t, const pool_plan *pp)
{
    uint32_t rwh = (uint32_t)ts_geom_cdiv(pp->HP, L->workers);
    size_t entry = LWT(t).wrk.n;
    lwi_emit_start_row(L, t, (uint32_t)pp->HP, rwh);
    W(t, MULI, RM(3), RM(1), (int32_t)(pp->WP * 4));
    W(t, SETZI, RM(4), (int32_t)pp->img, 0);
    W(t, ADD, RM(3), RM(3), RM(4));
    W(t, LDCONST, RA(0), lwi_fbits(pp->avg ? 0.0f : -FLT_MAX), 0);
    W(t, SETZI, RM(5), (int32_t)(rwh * pp->WP), 0);
    W(t, RPT, RM(5), 1, 0);
    W(t, ST32STEP, RA(0), RM(3), 4);
    W(t, EXIT, 0, 0, 0);
    lwi_run_all(L, t, entry);
}

/* The input's planes to their tiles: with one plane a tile, the images filled (a superstep) and
 * each plane's rows gathered into its image; otherwise the planes gathered whole. */
static ts_status pool_gather(lw *L, const ts_graph_node *n, lw_scr *sc, const pool_plan *pp)
{
    if (!pp->direct)
        return lwi_gather(L, n->in[0], pp->tn, sc->lo, sc->hi, NULL, 0, 0, false, sc->where);
    for (uint32_t t = 0; t < pp->tn; t++)
        pool_fill(L, t, pp);
    lwi_use_tiles(L, pp->tn);
    lwi_sync_all(L);
    for (uint32_t t = 0; t < pp->tn; t++) {
        sc->hi[t] = sc->lo[t] + pp->Wd;
        sc->nr[t] = (uint32_t)pp->H;
    }
    L->into = pp->img + (pp->pt * pp->WP + pp->pl) * 4;
    ts_status rc = lwi_gather(L, n->in[0], pp->tn, sc->lo, sc->hi, sc->nr, pp->Wd, pp->WP, true, sc->where);
    L->into = 0;
    return rc;
}

/* AveragePool: the table of 1 / the number of positions each window of w counts, on every tile. */
static ts_status pool_avg_table(lw *L, const ts_graph_node *n, const ts_geom_window *w, pool_plan *pp)
{
    float *rv = ts_calloc(pp->P, 4);
    if (!rv)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory lowering '%s'", n->name);
    for (int64_t oy = 0; oy < w->Ho; oy++)
        for (int64_t ox = 0; ox < w->Wo; ox++) {
            uint64_t cnt = 0;
            for (int64_t ky = 0; ky < w->kh; ky++)
                for (int64_t kx = 0; kx < w->kw; kx++) {
                    int64_t iy, ix;
                    bool in = ts_geom_window_tap(w, oy, ox, ky, kx, &iy, &ix);
                    if (n->attrs.count_include_pad ? iy < w->H + w->pb && ix < w->W + w->pr : in)
                        cnt++;
                }
            rv[oy * w->Wo + ox] = cnt ? 1.0f / (float)cnt : 0.0f;
        }
    ts_status rc = TS_OK;
    pp->rtab = lwi_stable(L, rv, pp->P * 4, pp->tn, &rc);
    ts_free(rv);
    return rc;
}

/* GlobalAveragePool on tile t: its planes at `in` over the workers, each summed and scaled. */
static void pool_gap(lw *L, uint32_t t, const pool_plan *pp, uint32_t planes, uint64_t in)
{
    uint32_t rw = (uint32_t)ts_geom_cdiv(planes, L->workers);
    size_t entry = LWT(t).wrk.n;
    lwi_emit_start_row(L, t, planes, rw);
    W(t, MULI, RM(2), RM(1), (int32_t)(pp->HW * 4));
    W(t, SETZI, RM(3), (int32_t)in, 0);
    W(t, ADD, RM(2), RM(2), RM(3));
    W(t, MULI, RM(4), RM(1), (int32_t)(pp->P * 4));
    W(t, SETZI, RM(3), (int32_t)pp->out, 0);
    W(t, ADD, RM(4), RM(4), RM(3));
    W(t, SETZI, RM(1), (int32_t)rw - 1, 0);
    W(t, SETZI, RM(9), (int32_t)pp->HW, 0);
    W(t, LDCONST, RA(2), lwi_fbits((float)(1.0 / (double)pp->HW)), 0);
    size_t plane = W(t, SETZI, RA(0), 0, 0);
    W(t, RPT, RM(9), 2, 0);
    W(t, LD32STEP, RA(1), RM(2), 4);
    W(t, F32ADD, RA(0), RA(0), RA(1));
    W(t, F32MUL, RA(0), RA(0), RA(2));
    W(t, ST32STEP, RA(0), RM(4), 4);
    W(t, BRNZDEC, RM(1), (int32_t)plane, 0);
    W(t, EXIT, 0, 0, 0);
    lwi_run_all(L, t, entry);
}

/* A plane at `in` copied into the padded image, rows over the workers. */
static void pool_copy_plane(lw *L, uint32_t t, const pool_plan *pp, uint64_t in)
{
    uint32_t rwr = (uint32_t)ts_geom_cdiv(pp->H, L->workers);
    size_t entry = LWT(t).wrk.n;
    lwi_emit_start_row(L, t, (uint32_t)pp->H, rwr);
    W(t, MULI, RM(2), RM(1), (int32_t)(pp->Wd * 4));
    W(t, SETZI, RM(3), (int32_t)in, 0);
    W(t, ADD, RM(2), RM(2), RM(3));
    W(t, MULI, RM(3), RM(1), (int32_t)(pp->WP * 4));
    W(t, SETZI, RM(4), (int32_t)(pp->img + (pp->pt * pp->WP + pp->pl) * 4), 0);
    W(t, ADD, RM(3), RM(3), RM(4));
    W(t, SETZI, RM(1), (int32_t)rwr - 1, 0);
    W(t, SETZI, RM(8), (int32_t)pp->Wd, 0);
    size_t row = W(t, RPT, RM(8), 2, 0);
    W(t, LD32STEP, RA(0), RM(2), 4);
    W(t, ST32STEP, RA(0), RM(3), 4);
    W(t, ADDI, RM(3), RM(3), (int32_t)((pp->WP - pp->Wd) * 4));
    W(t, BRNZDEC, RM(1), (int32_t)row, 0);
    W(t, EXIT, 0, 0, 0);
    lwi_run_all(L, t, entry);
}

/* The windows of the image into the output plane at out: output rows over the workers, each window
 * by kernel rows, its maximum (or its sum scaled by the table). */
static void pool_windows(lw *L, uint32_t t, const pool_plan *pp, uint64_t out)
{
    const bool avg = pp->avg;
    uint32_t rwo = (uint32_t)ts_geom_cdiv(pp->Ho, L->workers);
    size_t entry = LWT(t).wrk.n;
    lwi_emit_start_row(L, t, (uint32_t)pp->Ho, rwo);
    W(t, MULI, RM(2), RM(1), (int32_t)(pp->sy * pp->WP * 4));
    W(t, SETZI, RM(3), (int32_t)pp->img, 0);
    W(t, ADD, RM(2), RM(2), RM(3));
    W(t, MULI, RM(3), RM(1), (int32_t)(pp->Wo * 4));
    W(t, SETZI, RM(4), (int32_t)out, 0);
    W(t, ADD, RM(3), RM(3), RM(4));
    if (avg) {
        W(t, MULI, RM(10), RM(1), (int32_t)(pp->Wo * 4));
        W(t, SETZI, RM(4), (int32_t)pp->rtab, 0);
        W(t, ADD, RM(10), RM(10), RM(4));
    }
    W(t, SETZI, RM(1), (int32_t)rwo - 1, 0);
    W(t, SETZI, RM(13), (int32_t)pp->kw, 0);
    size_t orow = W(t, MOV, RM(9), RM(2), 0);
    W(t, SETZI, RM(6), (int32_t)pp->Wo - 1, 0);
    size_t pix = W(t, LDCONST, RA(0), lwi_fbits(avg ? 0.0f : -FLT_MAX), 0);
    W(t, MOV, RM(4), RM(9), 0);
    W(t, SETZI, RM(8), (int32_t)pp->kh - 1, 0);
    size_t kr = W(t, MOV, RM(12), RM(4), 0);
    W(t, RPT, RM(13), 2, 0);
    W(t, LD32STEP, RA(1), RM(12), 4);
    if (avg)
        W(t, F32ADD, RA(0), RA(0), RA(1));
    else
        W(t, F32MAX, RA(0), RA(0), RA(1));
    W(t, ADDI, RM(4), RM(4), (int32_t)(pp->WP * 4));
    W(t, BRNZDEC, RM(8), (int32_t)kr, 0);
    if (avg) {
        W(t, LD32STEP, RA(2), RM(10), 4);
        W(t, F32MUL, RA(0), RA(0), RA(2));
    }
    W(t, ST32STEP, RA(0), RM(3), 4);
    W(t, ADDI, RM(9), RM(9), (int32_t)(pp->sx * 4));
    W(t, BRNZDEC, RM(6), (int32_t)pix, 0);
    W(t, ADDI, RM(2), RM(2), (int32_t)(pp->sy * pp->WP * 4));
    W(t, BRNZDEC, RM(1), (int32_t)orow, 0);
    W(t, EXIT, 0, 0, 0);
    lwi_run_all(L, t, entry);
}

/* MaxPool and AveragePool on tile t: the image filled once (unless filled before the gather), then
 * per plane its rows copied in (unless gathered there) and its windows. */
static void pool_planes(lw *L, uint32_t t, const pool_plan *pp, uint32_t planes, uint64_t in)
{
    if (!pp->direct)
        pool_fill(L, t, pp);
    for (uint32_t i = 0; i < planes; i++) {
        if (!pp->direct)
            pool_copy_plane(L, t, pp, in + i * pp->HW * 4);
        pool_windows(L, t, pp, pp->out + i * pp->P * 4);
    }
}

/* A blocked MaxPool's partition: output blocks of ro rows (nrbo an image plane) by cbo channels of
 * the batch's planes, tn = ncbo * nrbo tiles, tile (c / cbo) * nrbo + (output row / ro); band rows
 * nb = (ro - 1) sy + kh, band row k of a block being input row o0 sy - pt + k. */
typedef struct pool_blk {
    uint64_t W, inner;       /* input row, plane */
    uint64_t ro, nrbo, cbo, ncbo;
    uint64_t nb;             /* band rows */
    uint32_t tn;
    uint64_t band, row, out; /* the band (nb rows of cbo channels), a padded row per worker, output */
} pool_blk;

/* The blocked partition of MaxPool w on input placement P, false where it does not apply (not
 * MaxPool, not blocked in whole rows of f32 words, a window below the image, too many tiles or
 * output rows a block). */
static bool pool_blocked_shape(const lw *L, const ts_graph_node *n, const ts_geom_window *w, const lw_place *P,
                               pool_blk *b)
{
    uint64_t H = (uint64_t)w->H, Wd = (uint64_t)w->W, Ho = (uint64_t)w->Ho, R = (uint64_t)(w->N * w->C);
    if (n->op != TS_OP_MAXPOOL || !P->inner || P->es != 4 || P->inner != H * Wd || P->pb % Wd || !P->nrb ||
        w->pt >= w->kh || w->pb >= w->kh || (Ho - 1) * (uint64_t)w->sh >= H + (uint64_t)w->pt)
        return false; /* (every window reads a row of the image) */
    *b = (pool_blk){.W = Wd, .inner = H * Wd};
    b->ro = ts_geom_cdiv(Ho, P->nrb);
    b->nrbo = ts_geom_cdiv(Ho, b->ro);
    b->nb = (b->ro - 1) * (uint64_t)w->sh + (uint64_t)w->kh;
    if (b->ro > 8) /* the rows are emitted one by one */
        return false;
    /* the input's channel blocks split as far as the tiles go */
    for (uint64_t q = P->cb; q >= 1; q--)
        if (P->cb % q == 0 && ts_geom_cdiv(R, P->cb / q) * b->nrbo <= L->T) {
            b->cbo = P->cb / q;
            break;
        }
    if (!b->cbo)
        return false;
    b->ncbo = ts_geom_cdiv(R, b->cbo);
    b->tn = (uint32_t)(b->ncbo * b->nrbo);
    return true;
}

/* Tile t's ranges of band row k: input row o0 sy - pt + k of its channels (empty outside the
 * image). */
static void pool_band_ranges(const pool_plan *pp, const pool_blk *b, uint64_t k, lw_scr *sc)
{
    for (uint32_t t = 0; t < b->tn; t++) {
        uint64_t cb = t / b->nrbo, o0 = t % b->nrbo * b->ro, c0 = cb * b->cbo;
        int64_t r = (int64_t)(o0 * pp->sy + k) - (int64_t)pp->pt;
        uint64_t cn = pp->R - c0 < b->cbo ? pp->R - c0 : b->cbo;
        sc->nr[t] = (uint32_t)cn;
        sc->lo[t] = sc->hi[t] = 0;
        if (r >= 0 && (uint64_t)r < pp->H) {
            sc->lo[t] = c0 * b->inner + (uint64_t)r * b->W;
            sc->hi[t] = sc->lo[t] + b->W;
        }
    }
}

/* Tile t's workers over its cn channels: per output row o < rot, the maximum of band rows
 * [ka, kb) (those of the image among o sy .. o sy + kh - 1) into the worker's padded row, then its
 * windows into the output. */
static void pool_blocked_tile(lw *L, uint32_t t, const pool_plan *pp, const pool_blk *b, uint32_t cn, uint64_t rot,
                              int64_t r0)
{
    uint32_t rw = (uint32_t)ts_geom_cdiv(cn, L->workers);
    int32_t rs = (int32_t)(b->cbo * b->W * 4); /* band row stride */
    size_t entry = LWT(t).wrk.n;
    lwi_emit_start_row(L, t, cn, rw);
    W(t, GET, RM(10), TS_IPU_CSR_WORKER, 0);
    W(t, MULI, RM(10), RM(10), (int32_t)(pp->WP * 4));
    W(t, SETZI, RM(2), (int32_t)b->row, 0);
    W(t, ADD, RM(10), RM(10), RM(2));
    W(t, LDCONST, RA(0), lwi_fbits(-FLT_MAX), 0);
    W(t, MOV, RM(2), RM(10), 0);
    W(t, SETZI, RM(3), (int32_t)pp->pl, 0);
    W(t, RPT, RM(3), 1, 0);
    W(t, ST32STEP, RA(0), RM(2), 4);
    W(t, ADDI, RM(2), RM(2), (int32_t)(b->W * 4));
    W(t, SETZI, RM(3), (int32_t)(pp->WP - pp->pl - b->W), 0);
    W(t, RPT, RM(3), 1, 0);
    W(t, ST32STEP, RA(0), RM(2), 4);
    W(t, SETZI, RM(8), (int32_t)b->W, 0);
    W(t, SETZI, RM(13), (int32_t)pp->Wo, 0);
    W(t, SETZI, RM(11), (int32_t)rw - 1, 0);
    size_t chan = W(t, MULI, RM(5), RM(1), (int32_t)(b->W * 4));
    W(t, SETZI, RM(3), (int32_t)b->band, 0);
    W(t, ADD, RM(5), RM(5), RM(3));
    W(t, MULI, RM(6), RM(1), (int32_t)(b->ro * pp->Wo * 4));
    W(t, SETZI, RM(3), (int32_t)b->out, 0);
    W(t, ADD, RM(6), RM(6), RM(3));
    for (uint64_t o = 0; o < rot; o++) {
        int64_t lo = (int64_t)(o * pp->sy), hi = lo + (int64_t)pp->kh;
        int64_t ka = lo > -r0 ? lo : -r0, kb = hi < (int64_t)pp->H - r0 ? hi : (int64_t)pp->H - r0;
        assert(kb > ka);
        W(t, ADDI, RM(2), RM(5), (int32_t)ka * rs);
        W(t, ADDI, RM(3), RM(10), (int32_t)(pp->pl * 4));
        W(t, RPT, RM(8), (int32_t)(2 * (kb - ka)), 0);
        W(t, LD32STEP, RA(0), RM(2), 4);
        for (int64_t k = 1; k < kb - ka; k++) {
            W(t, LD32, RA(1), RM(2), (int32_t)k * rs - 4);
            W(t, F32MAX, RA(0), RA(0), RA(1));
        }
        W(t, ST32STEP, RA(0), RM(3), 4);
        W(t, MOV, RM(9), RM(10), 0);
        W(t, RPT, RM(13), (int32_t)(2 * pp->kw), 0);
        W(t, LD32STEP, RA(0), RM(9), (int32_t)(pp->sx * 4));
        for (uint64_t x = 1; x < pp->kw; x++) {
            W(t, LD32, RA(1), RM(9), (int32_t)x * 4 - (int32_t)(pp->sx * 4));
            W(t, F32MAX, RA(0), RA(0), RA(1));
        }
        W(t, ST32STEP, RA(0), RM(6), 4);
    }
    W(t, ADDI, RM(1), RM(1), 1);
    W(t, BRNZDEC, RM(11), (int32_t)chan, 0);
    W(t, EXIT, 0, 0, 0);
    lwi_run_all(L, t, entry);
}

/* MaxPool where its blocked input lies (pool_blk): the band gathered a row at a time (each a row of
 * the tile's channels, whole from one holder where the input's blocks are one row), then pooled. */
static ts_status pool_blocked(lw *L, const ts_graph_node *n, lw_scr *sc, const pool_plan *pp, pool_blk *b)
{
    const lw_place *XP = &L->pl[n->in[0]];
    uint64_t av[2];
    lwi_elem_span(L, XP->addr, XP->chunk * XP->es, av);
    b->band = lwi_talloc_avoid(L, b->nb * b->cbo * b->W * 4, av[0], av[1]);
    for (uint64_t k = 0; k < b->nb; k++) {
        pool_band_ranges(pp, b, k, sc);
        L->into = b->band + k * b->cbo * b->W * 4;
        L->wlocal = true; /* a row the tile holds itself: its workers copy it (its supervisor took 8 times as long) */
        ts_status rc = lwi_gather(L, n->in[0], b->tn, sc->lo, sc->hi, sc->nr, b->inner, b->W, true, sc->where);
        L->into = 0;
        L->wlocal = false;
        if (rc != TS_OK)
            return rc;
    }
    b->row = lwi_talloc(L, L->workers * pp->WP * 4);
    b->out = lwi_alloc(L, b->cbo * b->ro * pp->Wo * 4);
    for (uint32_t t = 0; t < b->tn; t++) {
        uint64_t c0 = t / b->nrbo * b->cbo, o0 = t % b->nrbo * b->ro;
        uint64_t cn = pp->R - c0 < b->cbo ? pp->R - c0 : b->cbo, rot = pp->Ho - o0 < b->ro ? pp->Ho - o0 : b->ro;
        pool_blocked_tile(L, t, pp, b, (uint32_t)cn, rot, (int64_t)(o0 * pp->sy) - (int64_t)pp->pt);
    }
    lwi_use_tiles(L, b->tn);
    L->pl[n->out[0]] = (lw_place){.ntiles = b->tn, .chunk = b->cbo * b->ro * pp->Wo, .addr = b->out, .es = 4,
                                  .inner = pp->P, .cb = b->cbo, .pb = b->ro * pp->Wo, .nrb = (uint32_t)b->nrbo};
    lwi_sync_all(L);
    return TS_OK;
}

ts_status lwi_lower_pool(lw *L, const ts_graph_node *n, lw_scr *sc)
{
    ts_geom_window w;
    if (!ts_geom_window_of(L->g, n, &w))
        return lwi_unsupported(L, n, "an input that is not NCHW");
    bool gap = n->op == TS_OP_GLOBALAVGPOOL;
    if (w.dh != 1 || w.dw != 1)
        return lwi_unsupported(L, n, "dilations");
    ts_status rc = lwi_need_placed(L, n, n->in[0]);
    if (rc != TS_OK)
        return rc;
    pool_plan pp;
    pool_shape(L, n, &w, &pp);
    pool_blk b;
    if (pool_blocked_shape(L, n, &w, &L->pl[n->in[0]], &b))
        return pool_blocked(L, n, sc, &pp, &b);
    for (uint32_t t = 0; t < pp.tn; t++) {
        sc->lo[t] = t * pp.rp * pp.HW;
        sc->hi[t] = ((t + 1) * pp.rp < pp.R ? (t + 1) * pp.rp : pp.R) * pp.HW;
    }
    const lw_place *XP = &L->pl[n->in[0]];
    uint64_t av[2];
    lwi_elem_span(L, XP->addr, XP->chunk * XP->es, av);
    pp.img = gap ? 0 : lwi_talloc_avoid(L, pp.HP * pp.WP * 4, av[0], av[1]);
    if ((rc = pool_gather(L, n, sc, &pp)) != TS_OK)
        return rc;
    if (pp.avg && (rc = pool_avg_table(L, n, &w, &pp)) != TS_OK)
        return rc;
    pp.out = lwi_alloc(L, pp.rp * pp.P * 4);
    for (uint32_t t = 0; t < pp.tn; t++) {
        uint32_t planes = (uint32_t)((t + 1) * pp.rp < pp.R ? pp.rp : pp.R - t * pp.rp);
        if (gap)
            pool_gap(L, t, &pp, planes, sc->where[t]);
        else
            pool_planes(L, t, &pp, planes, sc->where[t]);
    }
    lwi_use_tiles(L, pp.tn);
    L->pl[n->out[0]] = (lw_place){.ntiles = pp.tn, .chunk = pp.rp * pp.P, .addr = pp.out, .es = 4};
    lwi_sync_all(L);
    return TS_OK;
}
