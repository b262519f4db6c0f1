/* workloads/ipu/lower_ipu_t10_plans.c — planner (b) of the IPU lowering: which operators it takes
 * and their compute-shift plans (research/graphcore_ipu.md §4.5, §5; the plan space and cost model
 * are plan_t10.h's).
 *
 * It takes MatMul and Gemm by a weight (f32, or f16 throughout; more than one row, even k) and Convs
 * (1x1 without padding, or larger kernels with pads smaller than the kernel, such as 3x3 with
 * padding 1; any stride; a batch folded into the pixels; f32, or f16 throughout), as lwi_t10_shape
 * says; of each one's plans it offers those the code generator takes (generable; lower_ipu_t10.c says what it
 * does not take), priced for what a Conv's or an f16 product's code does beyond the model's MatMul,
 * and chooses one per operator for the whole graph within a tile-memory budget (ts_t10_reconcile). Planner (a) lowers
 * every operator it does not take. Under auto (the default planner) a MatMul/Gemm's set holds
 * load-compute-store's plan too (ts_t10_mm_lcs), so the trade picks it where the model prices it
 * cheapest; planner (a) then lowers the operator.
 */
#include <string.h>

#include "core/alloc.h"
#include "workloads/ipu/lower_ipu_int.h"

/* A Conv (the same stride along both axes; f32, or f16 throughout on input channels a multiple of 4
 * and an even number of output channels) as the product of its output pixels by its input channels
 * x taps by its output channels: a 1x1 Conv without padding (a strided one is a 1x1 Conv on the
 * subsampled image), or a larger kernel whose pads are each smaller than it, its im2col (k =
 * channel x taps + tap, the order of the ONNX weight W[M][C][kh][kw]). */
static bool conv_shape(const ts_graph *g, const ts_graph_node *n, t10_op *s)
{
    const ts_graph_tensor *X = ts_graph_get_tensor(g, n->in[0]), *Wt = ts_graph_get_tensor(g, n->in[1]);
    ts_geom_window w;
    s->A = X;
    s->B = Wt;
    s->C = n->nin > 2 ? ts_graph_get_tensor(g, n->in[2]) : NULL;
    if (!ts_geom_window_of(g, n, &w) || w.N < 1 || n->attrs.group != 1)
        return false;
    if (Wt->kind == TS_TENSOR_ACTIVATION || Wt->kind == TS_TENSOR_INPUT || w.sh != w.sw || w.sh < 1 ||
        w.dh != 1 || w.dw != 1)
        return false;
    /* a larger kernel: each pad smaller than the kernel (every block of output rows reads an input
     * row), taps not both odd and f16 (its pixel rows round pairs of k in blocks of two channels) */
    if ((w.kh != 1 || w.kw != 1) && (w.pt >= w.kh || w.pb >= w.kh || w.pl >= w.kw || w.pr >= w.kw))
        return false;
    if (w.kh == 1 && w.kw == 1 && (w.pt || w.pl || w.pb || w.pr))
        return false;
    s->half = X->dtype == TS_DT_F16;
    ts_dtype dt = s->half ? TS_DT_F16 : TS_DT_F32;
    if (X->dtype != dt || Wt->dtype != dt || (s->C && s->C->dtype != dt))
        return false;
    s->conv = s->tb = true; /* W[M][C][kh][kw] is B[N][K]: M output pixels of K inputs */
    ts_geom_pixels_channels(X, &s->hwi, &s->K);
    s->taps = (uint64_t)(w.kh * w.kw);
    s->kh = (uint64_t)w.kh;
    s->kw = (uint64_t)w.kw;
    s->hin = (uint64_t)w.H;
    s->pt = (uint64_t)w.pt;
    s->pl = (uint64_t)w.pl;
    s->pr = (uint64_t)w.pr;
    s->creal = s->K;
    /* f16 on a number of input channels not a multiple of 4 (conv1's 3), a larger kernel, a batch:
     * the channels padded to a multiple of 4 with zeros (zero weights, zero planes in the tile's
     * padded image). At batch 1 planner (a) keeps it: ResNet-50's conv1 under (b) ran 218,428 ->
     * 226,501 cycles on ipu_mk2, and its memory in the trade moved the other Convs to slower plans
     * (on ipu_mk1 the whole network 4,024,766 -> 5,278,646); at batch 4 on ipu_mk2 685,287 -> 345,441 */
    if (s->half && s->taps > 1 && s->K % 4 && w.N > 1)
        s->K = (s->K + 3) / 4 * 4;
    s->K *= s->taps; /* W[M][C][kh][kw] is B[N][K], k = c taps + tap */
    s->nimg = (uint64_t)w.N;
    s->hwi = (uint64_t)(w.H * w.W); /* an image's */
    s->M = (uint64_t)(w.N * w.Ho * w.Wo);
    s->st = (uint64_t)w.sh;
    s->wi = (uint64_t)w.W;
    s->N = (uint64_t)w.M;
    s->wo = (uint64_t)w.Wo;
    size_t nc = 0;
    ts_graph_consumers(g, n->out[0], &nc);
    s->read = nc > 0;
    if (s->C && ts_graph_tensor_elems(s->C) != (int64_t)s->N)
        return false;
    if (s->half && (s->K / s->taps % 4 || s->N % 2))
        return false;
    return s->M > 1 && s->K >= 2 && s->K % 2 == 0 && s->N > 0;
}

bool lwi_t10_shape(const ts_graph *g, const ts_graph_node *n, t10_op *s)
{
    memset(s, 0, sizeof *s);
    if (n->op == TS_OP_CONV)
        return conv_shape(g, n, s);
    if (n->op != TS_OP_MATMUL && n->op != TS_OP_GEMM)
        return false;
    s->A = ts_graph_get_tensor(g, n->in[0]);
    s->B = ts_graph_get_tensor(g, n->in[1]);
    s->C = n->nin > 2 ? ts_graph_get_tensor(g, n->in[2]) : NULL;
    bool gemm = n->op == TS_OP_GEMM;
    if (gemm && (n->attrs.trans_a || n->attrs.alpha != 1.0 || (s->C && n->attrs.beta != 1.0)))
        return false;
    if (s->B->kind == TS_TENSOR_ACTIVATION || s->B->kind == TS_TENSOR_INPUT || s->B->rank != 2 || s->A->rank < 1)
        return false;
    s->half = s->A->dtype == TS_DT_F16;
    ts_dtype dt = s->half ? TS_DT_F16 : TS_DT_F32;
    if (s->A->dtype != dt || s->B->dtype != dt || (s->C && s->C->dtype != dt))
        return false;
    /* f16: A held as halves (a graph input read by a MatMul/Gemm, or the output of one; a Gemm's
     * other activations are converted to halves for it, lwi_reheld: ResNet's fc after the pool) */
    if (s->half && !gemm && s->A->kind != TS_TENSOR_INPUT &&
        (s->A->producer < 0 || (ts_graph_get_node(g, s->A->producer)->op != TS_OP_MATMUL &&
                                ts_graph_get_node(g, s->A->producer)->op != TS_OP_GEMM)))
        return false;
    s->tb = gemm && n->attrs.trans_b;
    s->gemm = gemm;
    s->K = (uint64_t)s->A->dims[s->A->rank - 1];
    s->N = (uint64_t)(s->tb ? s->B->dims[0] : s->B->dims[1]);
    s->M = s->K ? (uint64_t)ts_graph_tensor_elems(s->A) / s->K : 0;
    if (s->C && ts_graph_tensor_elems(s->C) != (int64_t)s->N)
        return false;
    if (s->half && (s->K % 4 || s->N % 2))
        return false;
    return s->M > 1 && s->K >= 2 && s->K % 2 == 0 && s->N > 0;
}

/* The chip as the cost model sees it, with `sram` bytes per tile. */
static ts_t10_hw t10_hw(const ts_lower_ipu_params *p, uint64_t sram)
{
    uint32_t T = p->max_tiles && p->max_tiles < p->target.tiles ? p->max_tiles : p->target.tiles;
    /* round_cycles 30 is assumed (arming recv, send and rxwait of one exchange superstep), as in
     * plan_t10_table.c */
    return (ts_t10_hw){.tiles = T, .sram_bytes = sram, .units = p->target.amp_units_f32,
                       .workers = p->target.workers ? p->target.workers : 6,
                       .xbytes = p->target.xbytes ? p->target.xbytes : 4,
                       .sync_cycles = p->target.sync_cycles ? p->target.sync_cycles : 90, .round_cycles = 30,
                       .shared_amp = p->target.load_latency <= (p->target.workers ? p->target.workers : 6) &&
                                     p->target.load_bytes >= 16};
}

/* A 1x1 Conv's gather as conv_cost prices it. */
typedef struct conv_gx {
    uint64_t kin;     /* channels a tile gathers */
    uint64_t span;    /* input pixels a tile reads per channel */
    uint64_t cph;     /* whole channels a holder holds (1 when it holds part of one) */
    uint64_t senders; /* holders a tile reads from */
    uint64_t readers; /* tiles reading one holder */
} conv_gx;

static conv_gx conv_gather(uint32_t tiles, const ts_t10_mm *mm, const t10_op *s, const ts_t10_plan *p)
{
    conv_gx x = {.cph = 1};
    /* channels a tile gathers: its k-range, or (A rotating) its first rp slices; the copies of a
     * pixel block's channels: one per channel block, or per ring */
    bool rota = p->rot & TS_T10_ROT_A;
    uint64_t copies = rota ? p->fn / p->ft : p->fn, taps = s->taps ? s->taps : 1;
    x.kin = (rota ? p->kp * p->rp : p->kt) / taps;
    /* input pixels a tile reads per channel (strided, or a larger kernel: its output rows' input
     * rows, whole) and the input pixels its block covers */
    uint64_t px = s->nimg > 1 ? s->hwi : mm->m, cover = p->rows;
    x.span = p->rows;
    if (taps > 1) {
        px = s->hwi;
        x.span = lwi_conv_band(p->rows, s->wo, s->st, s->kh, s->hin, s->wi);
        cover = p->rows * s->st * s->st;
    } else if (s->st > 1) {
        px = s->hwi;
        x.span = lwi_conv_span(p->rows, s->wo, s->st, s->wi);
        cover = p->rows * s->st * s->st;
    }
    uint64_t ch = ts_geom_cdiv(mm->k / taps * px * (s->nimg ? s->nimg : 1), tiles);
    if (ch < 1024)
        ch = 1024;
    if (ch >= px) { /* a holder holds whole channels */
        x.cph = ch / px;
        x.senders = ts_geom_cdiv(x.kin, x.cph);
    } else
        x.senders = x.kin * ts_geom_cdiv(x.span, ch);
    x.readers = copies * ts_geom_cdiv(ch < px ? ch : px, cover);
    return x;
}

/* A 1x1 Conv's plan priced for what its code does beyond a MatMul's. Its input arrives
 * channel-major and is turned into rows of pixels (2 issues per element, 1.5 in f16; pixels over the workers),
 * its output, computed pixel-major, is turned channel-major (2 issues per element, channels over
 * the workers). Its gather reads a piece per input channel (of its k-range, or of the slices it
 * holds first when A rotates, each pixel block then read by fn / ft tiles instead of fn) from the
 * holders of the input placed as a graph input (chunks of at least 1024 elements): one round per
 * holder a tile reads from (staggered, so a holder serves its readers spread over the rounds), each
 * a sync, the holder's share of its sends (its words, and 18 cycles each for setting up and issuing
 * the send) and an exchange superstep's fixed cost; this replaces the MatMul's gather of A rows. A
 * strided Conv's tile reads its output rows' input rows whole, (rows / wo - 1) st + 1 of them, as
 * planner (a)'s Convs do. */
static void conv_cost(const ts_t10_hw *hw, const ts_t10_mm *mm, const t10_op *s, ts_t10_plan *p)
{
    uint64_t W = hw->workers ? hw->workers : 6, xb = hw->xbytes ? hw->xbytes : 4;
    conv_gx x = conv_gather(hw->tiles, mm, s, p);
    /* f16: a word of two inputs in 3 issues (its rounding bundled with the next word's load), four
     * inputs in 5 where the channels go in quads (rows_quad) */
    const bool quad = s->half && x.kin % 4 == 0;
    uint64_t c = W * (ts_geom_cdiv(p->rows, W) * (quad ? 5 * x.kin / 4 + 9 : s->half ? 3 * x.kin / 2 + 9 : 2 * x.kin + 8) + 20) +
                 W * (ts_geom_cdiv(p->cols, W) * (2 * p->rows + 8) + 20);
    if (s->taps > 1) { /* rows of kin x taps inputs, from a padded image of the band copied first */
        uint64_t ke = x.kin * s->taps, blk = (quad && s->taps % 2 ? 4 : s->half && s->taps % 2 ? 2 : 1) * s->taps;
        uint64_t hb = (p->rows / s->wo - 1) * s->st + s->kh, wp = s->wi + s->pl + s->pr, nb = x.span / s->wi;
        /* the band's pixels at 2 issues each, though an f16 Conv's aligned rows take 1 (64-bit copies,
         * conv_image_rows): priced at 1, the memory trade (ts_t10_reconcile) moved three 3x3 Convs of
         * resnet50:batch=4's layer3 to plans 14.5 k cycles slower each (3,386,169 cycles against
         * 3,353,751 on ipu_mk2) */
        c = W * (ts_geom_cdiv(p->rows, W) * ((quad ? 5 * ke / 4 : s->half ? 3 * ke / 2 : 2 * ke) + ke / blk + 12) + 20) +
            W * (ts_geom_cdiv(x.kin, W) * (nb * (2 * s->wi + s->pl + s->pr + 4) + (hb - nb) * wp + 4) + 20) +
            W * (ts_geom_cdiv(p->cols, W) * (2 * p->rows + 8) + 20);
        p->mem_bytes += x.kin * (x.span + hb * wp) * 4; /* the band as gathered and the padded image */
    }
    p->compute_cycles += c;
    uint64_t senders = x.senders;
    uint64_t per_round =
        ts_geom_cdiv(x.readers, senders) * (ts_geom_cdiv(x.span * x.cph * 4, xb) + 18) + hw->round_cycles;
    uint32_t levels = 0;
    while ((1u << levels) < p->fk)
        levels++;
    uint64_t old_rounds = p->syncs - (2 * p->steps - 1 + levels);
    p->exchange_cycles = p->exchange_cycles - p->in_cycles + senders * per_round;
    p->in_cycles = senders * per_round;
    p->syncs = (uint32_t)(p->syncs - old_rounds + senders);
    p->sync_cycles = (uint64_t)p->syncs * hw->sync_cycles;
    p->cycles = p->compute_cycles + p->exchange_cycles + p->sync_cycles;
}

/* The f16 AMP units a plan of s uses: the lowering's (lower_ipu.c: 8 of an AMP of 16, as planner (a)
 * holds a group's sums in $a0..$a7) for a Conv and a Gemm; the target's for a MatMul, whose f16 plans
 * on an AMP of more than 8 units are left to planner (a) (generable), and for load-compute-store's
 * plans (lcs_plans). */
static uint32_t units16(const ts_lower_ipu_params *p, const t10_op *s, const ts_t10_plan *pl)
{
    uint32_t u = p->target.amp_units_f16;
    if (s->conv && s->half && lwi_t10_wide(p, s, pl->cols, pl->kp))
        return u;
    return (s->conv || s->gemm) && u > 8 && u % 8 == 0 ? 8 : u;
}

uint32_t lwi_t10_wide(const ts_lower_ipu_params *p, const t10_op *s, uint64_t cols, uint64_t kp)
{
    const ts_ipu_target *tg = &p->target;
    uint32_t W = tg->workers ? tg->workers : 6, U = tg->amp_units_f16, sets, issues, ptrs;
    if (!s->conv || !s->half || U <= 8 || tg->load_latency > W || tg->load_bytes < 16 ||
        !ts_t10_amp_body(W, U, &sets, &issues, &ptrs) || cols % U || s->N % U || kp % (4 * (uint64_t)sets))
        return 0;
    return U;
}

/* An f16 plan's compute: the f16v4amp kernel, (U16 + 2) issues per 4 inputs per group of U16
 * outputs (ts_t10_amp_cycles on half the k with U16 units), or the shared-coefficient kernel
 * where it applies (ts_t10_steps_cycles, the same way). */
static void f16_cost(const ts_t10_hw *hw, const ts_t10_mm *mm, uint32_t u16, bool conv, ts_t10_plan *p)
{
    ts_t10_hw h = *hw;
    h.units = u16;
    h.shared_amp = hw->shared_amp && (u16 <= 8 || conv); /* more than 8 units: only a wide Conv's plans */
    /* a Conv's rows of pixels are built on the tile (conv_rows), so its padding is always zeroed */
    uint64_t c = p->lcs || (!conv && !ts_t10_pads_a(hw, mm, p))
                     ? ts_t10_steps_cycles(&h, p->rows, p->kt / 2, p->kp / 2, p->steps, p->cols)
                     : ts_t10_steps_cycles_padded(&h, p->rows, p->kt / 2, p->kp / 2, p->steps, p->cols);
    p->cycles = p->cycles - p->compute_cycles + c;
    p->compute_cycles = c;
    /* (b)'s plans whose k per step is whole bodies: their gather's rounds are packed (a MatMul's
     * gather of rows of A; a Conv's gather of channels is priced by conv_cost) */
    uint32_t sets, issues, ptrs;
    if (!p->lcs && !conv && h.shared_amp &&
        ts_t10_amp_body(hw->workers ? hw->workers : 6, u16, &sets, &issues, &ptrs) && p->kp % (4 * (uint64_t)sets) == 0)
        ts_t10_gather_packed(hw, mm, p);
}

/* Plans the code generator takes (see the top of lower_ipu_t10.c). */
static bool generable(const ts_lower_ipu_params *p, const t10_op *s, const ts_t10_plan *pl)
{
    /* f16: whole f16v4amp groups and steps of 4 inputs; k not split for a MatMul/Gemm (its partial
     * sums would need a rounding pass after the tree; an f16 Conv's outputs are f32) */
    uint32_t u16 = units16(p, s, pl);
    if (s->half && (u16 < 2 || (u16 > 8 && !lwi_t10_wide(p, s, pl->cols, pl->kp)) || u16 % 2 || pl->cols % u16 || pl->kp % 4 || pl->kt % 4 ||
                    (pl->fk > 1 && !s->conv)))
        return false;
    /* a Conv another operator reads: blocks of whole image rows and at most 16 channels, as planner
     * (a)'s Convs leave theirs, since its reader gathers a piece per channel and block (smaller
     * blocks made ResNet-50's exchange code outgrow the tile memory); a batch's at most 64 channels
     * (its blocks are larger: resnet50:batch=4 on ipu_mk2 9,404,728 cycles with 16, 7,285,282 with
     * 32, 6,907,720 with 64 and the same with 128, the bottlenecks' conv3 and downsamples read by
     * their Add in fewer column blocks) */
    if (s->conv && s->read && ((pl->rows % s->wo && pl->rows < s->M) || pl->cols > (s->nimg > 1 ? 64u : 16u)))
        return false;
    /* a strided Conv: blocks of whole output rows (conv_rows reads each pixel's input from a table
     * of offsets shared by the blocks) */
    if (s->conv && s->st > 1 && pl->rows % s->wo)
        return false;
    /* a batch: blocks within one image (each image's pixels whole blocks) and each image's output
     * channels whole column blocks, so that the output is the blocked layout of the batch's planes */
    if (s->conv && s->nimg > 1) {
        uint64_t hwo = s->M / s->nimg;
        if (hwo % pl->rows || (uint64_t)pl->fm * pl->rows != s->M || s->N % pl->cols ||
            (uint64_t)pl->fn * pl->cols != s->N)
            return false;
    }
    /* a larger kernel: blocks of whole output rows (their input rows a band, padded on the tile), k
     * ranges and slices of whole channels (f16 on an odd number of taps: of channel pairs, whose
     * rows of halves round pairs of k) */
    if (s->conv && s->taps > 1) {
        uint64_t blk = (s->half && s->taps % 2 ? 2 : 1) * s->taps;
        /* one step whose k is padded to whole bodies (conv1's 196 to 216): the padding past the
         * k-range, zeroed in the rows */
        bool padded = pl->steps == 1 && pl->fk == 1 && pl->kp > pl->kt;
        if (pl->rows % s->wo || pl->kt % blk || (pl->kp % blk && !padded))
            return false;
    }
    /* a Conv's code: a holder of its input sends a piece per channel to each tile reading it, two
     * instructions (8 bytes) each; at most 1/64 of the tile memory of them per holder, and 512 sends
     * on any tile (so on ipu_mk1, where ResNet-50's layer3 in f16 chose 14 x 64 plans whose 1,120
     * sends a holder, with the 3 x 3 Convs' code beside them, took tile 8's code past its 65,536
     * instructions; 1,248 on ipu_mk2) */
    if (s->conv) {
        ts_t10_mm mm = {.m = s->M, .k = s->K, .n = s->N, .es = s->half ? 2 : 4};
        uint32_t T = p->max_tiles && p->max_tiles < p->target.tiles ? p->max_tiles : p->target.tiles;
        conv_gx x = conv_gather(T, &mm, s, pl);
        if (x.readers * x.cph > (p->target.sram_bytes / 512 > 512 ? p->target.sram_bytes / 512 : 512))
            return false;
    }
    if (pl->rot & TS_T10_ROT_B)
        return pl->rp == 1 && !p->target.interleaved_base;
    /* a ring of rp + 1 > 2 slots needs three elements apart from the one A lies in */
    uint64_t eb = p->target.element_bytes ? p->target.element_bytes : 16;
    if ((pl->rot & TS_T10_ROT_A) && pl->rp > 1)
        return p->target.sram_bytes / eb >= 4;
    return true;
}

/* The caller's plan (p->t10_plan) for operator s, priced into *f; TS_EINPUT if it is not a valid
 * plan or the code generator does not take it. */
static ts_status fixed_plan(const ts_lower_ipu_params *p, const ts_t10_hw *hw, const t10_op *s, ts_t10_plan *f,
                            ts_err *err)
{
    ts_t10_mm mm = {.m = s->M, .k = s->K, .n = s->N, .es = s->half ? 2 : 4, .built = s->conv};
    *f = (ts_t10_plan){.fm = p->t10_plan->fm, .fn = p->t10_plan->fn, .fk = p->t10_plan->fk,
                       .ft = p->t10_plan->ft, .rp = p->t10_plan->rp, .rot = p->t10_plan->rot,
                       .bodies = p->t10_plan->bodies};
    ts_status rc = ts_t10_mm_cost(hw, &mm, f, err);
    if (rc != TS_OK)
        return rc;
    if (s->half) /* before conv_cost, which adds to the compute */
        f16_cost(hw, &mm, units16(p, s, f), s->conv, f);
    if (s->conv)
        conv_cost(hw, &mm, s, f);
    if (!generable(p, s, f))
        return ts_err_set(err, TS_EINPUT, "plan: not generated (a rotating B needs rp 1 and 128-bit loads "
                                          "everywhere, a rotating A at rp > 1 four SRAM elements per tile; a "
                                          "Conv's blocks need whole output rows when strided, and its input's "
                                          "holders at most max(512, tile bytes / 512) sends)");
    return TS_OK;
}

/* Under auto, a MatMul/Gemm's load-compute-store plans priced by the same model into l (room for
 * LCS_SHARES); how many (none for a Conv: planner (a)'s Conv plan has no price in the model). Its
 * weights within 1/4 of the tile, as planner (a) alone keeps them, or 1/8 .. 1/64 (more column
 * blocks, as planner (a) retries when a model's weights do not fit: on BERT-small's q, 16 x 64 x 64
 * on 2 tiles of ipu_small16, 1/8 ran 30,697 cycles where 1/4 was priced at 43,258), each a distinct
 * partition, none that cuts k into slices (the model has no price for the slices), each fitting the
 * budget; made for the whole tile, since planner (a)'s share is of the whole tile. */
enum { LCS_SHARES = 5 };
static size_t lcs_plans(const ts_lower_ipu_params *p, const ts_t10_hw *hw, const t10_op *s, ts_t10_plan *l)
{
    if (p->planner != TS_LOWER_PLANNER_AUTO || s->conv)
        return 0;
    ts_t10_mm mm = {.m = s->M, .k = s->K, .n = s->N, .es = s->half ? 2 : 4};
    size_t n = 0;
    for (uint32_t share = 4, i = 0; i < LCS_SHARES; i++, share *= 2) {
        ts_t10_hw tile = *hw;
        tile.sram_bytes = p->target.sram_bytes * 4 / share; /* the model keeps weights within 1/4 of it */
        ts_t10_plan c;
        ts_t10_mm_lcs(&tile, &mm, &c);
        c.share = share;
        if (s->half)
            f16_cost(hw, &mm, p->target.amp_units_f16, false, &c);
        bool sliced = !s->half && share > 4 && c.rows * (s->K / 2) * 8 > p->target.sram_bytes / share;
        if (c.mem_bytes > hw->sram_bytes || sliced || (n && l[n - 1].fn == c.fn))
            continue;
        l[n++] = c;
    }
    return n;
}

/* Under auto, whether (b)'s plan pl is one of load-compute-store's plans l[0..nl) run by (b)'s code:
 * the same rows and columns per tile, nothing split along k or rotating, or one tile. The model
 * prices the two alike, and (b)'s code for them ran 7-9 % slower than (a)'s (its steps read their
 * addresses from a table; on ipu_small16 with 256 KiB tiles, matmul:m=96,k=96,n=96 on 16 tiles
 * 49,223 cycles against 45,815; matmul:m=64,k=128,n=96 and a 1x1 Conv of 32 channels on 12 x 12
 * on one tile likewise), so (a) takes it. */
static bool same_as_lcs(const ts_t10_plan *pl, const ts_t10_plan *l, size_t nl, const t10_op *s)
{
    if (pl->tiles == 1)
        return true;
    for (size_t i = 0; i < nl && !s->conv && pl->fk == 1 && pl->rot == TS_T10_ROT_NONE; i++)
        if (pl->fm == l[i].fm && pl->fn == l[i].fn)
            return true;
    return false;
}

/* The plans of operator s that fit hw's memory and the code generator takes (with planner split,
 * those in which nothing rotates; under auto, load-compute-store's too, less (b)'s plans that are
 * it, same_as_lcs), priced, into *out (owned; NULL when there are none) and their Pareto set over
 * weight bytes; its size (0: planner (a) lowers s). *all gets every one of those plans, before the
 * Pareto set is taken (owned; NULL, *nall 0 when out of memory). */
static size_t plan_set(const ts_lower_ipu_params *p, const ts_t10_hw *hw, const t10_op *s, ts_t10_plan **out,
                       ts_t10_plan **all, size_t *nall)
{
    *all = NULL;
    *nall = 0;
    ts_t10_mm mm = {.m = s->M, .k = s->K, .n = s->N, .es = s->half ? 2 : 4, .built = s->conv};
    ts_t10_plan *v = NULL, l[LCS_SHARES];
    size_t nv = 0;
    *out = NULL;
    size_t nl = lcs_plans(p, hw, s, l);
    if (ts_t10_mm_plans(hw, &mm, &v, &nv, NULL) != TS_OK)
        nv = 0; /* nothing fits: planner (a) lowers it (and says by how much it is over) */
    if (nl) { /* slots for them */
        ts_t10_plan *w = ts_realloc(v, (nv + nl) * sizeof *v);
        if (!w) {
            ts_free(v);
            return 0;
        }
        v = w;
    }
    size_t k = 0;
    for (size_t j = 0; j < nv; j++)
        if (generable(p, s, &v[j]) && (p->planner != TS_LOWER_PLANNER_SPLIT || v[j].rot == TS_T10_ROT_NONE) &&
            (p->planner != TS_LOWER_PLANNER_AUTO || !same_as_lcs(&v[j], l, nl, s))) {
            if (s->half) /* before conv_cost, which adds to the compute */
                f16_cost(hw, &mm, units16(p, s, &v[j]), s->conv, &v[j]);
            if (s->conv)
                conv_cost(hw, &mm, s, &v[j]);
            if (s->conv && s->taps > 1 && v[j].mem_bytes > hw->sram_bytes) /* its band and image */
                continue;
            v[k++] = v[j];
        }
    for (size_t j = 0; j < nl; j++)
        v[k++] = l[j];
    if (!k) {
        ts_free(v);
        return 0;
    }
    *out = v;
    if ((*all = ts_calloc(k, sizeof **all)) != NULL) { /* every plan, for ts_t10_reconcile_capped */
        memcpy(*all, v, k * sizeof *v);
        *nall = k;
    }
    return ts_t10_pareto_weights(v, k);
}

ts_status lwi_t10_plans(const ts_graph *g, const ts_lower_ipu_params *p, uint64_t budget, ts_t10_plan *plans,
                        uint64_t *total, ts_err *err)
{
    if (total)
        *total = 0;
    size_t nn = ts_graph_node_count(g), nops = 0;
    ts_t10_plan **sets = ts_calloc(nn ? nn : 1, sizeof *sets), **all = ts_calloc(nn ? nn : 1, sizeof *all);
    ts_t10_plan *chosen = ts_calloc(nn ? nn : 1, sizeof *chosen);
    size_t *nall = ts_calloc(nn ? nn : 1, sizeof *nall);
    size_t *nsets = ts_calloc(nn ? nn : 1, sizeof *nsets), *pick = ts_calloc(nn ? nn : 1, sizeof *pick);
    int *node = ts_calloc(nn ? nn : 1, sizeof *node);
    ts_status rc = sets && nsets && pick && node && all && chosen && nall ? TS_OK
                                                                           : ts_err_set(err, TS_ENOMEM, "out of memory planning");
    ts_t10_hw hw = t10_hw(p, budget);
    for (size_t i = 0; i < nn && rc == TS_OK; i++) {
        memset(&plans[i], 0, sizeof plans[i]);
        t10_op s;
        if (!lwi_t10_shape(g, ts_graph_get_node(g, (int)i), &s))
            continue;
        if (p->t10_plan) { /* the caller's choice */
            rc = fixed_plan(p, &hw, &s, &plans[i], err);
            continue;
        }
        size_t k = plan_set(p, &hw, &s, &sets[nops], &all[nops], &nall[nops]);
        if (!k) {
            ts_free(all[nops]);
            all[nops] = NULL;
            nall[nops] = 0;
            continue;
        }
        nsets[nops] = k;
        node[nops++] = (int)i;
    }
    if (rc == TS_OK && nops) {
        /* weights stay for the whole run, the rest only while its operator runs; if even the
         * smallest plans do not fit, take them and let the lowering say what is over */
        bool capped = false;
        if (ts_t10_reconcile((const ts_t10_plan *const *)sets, nsets, nops, budget, pick, total, NULL) != TS_OK &&
            !(capped = ts_t10_reconcile_capped(all, nall, nops, budget, chosen, total))) {
            for (size_t k = 0; k < nops; k++)
                pick[k] = 0;
            if (total)
                *total = 0;
        }
        for (size_t k = 0; k < nops; k++)
            plans[node[k]] = capped ? chosen[k] : sets[k][pick[k]];
    }
    for (size_t k = 0; sets && all && k < nops; k++) {
        ts_free(sets[k]);
        ts_free(all[k]);
    }
    ts_free(sets);
    ts_free(all);
    ts_free(nall);
    ts_free(chosen);
    ts_free(nsets);
    ts_free(pick);
    ts_free(node);
    return rc;
}
