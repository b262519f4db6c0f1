/* workloads/ipu/lower_ipu_dconv.c — Conv on the workers' f32 units, planner (a): depthwise and
 * grouped Convs, dilations, and a batch of images (a Conv the AMP kernel of lower_ipu_conv.c does
 * not take).
 *
 * The output's planes (image n, channel m: plane n*M + m) are split over tiles, ppt consecutive
 * planes a tile, and when there are fewer planes than tiles each plane's rows in nrb blocks of rb
 * rows: tile t = (plane block) * nrb + row block, so the output is laid out blocked (channels =
 * planes) or flat (one row block). A tile gathers the input planes its planes read (plane n*M + m
 * reads the Cg = C/groups channels of its group, n*C + (m / (M/groups)) * Cg on) over the input rows
 * of its row block (halo rows included), copies them into a zeroed, padded image (planes over the
 * workers), then for each of its planes runs a routine on every worker (its output rows in blocks
 * over the workers): per output pixel the bias plus the sum over the group's channels, kernel rows
 * and columns of weight times input, dilated, one f32mac per tap (3 issues: two loads and the MAC).
 * The routine reads its plane's image, weights and output from a record in the operator's initial
 * data. f16: the weights are rounded to f16; the inputs are the f32 words f16 tensors are held in,
 * the sums f32.
 */
#include <string.h>

#include "core/alloc.h"
#include "core/half.h"
#include "workloads/ipu/lower_ipu_int.h"

typedef struct dc {
    uint64_t N, C, H, Wd, M, G, Cg, Mg, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, Ho, Wo;
    const ts_graph_tensor *Wt, *Bt;
    int wid, bid;
    bool half;
    /* the plan */
    uint64_t P, ppt, nrb, rb, HB, WI, NB, nicmax;
    uint32_t tn;
    uint64_t img, waddr, raddr, out;
} dc;

/* The first input plane plane `pl` reads. */
static uint64_t dc_in0(const dc *D, uint64_t pl)
{
    uint64_t n = pl / D->M, m = pl % D->M;
    return n * D->C + m / D->Mg * D->Cg;
}

/* Tile t's planes [*p0, *p1), its input planes [*i0, *i0 + *ni), its output rows from *oy0 (*nro
 * of them) and input rows [*ya, *yb). */
static void dc_tile(const dc *D, uint32_t t, uint64_t *p0, uint64_t *p1, uint64_t *i0, uint64_t *ni, uint64_t *oy0,
                    uint64_t *nro, uint64_t *ya, uint64_t *yb)
{
    uint64_t pbk = t / D->nrb, gr = t % D->nrb;
    *p0 = pbk * D->ppt;
    *p1 = *p0 + D->ppt < D->P ? *p0 + D->ppt : D->P;
    *i0 = dc_in0(D, *p0);
    *ni = dc_in0(D, *p1 - 1) + D->Cg - *i0;
    *oy0 = gr * D->rb;
    uint64_t oy1 = *oy0 + D->rb < D->Ho ? *oy0 + D->rb : D->Ho;
    *nro = oy1 > *oy0 ? oy1 - *oy0 : 0;
    int64_t lo = (int64_t)(*oy0 * D->sh) - (int64_t)D->pt;
    int64_t hi = *nro ? (int64_t)((oy1 - 1) * D->sh + (D->kh - 1) * D->dh + 1) - (int64_t)D->pt : lo;
    *ya = lo > 0 ? (uint64_t)lo : 0;
    *yb = hi <= 0 ? 0 : hi < (int64_t)D->H ? (uint64_t)hi : D->H;
    if (*yb < *ya)
        *yb = *ya;
}

/* The plan: planes over tiles, rows in blocks when planes are fewer than tiles. */
static void dc_plan(const lw *L, dc *D)
{
    D->P = D->N * D->M;
    D->ppt = ts_geom_cdiv(D->P, L->T);
    uint64_t nb = D->P >= L->T ? 1 : L->T / D->P;
    if (nb > D->Ho)
        nb = D->Ho;
    D->rb = ts_geom_cdiv(D->Ho, nb ? nb : 1);
    D->nrb = ts_geom_cdiv(D->Ho, D->rb);
    D->tn = (uint32_t)(ts_geom_cdiv(D->P, D->ppt) * D->nrb);
    D->HB = (D->rb - 1) * D->sh + (D->kh - 1) * D->dh + 1;
    D->WI = D->Wd + D->pl + D->pr;
    D->NB = 0;
    D->nicmax = 0;
    for (uint32_t t = 0; t < D->tn; t++) {
        uint64_t p0, p1, i0, ni, oy0, nro, ya, yb;
        dc_tile(D, t, &p0, &p1, &i0, &ni, &oy0, &nro, &ya, &yb);
        D->NB = yb - ya > D->NB ? yb - ya : D->NB;
        D->nicmax = ni > D->nicmax ? ni : D->nicmax;
    }
}

/* Tile t's padded image: zeroed, then its input rows copied in (planes over the workers; the last
 * workers' blocks overlap and copy the same words). */
static void dc_image(lw *L, const dc *D, uint32_t t, uint64_t src, uint64_t ni, uint64_t oy0, uint64_t ya, uint64_t yb)
{
    uint64_t plane = D->HB * D->WI * 4, words = ni * plane / 4, rw = ts_geom_cdiv(words, L->workers);
    size_t entry = LWT(t).wrk.n;
    lwi_emit_start_row(L, t, (uint32_t)words, (uint32_t)rw);
    W(t, SHLI, RM(3), RM(1), 2);
    W(t, SETZI, RM(4), (int32_t)D->img, 0);
    W(t, ADD, RM(3), RM(3), RM(4));
    W(t, SETZI, RA(0), 0, 0);
    W(t, SETZI, RM(5), (int32_t)rw, 0);
    W(t, RPT, RM(5), 1, 0);
    W(t, ST32STEP, RA(0), RM(3), 4);
    W(t, EXIT, 0, 0, 0);
    lwi_run_all(L, t, entry);
    if (yb <= ya)
        return;
    int64_t iylo = (int64_t)(oy0 * D->sh) - (int64_t)D->pt;
    uint64_t nbt = yb - ya, rwc = ts_geom_cdiv(ni, L->workers);
    entry = LWT(t).wrk.n;
    lwi_emit_start_row(L, t, (uint32_t)ni, (uint32_t)rwc);
    W(t, MULI, RM(2), RM(1), (int32_t)(D->NB * D->Wd * 4));
    W(t, SETZI, RM(3), (int32_t)src, 0);
    W(t, ADD, RM(2), RM(2), RM(3));
    W(t, MULI, RM(3), RM(1), (int32_t)plane);
    W(t, SETZI, RM(4), (int32_t)(D->img + ((uint64_t)((int64_t)ya - iylo) * D->WI + D->pl) * 4), 0);
    W(t, ADD, RM(3), RM(3), RM(4));
    W(t, SETZI, RM(5), (int32_t)rwc - 1, 0);
    W(t, SETZI, RM(8), (int32_t)D->Wd, 0);
    size_t ch = W(t, SETZI, RM(6), (int32_t)nbt - 1, 0);
    size_t row = W(t, RPT, RM(8), 2, 0);
    W(t, LD32STEP, RA(0), RM(2), 4);
    W(t, ST32STEP, RA(0), RM(3), 4);
    W(t, ADDI, RM(3), RM(3), (int32_t)((D->WI - D->Wd) * 4));
    W(t, BRNZDEC, RM(6), (int32_t)row, 0);
    W(t, ADDI, RM(2), RM(2), (int32_t)((D->NB - nbt) * D->Wd * 4));
    W(t, ADDI, RM(3), RM(3), (int32_t)((D->HB - nbt) * D->WI * 4));
    W(t, BRNZDEC, RM(5), (int32_t)ch, 0);
    W(t, EXIT, 0, 0, 0);
    lwi_run_all(L, t, entry);
}

/* The routine every worker runs for one plane of nro output rows: its record at $m0 (the plane's
 * image, weights, output and bias), its rows in blocks over the workers. */
static size_t dc_routine(lw *L, const dc *D, uint32_t t, uint64_t nro)
{
    uint64_t rw = ts_geom_cdiv(nro, L->workers), plane = D->HB * D->WI * 4;
    size_t entry = LWT(t).wrk.n;
    lwi_emit_start_row(L, t, (uint32_t)nro, (uint32_t)rw);
    W(t, LD32, RM(2), RM(0), 0);
    W(t, LD32, RM(5), RM(0), 4);
    W(t, LD32, RM(3), RM(0), 8);
    W(t, LD32, RA(15), RM(0), 12);
    W(t, MULI, RM(4), RM(1), (int32_t)(D->Wo * 4));
    W(t, ADD, RM(3), RM(3), RM(4));
    W(t, MULI, RM(4), RM(1), (int32_t)(D->sh * D->WI * 4));
    W(t, ADD, RM(2), RM(2), RM(4));
    W(t, SETZI, RM(1), (int32_t)rw - 1, 0);
    size_t row = W(t, MOV, RM(6), RM(2), 0);
    W(t, SETZI, RM(7), (int32_t)D->Wo - 1, 0);
    size_t pix = W(t, MOV, RA(0), RA(15), 0);
    W(t, MOV, RM(8), RM(6), 0);
    W(t, MOV, RM(9), RM(5), 0);
    W(t, SETZI, RM(10), (int32_t)D->Cg - 1, 0);
    size_t ch = W(t, MOV, RM(11), RM(8), 0);
    W(t, SETZI, RM(12), (int32_t)D->kh - 1, 0);
    size_t ky = W(t, MOV, RM(13), RM(11), 0);
    W(t, SETZI, RM(14), (int32_t)D->kw, 0);
    W(t, RPT, RM(14), 3, 0);
    W(t, LD32STEP, RA(1), RM(13), (int32_t)(D->dw * 4));
    W(t, LD32STEP, RA(2), RM(9), 4);
    W(t, F32MAC, RA(0), RA(1), RA(2));
    W(t, ADDI, RM(11), RM(11), (int32_t)(D->dh * D->WI * 4));
    W(t, BRNZDEC, RM(12), (int32_t)ky, 0);
    W(t, ADDI, RM(8), RM(8), (int32_t)plane);
    W(t, BRNZDEC, RM(10), (int32_t)ch, 0);
    W(t, ST32STEP, RA(0), RM(3), 4);
    W(t, ADDI, RM(6), RM(6), (int32_t)(D->sw * 4));
    W(t, BRNZDEC, RM(7), (int32_t)pix, 0);
    W(t, ADDI, RM(2), RM(2), (int32_t)(D->sh * D->WI * 4));
    W(t, BRNZDEC, RM(1), (int32_t)row, 0);
    W(t, EXIT, 0, 0, 0);
    return entry;
}

/* Every tile: its weights and records (initial data), its image, its planes. */
static ts_status dc_tiles(lw *L, const ts_graph_node *n, dc *D, const lw_scr *sc)
{
    uint64_t taps = D->Cg * D->kh * D->kw;
    float *w = ts_calloc(D->ppt * taps + 1, 4);
    uint32_t *rec = ts_calloc(D->ppt * 4, 4);
    ts_status rc = w && rec ? TS_OK : ts_err_set(L->err, TS_ENOMEM, "out of memory lowering '%s'", n->name);
    for (uint32_t t = 0; t < D->tn && rc == TS_OK; t++) {
        uint64_t p0, p1, i0, ni, oy0, nro, ya, yb;
        dc_tile(D, t, &p0, &p1, &i0, &ni, &oy0, &nro, &ya, &yb);
        if (!nro)
            continue;
        for (uint64_t p = p0; p < p1; p++) {
            uint64_t m = p % D->M, j = p - p0;
            for (uint64_t k = 0; k < taps; k++) {
                float v = ts_fill_value_f32(D->Wt, D->wid, m * taps + k);
                w[j * taps + k] = D->half ? ts_f16_to_f32(ts_f32_to_f16(v)) : v;
            }
            float b = D->Bt ? ts_fill_value_f32(D->Bt, D->bid, m) : 0.0f;
            rec[4 * j] = (uint32_t)(D->img + (dc_in0(D, p) - i0) * D->HB * D->WI * 4);
            rec[4 * j + 1] = (uint32_t)(D->waddr + j * taps * 4);
            rec[4 * j + 2] = (uint32_t)(D->out + j * D->rb * D->Wo * 4);
            memcpy(&rec[4 * j + 3], &b, 4);
        }
        rc = lwi_seg(L, t, D->waddr, w, (p1 - p0) * taps * 4);
        if (rc == TS_OK)
            rc = lwi_seg(L, t, D->raddr, rec, (p1 - p0) * 16);
        dc_image(L, D, t, sc->where[t], ni, oy0, ya, yb);
        size_t entry = dc_routine(L, D, t, nro);
        for (uint64_t j = 0; j < p1 - p0; j++)
            lwi_run_all_m0(L, t, entry, D->raddr + j * 16);
    }
    ts_free(w);
    ts_free(rec);
    return rc;
}

ts_status lwi_lower_dconv(lw *L, const ts_graph_node *n, lw_scr *sc, const ts_geom_window *w)
{
    const ts_graph *g = L->g;
    dc D = {.N = (uint64_t)w->N, .C = (uint64_t)w->C, .H = (uint64_t)w->H, .Wd = (uint64_t)w->W,
            .M = (uint64_t)w->M, .G = (uint64_t)n->attrs.group, .kh = (uint64_t)w->kh, .kw = (uint64_t)w->kw,
            .sh = (uint64_t)w->sh, .sw = (uint64_t)w->sw, .dh = (uint64_t)w->dh, .dw = (uint64_t)w->dw,
            .pt = (uint64_t)w->pt, .pl = (uint64_t)w->pl, .pb = (uint64_t)w->pb, .pr = (uint64_t)w->pr,
            .Ho = (uint64_t)w->Ho, .Wo = (uint64_t)w->Wo, .Wt = ts_graph_get_tensor(g, n->in[1]), .wid = n->in[1],
            .Bt = n->nin > 2 ? ts_graph_get_tensor(g, n->in[2]) : NULL, .bid = n->nin > 2 ? n->in[2] : -1,
            .half = ts_graph_get_tensor(g, n->in[0])->dtype == TS_DT_F16};
    if (!D.G || D.C % D.G || D.M % D.G)
        return lwi_unsupported(L, n, "groups that do not divide the channels");
    if (L->pl[n->in[0]].es != 4)
        return lwi_unsupported(L, n, "an input held as f16 halves");
    D.Cg = D.C / D.G;
    D.Mg = D.M / D.G;
    dc_plan(L, &D);
    for (uint32_t t = 0; t < D.tn; t++) {
        uint64_t p0, p1, i0, ni, oy0, nro, ya, yb;
        dc_tile(&D, t, &p0, &p1, &i0, &ni, &oy0, &nro, &ya, &yb);
        sc->lo[t] = i0 * D.H * D.Wd + ya * D.Wd;
        sc->hi[t] = sc->lo[t] + (nro ? yb - ya : 0) * D.Wd;
        sc->nr[t] = (uint32_t)ni;
    }
    ts_status rc = lwi_gather(L, n->in[0], D.tn, sc->lo, sc->hi, sc->nr, D.H * D.Wd, D.NB * D.Wd, false, sc->where);
    if (rc != TS_OK)
        return rc;
    D.img = lwi_talloc(L, D.nicmax * D.HB * D.WI * 4);
    D.waddr = lwi_salloc(L, D.ppt * D.Cg * D.kh * D.kw * 4);
    D.raddr = lwi_salloc(L, D.ppt * 16);
    D.out = lwi_alloc(L, D.ppt * D.rb * D.Wo * 4);
    if ((rc = dc_tiles(L, n, &D, sc)) != TS_OK)
        return rc;
    lwi_use_tiles(L, D.tn);
    lw_place *o = &L->pl[n->out[0]];
    *o = (lw_place){.ntiles = D.tn, .chunk = D.ppt * D.rb * D.Wo, .addr = D.out, .es = 4};
    if (D.nrb > 1) {
        o->inner = D.Ho * D.Wo;
        o->cb = D.ppt;
        o->pb = D.rb * D.Wo;
        o->nrb = (uint32_t)D.nrb;
    }
    lwi_sync_all(L);
    return TS_OK;
}
