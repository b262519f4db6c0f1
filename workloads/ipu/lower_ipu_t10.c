/* workloads/ipu/lower_ipu_t10.c — planner (b)'s code generation: MatMul, Gemm and 1x1 Conv as T10's
 * compute-shift plans (research/graphcore_ipu.md §4.5, §5; the plans are chosen by
 * lower_ipu_t10_plans.c, the plan space and cost model are plan_t10.h's).
 *
 * A plan fm x fn x fk (ft, rp, rot) puts the output block of rows i, columns j and the k-part l on
 * tile t = (l * fm + i) * fn + j. Each tile holds its slices of A (rows i, its k-range) and of B
 * (its k-range, columns j) and runs ft * rp steps, each a compute superstep (the AMP kernel of
 * lower_ipu_matmul.c on one k-slice of kp, adding to the partial sums of the steps before) followed, but
 * for the last, by a shift superstep per rotating operand (but after the first step, one of them is
 * made in the step's own superstep: t10_steps). A rotating operand is held as rp slices
 * in a ring of rp + 1 slots; in every shift each tile sends the slice it has just used (its front
 * slot) to its predecessor in its ring of ft tiles and receives its successor's into the free slot,
 * so over the steps every slice of the ring passes every tile once. A rotates in rings along j (the
 * fn tiles sharing its rows), B along i; when both rotate (Cannon's skew) tile (i, j) starts with
 * sub-tensor (i + j) mod ft of both. With fk > 1 the k-parts' sums are added in a tree: in level d
 * the tile with l = d (mod 2d) sends its sums to l - d (an exchange superstep), which adds them (a
 * compute superstep). The output stays on the l = 0 tiles, blocked (rows of i, columns of j).
 *
 * Each tile has one AMP routine per kind of step (first, adding, last in f16; the shared-coefficient
 * kernel of lower_ipu_ampk.c where the step's k is whole bodies, else lwi_emit_mm's), which reads the
 * step's addresses and k from a table of six words a step (initial data; lwi_emit_mm's `tab`), so the
 * code does not grow with the steps.
 *
 * Initial placement: A is gathered from where it lies into the plan's layout by lwi_gather (a
 * rotating A: its first rp slices, into the slots), staggered: the holder of a row serves the fn x fk
 * tiles that want it over the rounds, not all in one (the 29 rounds of the matmul of the issue took
 * 66.6 k cycles unstaggered, 11.2 k staggered); B is initial data, already in AMP
 * coefficient blocks per slice (a rotating B: its first slice). Weights are placed by salloc as in
 * planner (a). Sends and receives of one superstep never share an SRAM element (`tile.element_bytes`):
 * the slots of a ring are allocated apart, and apart from A's placement.
 *
 * A 1x1 Conv (no padding) is the product of its output pixels by its input channels by its output
 * channels: its input is gathered channel-major and turned into pixel rows on the tile, its
 * output turned channel-major at the end (conv_rows, t10_conv_out). A larger kernel (a 3x3 Conv) is
 * its im2col held in the tile, k = channel x taps + tap (the ONNX weight's order): a tile of whole
 * output rows gathers the band of input rows they read for the channels of its k-range, pads it on
 * the tile and builds each pixel's row from the padded image by a table of pixel offsets
 * (conv_image_rows); the steps, rotations and tree are the MatMul's. A batch is folded into the
 * pixels, image by image: each block lies in one image and each image's output channels are whole
 * column blocks, so the output is the blocked layout of the batch's planes (tile_of). A Conv
 * another operator reads keeps blocks of whole image rows and at most 16 channels. A strided one is
 * a 1x1 Conv on the subsampled image: a tile of whole output rows gathers their input rows, whole,
 * and picks its pixels by a table of offsets. f16 MatMul/Gemm hold halves in A and B, keep f32
 * partial sums between the steps and round at the last; an f16 Conv reads f32 words (as planner
 * (a)'s), rounds them to halves in its pixel rows, and leaves f32 outputs (so its k may be split).
 *
 * The passes: the plan laid over the tiles (t10_layout), its memory (t10_alloc), B as initial data
 * (t10_place_b), A gathered (t10_gather_a), the steps and the tree (t10_steps), a Conv's output
 * turned (t10_conv_out).
 *
 * What the code generator does not take (the plan is then not offered, lower_ipu_t10_plans.c): a rotating B with rp > 1
 * (its slots would have to lie apart in the static region, whose addresses the first pass does not
 * know) or on a tile whose low memory does not take 128-bit loads (its free slot is dynamic); a
 * rotating A at rp > 1 on tiles of fewer than four SRAM elements; f16 MatMul/Gemm with k split over
 * tiles; MatMul/Gemm of one row, odd k, transA/alpha/beta; grouped Convs, a batch whose blocks straddle
 * images or whose output channels are not whole column blocks, a 1x1 Conv with
 * padding, a larger kernel whose k-ranges or slices are not whole channels (f16 on an odd number of
 * taps: pairs of channels) or with a pad as large as the kernel (planner (a) lowers them).
 */

#include <string.h>

#include "core/alloc.h"
#include "core/half.h"
#include "workloads/ipu/lower_ipu_int.h"

/* ---- the plan over the tiles ---- */

/* The plan laid over the tiles. */
typedef struct t10_gen {
    uint32_t fm, fn, fk, ft, rp, steps;
    bool rota, rotb;
    bool cm; /* output blocks numbered channel-major (a Conv): t = (l * fn + j) * fm + i */
    bool out16; /* the last step rounds the outputs to halves (an f16 MatMul/Gemm; an f16 Conv's are f32) */
    uint64_t rows, cols, kt, kp, M, K, N;
    uint64_t st, wo, wi, hwi; /* a Conv's stride, output row, input row, input pixels */
    uint64_t span;     /* a Conv: input pixels a tile gathers per channel, the most (rows at stride 1) */
    uint64_t taps, kh, kw, hin, pt, pl; /* a Conv's kernel positions (1: 1x1), kernel, input rows, pads */
    uint64_t hb, wp;   /* a larger kernel: the padded image of a block's band, rows and pixels a row */
    uint32_t nimg, nrb; /* a Conv's images, pixel blocks an image (fm / nimg) */
    uint64_t hwo, cin; /* a Conv's output pixels, input channels (not the zero ones), of an image */
    uint32_t U, tn;    /* AMP units (f32 or f16), tiles */
    uint64_t es, per;  /* A and B element bytes, inputs per AMP step */
    uint64_t body;     /* f16 whose kp is whole bodies of the shared kernel: k of a body, the last slice
                        * padded to it (zeros in A's and B's padding); 0 otherwise */
    uint64_t astr;     /* k of a row of A as held: kp in a slot, else its whole k-range (padded) */
} t10_gen;

static uint32_t tile_of(const t10_gen *G, uint32_t i, uint32_t j, uint32_t l)
{
    /* a Conv: image i / nrb's planes (its output channels) of block j, its pixel block i % nrb, as the
     * blocked layout of the batch's planes numbers them */
    return G->cm ? ((l * G->nimg + i / G->nrb) * G->fn + j) * G->nrb + i % G->nrb : (l * G->fm + i) * G->fn + j;
}

/* Rows, columns (valid outputs) of block (i, j); k-range of part l. */
static uint64_t rows_of(const t10_gen *G, uint32_t i) { return i * G->rows < G->M ? umin(G->rows, G->M - i * G->rows) : 0; }
static uint64_t cols_of(const t10_gen *G, uint32_t j) { return j * G->cols < G->N ? umin(G->cols, G->N - j * G->cols) : 0; }

/* k-slice sigma of part l: its first k and its length (0 past the end of k). */
static uint64_t slice_k(const t10_gen *G, uint32_t l, uint32_t sigma, uint64_t *ks)
{
    uint64_t k0 = (uint64_t)l * G->kt, k1 = umin(G->K, k0 + G->kt);
    *ks = k0 + (uint64_t)sigma * G->kp;
    return *ks < k1 ? umin(G->kp, k1 - *ks) : 0;
}

/* The k the kernel runs for a slice of kv: kv, or (f16, kp whole bodies) kv rounded up to whole
 * bodies, the padding zero in A and B, so every step takes the shared-coefficient kernel. */
static uint64_t kc_of(const t10_gen *G, uint64_t kv)
{
    return G->body && kv ? umin(G->kp, ts_geom_cdiv(kv, G->body) * G->body) : kv;
}

/* The sub-tensor tile (i, j) holds first: its position in its ring (both rings with Cannon's skew). */
static uint32_t base_of(const t10_gen *G, uint32_t i, uint32_t j)
{
    if (G->rota && G->rotb)
        return (i % G->ft + j % G->ft) % G->ft;
    return G->rota ? j % G->ft : G->rotb ? i % G->ft : 0;
}

/* The slice tile (i, j) computes on in step s. */
static uint32_t sigma_of(const t10_gen *G, uint32_t i, uint32_t j, uint32_t s)
{
    return (base_of(G, i, j) * G->rp + s) % G->steps;
}

/* One shift of a ring: every tile t < n with words[t] > 0 receives into `to` from nxt[t] and sends
 * `from[t]` to prv[t]; one exchange superstep. */
static void shift(lw *L, uint32_t n, const uint32_t *prv, const uint32_t *nxt, const uint64_t *from, uint64_t to,
                  const uint64_t *words)
{
    L->xring = true; /* a tile sends where it receives: its neighbours' numbers kept (xset) */
    for (uint32_t t = 0; t < n; t++)
        if (words[t]) /* receivers arm first */
            lwi_recv(L, t, to, nxt[t], words[t]);
    for (uint32_t t = 0; t < n; t++)
        if (words[t]) {
            lwi_send(L, t, from[t], prv[t], words[t]);
            S(t, RXWAIT, 0, 0, 0);
        }
    L->xring = false;
    lwi_sync_all(L);
}

/* Element-aligned span of [a, a + bytes) (of at least one byte). */
static void span(const lw *L, uint64_t a, uint64_t bytes, uint64_t *out)
{
    uint64_t eb = lwi_element_bytes(L);
    out[0] = a / eb * eb;
    out[1] = ts_geom_cdiv(a + (bytes ? bytes : 1), eb) * eb;
}

/* Coefficient blocks of B for columns [c0, c0 + cols) and k [ks, ks + kc): [group][pair][unit][2],
 * packed with kc (the kernel's step), zero past N and past the slice's valid kv. On more than 8 f16
 * units a group's 16-byte blocks (two units' 4 halves of an input step) lie where the worker that
 * loads them reads them (lwi_amp_wchunk). */
static void build_b(lw *L, const t10_op *s, int bid, float *w, uint32_t U, uint64_t c0, uint64_t cols, uint64_t ks,
                    uint64_t kv, uint64_t kc)
{
    uint32_t per = s->half ? 4 : 2; /* f16: [group][step][unit][4] halves */
    uint16_t *w16 = (uint16_t *)w;
    /* a Conv whose channels are padded: W[M][creal][kh][kw], zero for the channels past creal */
    const uint64_t kb = s->conv && s->creal ? s->creal * s->taps : s->K;
    for (uint64_t q = 0; q < cols / U; q++)
        for (uint64_t k2 = 0; k2 < kc / per; k2++)
            for (uint32_t u = 0; u < U; u++)
                for (uint32_t jj = 0; jj < per; jj++) {
                    uint64_t o = c0 + q * U + u, k = ks + per * k2 + jj, at = ((q * (kc / per) + k2) * U + u) * per + jj;
                    uint64_t ch;
                    if (U > 8 && lwi_amp_wchunk(L->workers, U, kc / per, k2, u / 2, &ch))
                        at = (q * (kc / per) * U / 2 + ch) * 8 + (u % 2) * 4 + jj;
                    float v = o < s->N && k < ks + kv && k < kb
                                  ? ts_fill_value_f32(s->B, bid, s->tb ? o * kb + k : k * s->N + o)
                                  : 0.0f;
                    if (s->half)
                        w16[at] = ts_f32_to_f16(v);
                    else
                        w[at] = v;
                }
}

/* A 1x1 Conv's A: tile (i, j, l) gathers channels [l kt, ..) of its pixels [i rows, ..) of x
 * (channel-major, rows pixels a channel, f32 words) into cbuf, then its workers turn them into rows
 * of pixels at dst ([rows][dk]; pixels over the workers, overlapping blocks write the same values;
 * f16: each pair of channels rounded into one word of halves, as planner (a)'s im2col row). With
 * slot >= 0 (a rotating A) only the slice the tile holds in that slot, into the slot. */
/* f16 pixel rows four inputs at a time: four 32-bit loads, one f32v4tof16 (in a bundle with the next
 * quad's first load) and one 64-bit store, 5 issues for 4 inputs where a word of two takes 3
 * (f32v2tof16, a 32-bit store); where every pixel's row starts 8-byte aligned. */
static bool rows_quad(const t10_gen *G, uint64_t dst, uint64_t dk)
{
    return G->es == 2 && dst % 8 == 0 && dk % 4 == 0;
}

/* A bundle on tile t's workers: a main-pipeline instruction, then an auxiliary one. */
#define BUN(t, mop, ma, mb, mc, xop, xa, xb, xc)                                                           \
    do {                                                                                                   \
        W(t, BUNDLE, 0, 0, 0);                                                                             \
        W(t, mop, ma, mb, mc);                                                                             \
        W(t, xop, xa, xb, xc);                                                                             \
        W(t, BUNDLE_END, 0, 0, 0);                                                                         \
    } while (0)

/* A larger kernel's block i (r output pixels, whole rows): the input rows [ya, yb) it reads and the
 * row of the padded image ya is (the padding rows above it). */
static uint64_t conv_band(const t10_gen *G, uint32_t i, uint64_t r, uint64_t *ya, uint64_t *yb)
{
    uint64_t ib = i % G->nrb; /* in its image */
    int64_t lo = (int64_t)(ib * G->rows / G->wo * G->st) - (int64_t)G->pt;
    int64_t hi = (int64_t)((ib * G->rows / G->wo + r / G->wo - 1) * G->st + G->kh) - (int64_t)G->pt;
    *ya = lo > 0 ? (uint64_t)lo : 0;
    *yb = hi < (int64_t)G->hin ? (uint64_t)hi : G->hin;
    return (uint64_t)((int64_t)*ya - lo);
}

/* A larger kernel's rows of pixels on tile t (block i of r pixels, nch channels of its band gathered
 * at src, G->span words a channel): the band copied into a padded image at img (channels over the
 * workers; the padding written as zeros), then each pixel's row of nch x taps inputs at dst ([r][dk],
 * k = channel x taps + tap) read from the image at the pixel's offset (a table shared by the blocks)
 * plus each tap's (immediates): a block of channels (two for f16 on an odd number of taps, whose
 * pairs of k are rounded into one word of halves) a repeat of 2 issues per input. */
static void conv_image_rows(lw *L, const t10_gen *G, uint32_t t, uint32_t i, uint64_t ncr, uint64_t nch,
                            uint64_t src, uint64_t img, uint64_t tab, uint64_t dst, uint64_t dk)
{
    uint64_t r = rows_of(G, i), ya, yb, top = conv_band(G, i, r, &ya, &yb), nbt = yb - ya;
    uint64_t hbi = (r / G->wo - 1) * G->st + G->kh, bot = hbi - top - nbt, pr = G->wp - G->wi - G->pl;
    size_t entry;
    if (nch > ncr) { /* the padding channels past the input's: zero planes, words over the workers */
        uint64_t z = (nch - ncr) * G->hb * G->wp;
        uint32_t zw = (uint32_t)ts_geom_cdiv(z, L->workers);
        entry = LWT(t).wrk.n;
        lwi_emit_start_row(L, t, (uint32_t)z, zw);
        W(t, SHLI, RM(3), RM(1), 2);
        W(t, SETZI, RM(4), (int32_t)(img + ncr * G->hb * G->wp * 4), 0);
        W(t, ADD, RM(3), RM(3), RM(4));
        W(t, SETZI, RM(5), (int32_t)zw, 0);
        W(t, SETZI, RA(1), 0, 0);
        W(t, RPT, RM(5), 1, 0);
        W(t, ST32STEP, RA(1), RM(3), 4);
        W(t, EXIT, 0, 0, 0);
        lwi_run_all(L, t, entry);
    }
    if (ncr) { /* the band's channels into the image */
        uint32_t rwc = (uint32_t)ts_geom_cdiv(ncr, L->workers);
        entry = LWT(t).wrk.n;
        lwi_emit_start_row(L, t, (uint32_t)ncr, rwc);
        W(t, MULI, RM(2), RM(1), (int32_t)(G->span * 4));
        W(t, SETZI, RM(4), (int32_t)src, 0);
        W(t, ADD, RM(2), RM(2), RM(4));
        W(t, MULI, RM(3), RM(1), (int32_t)(G->hb * G->wp * 4));
        W(t, SETZI, RM(4), (int32_t)img, 0);
        W(t, ADD, RM(3), RM(3), RM(4));
        W(t, SETZI, RM(5), (int32_t)rwc - 1, 0);
        W(t, SETZI, RA(1), 0, 0);
        /* f16: the band's rows copied 64 bits at a time where its pixels and the image's lie 8-byte
         * aligned (the band's rows and channels of even length, the image's rows too, their first
         * pixel after the pad aligned): 1 issue a pixel, not 2 */
        bool w64 = G->es == 2 && G->wi % 2 == 0 && G->span % 2 == 0 && G->wp % 2 == 0 && src % 8 == 0 &&
                   (img + G->pl * 4) % 8 == 0;
        W(t, SETZI, RM(8), (int32_t)(w64 ? G->wi / 2 : G->wi), 0);
        W(t, SETZI, RM(9), (int32_t)(top * G->wp), 0);
        W(t, SETZI, RM(10), (int32_t)(bot * G->wp), 0);
        size_t ch = W(t, RPT, RM(9), 1, 0); /* the padding rows above the band */
        W(t, ST32STEP, RA(1), RM(3), 4);
        W(t, SETZI, RM(6), (int32_t)nbt - 1, 0);
        size_t row = LWT(t).wrk.n;
        for (uint64_t q = 0; q < G->pl; q++)
            W(t, ST32STEP, RA(1), RM(3), 4);
        W(t, RPT, RM(8), 2, 0);
        if (w64) {
            W(t, LD64STEP, RA(2), RM(2), 8);
            W(t, ST64STEP, RA(2), RM(3), 8);
        } else {
            W(t, LD32STEP, RA(0), RM(2), 4);
            W(t, ST32STEP, RA(0), RM(3), 4);
        }
        for (uint64_t q = 0; q < pr; q++)
            W(t, ST32STEP, RA(1), RM(3), 4);
        W(t, BRNZDEC, RM(6), (int32_t)row, 0);
        W(t, RPT, RM(10), 1, 0); /* below it */
        W(t, ST32STEP, RA(1), RM(3), 4);
        W(t, ADDI, RM(2), RM(2), (int32_t)((G->span - nbt * G->wi) * 4));
        W(t, ADDI, RM(3), RM(3), (int32_t)((G->hb - hbi) * G->wp * 4));
        W(t, BRNZDEC, RM(5), (int32_t)ch, 0);
        W(t, EXIT, 0, 0, 0);
        lwi_run_all(L, t, entry);
    }
    /* f16 in quads (rows_quad): a block of channels whose k is a multiple of 4 */
    const uint64_t bq = G->taps % 2 ? 4 : G->taps % 4 ? 2 : 1;
    const bool quad = rows_quad(G, dst, dk) && nch % bq == 0;
    const uint64_t bc = quad ? bq : G->es == 2 && G->taps % 2 ? 2 : 1, blk = bc * G->taps, cst = G->hb * G->wp * 4;
    const uint64_t kv = nch * G->taps;
    uint32_t rw = (uint32_t)ts_geom_cdiv(r, L->workers);
    entry = LWT(t).wrk.n;
    /* $m2 := tab + 4 $m1 (the first pixel's offset); $m3 := dst + $m1 dk es; $m7 := img */
    lwi_emit_start_row(L, t, (uint32_t)r, rw);
    W(t, SHLI, RM(2), RM(1), 2);
    W(t, SETZI, RM(4), (int32_t)tab, 0);
    W(t, ADD, RM(2), RM(2), RM(4));
    W(t, MULI, RM(3), RM(1), (int32_t)(dk * G->es));
    W(t, SETZI, RM(4), (int32_t)dst, 0);
    W(t, ADD, RM(3), RM(3), RM(4));
    W(t, SETZI, RM(1), (int32_t)rw - 1, 0);
    W(t, SETZI, RM(5), (int32_t)(kv / blk), 0);
    W(t, SETZI, RM(7), (int32_t)img, 0);
    size_t px = W(t, LD32STEP, RM(6), RM(2), 4);
    W(t, ADD, RM(6), RM(6), RM(7));
#define TAP_OFF(k) (int32_t)((k) / G->taps * cst + ((k) % G->taps / G->kw * G->wp + (k) % G->taps % G->kw) * 4)
    if (quad) { /* k .. k + 3 rounded into two words (rows_quad): 5 issues a quad */
        size_t rp = W(t, RPT, RM(5), 0, 0), b0 = LWT(t).wrk.n;
        for (uint64_t k = 0; k < blk; k += 4) {
            if (k)
                W(t, BUNDLE, 0, 0, 0);
            W(t, LD32, RA(1), RM(6), TAP_OFF(k + 1));
            if (k) {
                W(t, F32V4TOF16, RA(4), RA(0), 0);
                W(t, BUNDLE_END, 0, 0, 0);
            }
            W(t, LD32, RA(2), RM(6), TAP_OFF(k + 2));
            W(t, LD32, RA(3), RM(6), TAP_OFF(k + 3));
            W(t, LD32, RA(0), RM(6), TAP_OFF(k));
            if (k)
                W(t, ST64STEP, RA(4), RM(3), 8);
        }
        BUN(t, ADDI, RM(6), RM(6), (int32_t)(bc * cst), F32V4TOF16, RA(4), RA(0), 0);
        W(t, ST64STEP, RA(4), RM(3), 8);
        if (rp < LWT(t).wrk.n)
            LWT(t).wrk.v[rp].a[1] = (int32_t)(LWT(t).wrk.n - b0);
    } else if (G->es == 2) { /* k and k + 1 rounded into one word, the rounding of each word in a bundle
                              * with the next word's first load, its store after the second: 3 issues a word */
        size_t rp = W(t, RPT, RM(5), 0, 0), b0 = LWT(t).wrk.n;
        W(t, LD32, RA(1), RM(6), TAP_OFF(1));
        W(t, LD32, RA(0), RM(6), TAP_OFF(0));
        for (uint64_t k = 2; k < blk; k += 2) {
            W(t, BUNDLE, 0, 0, 0);
            W(t, LD32, RA(1), RM(6), TAP_OFF(k + 1));
            W(t, F32V2TOF16, RA(4), RA(0), 0);
            W(t, BUNDLE_END, 0, 0, 0);
            W(t, LD32, RA(0), RM(6), TAP_OFF(k));
            W(t, ST32STEP, RA(4), RM(3), 4);
        }
        W(t, BUNDLE, 0, 0, 0);
        W(t, ADDI, RM(6), RM(6), (int32_t)(bc * cst));
        W(t, F32V2TOF16, RA(4), RA(0), 0);
        W(t, BUNDLE_END, 0, 0, 0);
        W(t, ST32STEP, RA(4), RM(3), 4);
        if (rp < LWT(t).wrk.n) /* the body's length, its bundles' braces included */
            LWT(t).wrk.v[rp].a[1] = (int32_t)(LWT(t).wrk.n - b0);
    } else {
        W(t, RPT, RM(5), (int32_t)(2 * blk + 1), 0);
        for (uint64_t k = 0; k < blk; k++) {
            W(t, LD32, RA(0), RM(6), TAP_OFF(k));
            W(t, ST32STEP, RA(0), RM(3), 4);
        }
        W(t, ADDI, RM(6), RM(6), (int32_t)(bc * cst));
    }
#undef TAP_OFF
    W(t, ADDI, RM(3), RM(3), (int32_t)((dk - kv) * G->es));
    W(t, BRNZDEC, RM(1), (int32_t)px, 0);
    W(t, EXIT, 0, 0, 0);
    lwi_run_all(L, t, entry);
}

static ts_status conv_rows(lw *L, const t10_gen *G, int x, uint32_t tn, lw_scr *sc, uint64_t cbuf, uint64_t img,
                           int slot, uint64_t dst, uint64_t dk)
{
    for (uint32_t t = 0; t < L->T; t++)
        sc->lo[t] = sc->hi[t] = 0, sc->nr[t] = 0;
    for (uint32_t l = 0; l < G->fk; l++)
        for (uint32_t i = 0; i < G->fm; i++)
            for (uint32_t j = 0; j < G->fn; j++) {
                uint32_t t = tile_of(G, i, j, l);
                uint64_t ks, kv;
                if (slot >= 0)
                    kv = slice_k(G, l, base_of(G, i, j) * G->rp + (uint32_t)slot, &ks);
                else
                    kv = slice_k(G, l, 0, &ks) ? umin(G->K, (uint64_t)l * G->kt + G->kt) - ks : 0;
                uint64_t r = rows_of(G, i);
                if (!kv || !r)
                    continue;
                if (G->taps > 1) { /* the band of input rows the block reads, whole */
                    uint64_t ya, yb;
                    conv_band(G, i, r, &ya, &yb);
                    sc->lo[t] = (i / G->nrb * G->cin + ks / G->taps) * G->hwi + ya * G->wi;
                    sc->hi[t] = sc->lo[t] + (yb - ya) * G->wi;
                    /* the channels that are not padding (the zero ones are written into the image) */
                    sc->nr[t] = ks / G->taps < G->cin ? (uint32_t)umin(kv / G->taps, G->cin - ks / G->taps) : 0;
                    continue;
                }
                if (G->st > 1) { /* input rows i rows / wo st .. of the block's last output row, whole */
                    sc->lo[t] = (i / G->nrb * G->cin + ks) * G->hwi + i % G->nrb * G->rows / G->wo * G->st * G->wi;
                    sc->hi[t] = sc->lo[t] + lwi_conv_span(r, G->wo, G->st, G->wi);
                } else {
                    sc->lo[t] = G->nimg > 1 ? (i / G->nrb * G->cin + ks) * G->hwi + i % G->nrb * G->rows
                                            : ks * G->M + i * G->rows;
                    sc->hi[t] = sc->lo[t] + r;
                }
                sc->nr[t] = (uint32_t)kv;
            }
    L->into = cbuf;
    L->stagger = true; /* a channel's holder serves all its pixel blocks: not all in one round */
    L->balance = true;
    /* the pieces of a transfer that do not follow on where they land (a band's or a strided block's
     * rows from a holder of fewer rows), and those the tile holds itself, copied by its workers:
     * by its supervisor a round of layer4.0.downsample (resnet50:batch=4) took 6,380 cycles */
    L->wlocal = true;
    /* the channels a holder sends a tile that lie one after another in its memory (a blocked
     * input whose pixel block is the tile's) go in one send */
    bool co = L->coalesce;
    L->coalesce = L->onedst = true; /* and a piece a channel costs its holder 2 instructions, not 3 */
    /* the tiles that read the same block of a holder (the column blocks of a pixel block whose
     * k-ranges meet) take it in one broadcast where that costs fewer cycles */
    L->bcast = true;
    /* a strided 1x1 reads only every st-th input row: the workers copy only those of staged pieces
     * (layer4.0.downsample in resnet50:batch=4: 22 rounds of 1,219 cycles of copying) */
    if (G->st > 1 && G->taps == 1)
        L->rows_w = G->wi, L->rows_st = G->st, L->rows_span = G->span;
    ts_status rc = lwi_gather(L, x, tn, sc->lo, sc->hi, sc->nr,
                              G->st > 1 || G->taps > 1 || G->nimg > 1 ? G->hwi : G->M, G->span, false, sc->where);
    L->rows_w = L->rows_st = L->rows_span = 0;
    L->coalesce = co;
    L->onedst = L->bcast = false;
    L->into = 0;
    L->stagger = L->balance = L->wlocal = false;
    if (rc != TS_OK)
        return rc;
    uint64_t tab = 0; /* strided: the byte offset of each output pixel's input in a block's rows (a
                       * larger kernel: of its first tap in the padded image) */
    if (G->st > 1 || G->taps > 1) {
        uint32_t *bv = ts_calloc(G->rows, 4);
        if (!bv)
            return ts_err_set(L->err, TS_ENOMEM, "out of memory lowering a Conv");
        uint64_t wr = G->taps > 1 ? G->wp : G->wi;
        for (uint64_t q = 0; q < G->rows; q++)
            bv[q] = (uint32_t)((q / G->wo * G->st * wr + q % G->wo * G->st) * 4);
        tab = lwi_stable(L, bv, G->rows * 4, tn, &rc);
        ts_free(bv);
        if (rc != TS_OK)
            return rc;
    }
    for (uint32_t l = 0; l < G->fk && G->taps > 1; l++)
        for (uint32_t i = 0; i < G->fm; i++)
            for (uint32_t j = 0; j < G->fn; j++) {
                uint32_t t = tile_of(G, i, j, l);
                uint64_t ks, kv = slot >= 0 ? slice_k(G, l, base_of(G, i, j) * G->rp + (uint32_t)slot, &ks)
                                  : slice_k(G, l, 0, &ks) ? umin(G->K, (uint64_t)l * G->kt + G->kt) - ks
                                                          : 0;
                if (kv && rows_of(G, i))
                    conv_image_rows(L, G, t, i, sc->nr[t], kv / G->taps, sc->where[t], img, tab, dst, dk);
            }
    for (uint32_t t = 0; t < tn && G->taps == 1; t++) {
        if (!sc->nr[t])
            continue;
        uint64_t kv = sc->nr[t], src = sc->where[t], cs = G->span * 4; /* a channel's stride in cbuf */
        uint64_t r = G->st > 1 ? (sc->hi[t] - sc->lo[t] - G->wi) / (G->st * G->wi) * G->wo + G->wo
                               : sc->hi[t] - sc->lo[t];
        uint32_t rw = (uint32_t)ts_geom_cdiv(r, L->workers);
        size_t entry = LWT(t).wrk.n;
        /* $m1 := first pixel; $m2 := src + 4 $m1 (channel 0 of it), strided: its entry in tab;
         * $m3 := dst + $m1 dk es */
        lwi_emit_start_row(L, t, (uint32_t)r, rw);
        W(t, SHLI, RM(2), RM(1), 2);
        W(t, SETZI, RM(4), (int32_t)(tab ? tab : src), 0);
        W(t, ADD, RM(2), RM(2), RM(4));
        W(t, MULI, RM(3), RM(1), (int32_t)(dk * G->es));
        W(t, SETZI, RM(4), (int32_t)dst, 0);
        W(t, ADD, RM(3), RM(3), RM(4));
        W(t, SETZI, RM(1), (int32_t)rw - 1, 0);
        const bool quad = rows_quad(G, dst, dk) && kv % 4 == 0;
        W(t, SETZI, RM(5), (int32_t)(quad ? kv / 4 - 1 : G->es == 2 ? kv / 2 - 1 : kv), 0);
        size_t px;
        if (tab) { /* $m6 := src + the pixel's offset; $m2 steps through tab */
            W(t, SETZI, RM(7), (int32_t)src, 0);
            px = W(t, LD32STEP, RM(6), RM(2), 4);
            W(t, ADD, RM(6), RM(6), RM(7));
        } else
            px = W(t, MOV, RM(6), RM(2), 0);
        if (quad) { /* channels c .. c + 3 rounded into two words (rows_quad): 5 issues a quad */
            W(t, LD32, RA(1), RM(6), (int32_t)cs);
            W(t, LD32, RA(2), RM(6), (int32_t)(2 * cs));
            W(t, LD32, RA(3), RM(6), (int32_t)(3 * cs));
            W(t, LD32STEP, RA(0), RM(6), (int32_t)(4 * cs));
            W(t, RPT, RM(5), 8, 0); /* the quads but the last; its braces count */
            BUN(t, LD32, RA(1), RM(6), (int32_t)cs, F32V4TOF16, RA(4), RA(0), 0);
            W(t, LD32, RA(2), RM(6), (int32_t)(2 * cs));
            W(t, LD32, RA(3), RM(6), (int32_t)(3 * cs));
            W(t, LD32STEP, RA(0), RM(6), (int32_t)(4 * cs));
            W(t, ST64STEP, RA(4), RM(3), 8);
            W(t, F32V4TOF16, RA(4), RA(0), 0);
            W(t, ST64STEP, RA(4), RM(3), 8);
        } else if (G->es == 2) { /* channels c and c + 1 of the pixel rounded into one word, the rounding of
                           * each word in a bundle with the next word's first load: 3 issues a word */
            W(t, LD32, RA(1), RM(6), (int32_t)cs);
            W(t, LD32STEP, RA(0), RM(6), (int32_t)(2 * cs));
            W(t, RPT, RM(5), 6, 0); /* the words but the last; its braces count */
            W(t, BUNDLE, 0, 0, 0);
            W(t, LD32, RA(1), RM(6), (int32_t)cs);
            W(t, F32V2TOF16, RA(4), RA(0), 0);
            W(t, BUNDLE_END, 0, 0, 0);
            W(t, LD32STEP, RA(0), RM(6), (int32_t)(2 * cs));
            W(t, ST32STEP, RA(4), RM(3), 4);
            W(t, F32V2TOF16, RA(4), RA(0), 0);
            W(t, ST32STEP, RA(4), RM(3), 4);
        } else {
            W(t, RPT, RM(5), 2, 0);
            W(t, LD32STEP, RA(0), RM(6), (int32_t)cs);
            W(t, ST32STEP, RA(0), RM(3), 4);
        }
        if (!tab)
            W(t, ADDI, RM(2), RM(2), 4);
        W(t, ADDI, RM(3), RM(3), (int32_t)((dk - kv) * G->es));
        W(t, BRNZDEC, RM(1), (int32_t)px, 0);
        W(t, EXIT, 0, 0, 0);
        lwi_run_all(L, t, entry);
    }
    return TS_OK;
}

/* ---- the passes ---- */

/* A plan's memory, the same addresses on its tiles. */
typedef struct t10_mem {
    uint64_t av[1][2];     /* A's placement, element-aligned: it sends while the slots receive */
    uint64_t aslot[17];    /* a rotating A: its ring of rp + 1 slots of rows x kp */
    uint64_t aslot_b;      /* bytes of a slot */
    uint64_t abuf;         /* A held still: its whole k-range, rows x kt */
    uint64_t bslot_b;      /* bytes of a slice of B, cols x kp as coefficient blocks */
    uint64_t bw;           /* B held still: all its slices (initial data) */
    uint64_t bslot[2];     /* a rotating B: its first slice (initial data) and a free slot */
    uint64_t baddr;        /* the bias (initial data) */
    uint64_t ptab;         /* per step, the kernel's a, w, out, acc, bias and kp (initial data) */
    uint64_t ne0;          /* steps with work on the l = 0 tiles */
    uint32_t fin;          /* the sum buffer written last */
    uint64_t obuf[2];      /* the partial sums: two buffers, a step adds the one to the other */
    uint64_t yout;         /* the output: a Conv's channel-major copy, or f16's halves */
} t10_mem;

/* What the steps keep per tile. */
typedef struct t10_run {
    int *cur;              /* the sum buffer written last; -1 before the first step */
    uint64_t *done;        /* steps computed */
    uint32_t *par;         /* per step: the kernel's six words */
    size_t *ent;           /* per kind of step: its routine + 1 */
    uint32_t *prv, *nxt;   /* a shift's predecessor and successor in the ring */
    uint64_t *from, *words;
    bool unshared;         /* a step on more than 8 units that the shared kernel does not take */
} t10_run;

/* Node n as planner (b) takes it, laid out by its plan; unsupported if the code generator does not
 * take the plan. */
static ts_status t10_layout(lw *L, const ts_graph_node *n, const ts_t10_plan *pl, t10_op *s, t10_gen *G)
{
    if (!lwi_t10_shape(L->g, n, s))
        return lwi_unsupported(L, n, "a compute-shift plan for this MatMul/Gemm");
    int x = n->in[0];
    if (!L->pl[x].ntiles)
        return lwi_unsupported(L, n, "an input that is not an activation or a graph input");
    *G = (t10_gen){.fm = pl->fm, .fn = pl->fn, .fk = pl->fk, .ft = pl->ft, .rp = pl->rp, .steps = pl->ft * pl->rp,
                   .rota = pl->rot & TS_T10_ROT_A, .rotb = pl->rot & TS_T10_ROT_B, .rows = pl->rows,
                   .cols = pl->cols, .kt = pl->kt, .kp = pl->kp, .M = s->M, .K = s->K, .N = s->N, .cm = s->conv,
                   .out16 = s->half && !s->conv, .st = s->st ? s->st : 1, .wo = s->wo, .wi = s->wi,
                   .hwi = s->hwi};
    /* a strided Conv's tile reads its output rows' input rows, whole; a larger kernel's their band */
    G->span = G->st > 1 ? lwi_conv_span(G->rows, G->wo, G->st, G->wi) : G->rows;
    G->taps = s->conv && s->taps ? s->taps : 1;
    G->nimg = s->conv && s->nimg ? (uint32_t)s->nimg : 1;
    G->nrb = G->fm / G->nimg;
    G->hwo = s->M / G->nimg;
    G->cin = s->conv && s->creal ? s->creal : s->K / G->taps;
    if (G->taps > 1) {
        G->kh = s->kh, G->kw = s->kw, G->hin = s->hin, G->pt = s->pt, G->pl = s->pl;
        G->span = lwi_conv_band(G->rows, G->wo, G->st, G->kh, G->hin, G->wi);
        G->hb = (G->rows / G->wo - 1) * G->st + G->kh;
        G->wp = G->wi + s->pl + s->pr;
    }
    uint32_t wide = lwi_t10_wide(L->p, s, G->cols, G->kp);
    G->U = wide ? wide : s->half ? L->units16 : L->units;
    G->tn = G->fm * G->fn * G->fk;
    G->es = s->half ? 2 : 4;
    G->per = s->half ? 4 : 2;
    uint32_t sets, issues, ptrs;
    if (s->half && L->p->target.load_latency <= L->workers && L->p->target.load_bytes >= 16 &&
        ts_t10_amp_body(L->workers, G->U, &sets, &issues, &ptrs) && G->kp % (sets * G->per) == 0 &&
        (G->rota || G->steps * G->kp <= G->kt || L->pl[x].chunk <= G->K || s->conv)) /* ts_t10_pads_a */
        G->body = sets * G->per;
    G->astr = G->rota ? G->kp : G->body ? (G->steps * G->kp > G->kt ? G->steps * G->kp : G->kt) : G->kt;
    if (G->tn > L->T || G->cols % G->U || G->kp % G->per || (G->rotb && G->rp != 1) || (G->out16 && G->fk > 1) ||
        ((G->st > 1 || G->taps > 1) && (G->rows % G->wo || !G->rows)) ||
        (G->nimg > 1 && (G->fm % G->nimg || G->hwo % G->rows || G->nrb * G->rows != G->hwo || G->N % G->cols ||
                         G->fn * G->cols != G->N)) ||
        (G->taps > 1 && (G->kt % ((s->half && G->taps % 2 ? 2 : 1) * G->taps) ||
                         (G->kp % ((s->half && G->taps % 2 ? 2 : 1) * G->taps) &&
                          !(G->steps == 1 && G->fk == 1 && G->body && G->kp > G->kt)))))
        return lwi_unsupported(L, n, "this compute-shift plan");
    if (G->out16 != (L->pl[x].es == 2)) /* an f16 Conv reads f32 words, as planner (a)'s */
        return lwi_unsupported(L, n, G->out16 ? "an f16 input held in f32 words" : "an f16 input held as halves");
    return TS_OK;
}

/* The memory. A: a ring of rp + 1 slots of rows x kp, or the whole k-range rows x kt; in a shift
 * the front slot sends and the one before it in the ring receives: neighbouring slots (and the last
 * and the first) lie in different elements. B: its slices of cols x kp as coefficient blocks, all
 * (still) or the first and a free slot. The partial sums: two buffers, padded to whole worker
 * blocks for the tree's adds; the last written stays as the output unless a Conv's or f16's is
 * copied out. */
static ts_status t10_alloc(lw *L, const ts_graph_node *n, const t10_gen *G, const t10_op *s, int x, t10_mem *mem)
{
    const lw_place *P = &L->pl[x];
    const uint64_t es = G->es, Wk = L->workers;
    *mem = (t10_mem){.aslot_b = G->rows * G->kp * es, .bslot_b = G->cols * G->kp * es};
    span(L, P->addr, P->chunk * P->es, mem->av[0]);
    if (G->rota) {
        if (G->rp > 16)
            return lwi_unsupported(L, n, "a rotating pace above 16");
        for (uint32_t k = 0; k <= G->rp; k++) { /* the free slot rp takes no part in the gather */
            uint64_t sv[3][2];
            size_t nav = 0;
            if (k < G->rp)
                memcpy(sv[nav++], mem->av[0], sizeof sv[0]);
            if (k)
                span(L, mem->aslot[k - 1], mem->aslot_b, sv[nav++]);
            if (k && k == G->rp)
                span(L, mem->aslot[0], mem->aslot_b, sv[nav++]);
            mem->aslot[k] = lwi_talloc_apart(L, mem->aslot_b, (const uint64_t(*)[2])sv, nav);
        }
    } else
        mem->abuf = lwi_talloc_apart(L, G->rows * G->astr * es, (const uint64_t(*)[2])mem->av, 1);
    if (G->rotb) {
        mem->bslot[0] = lwi_salloc(L, mem->bslot_b);
        uint64_t bsp[1][2];
        span(L, mem->bslot[0], mem->bslot_b, bsp[0]);
        mem->bslot[1] = lwi_talloc_apart(L, mem->bslot_b, (const uint64_t(*)[2])bsp, 1);
    } else
        mem->bw = lwi_salloc(L, G->steps * mem->bslot_b);
    mem->baddr = s->C ? lwi_salloc(L, G->cols * 4) : 0;
    mem->ptab = lwi_salloc(L, (uint64_t)G->steps * 24);
    uint64_t ks;
    for (uint32_t sg = 0; sg < G->steps; sg++)
        mem->ne0 += slice_k(G, 0, sg, &ks) > 0;
    mem->fin = (uint32_t)((mem->ne0 - 1) % 2);
    bool two = G->steps > 1 || G->fk > 1;
    /* whole worker blocks; of pairs where the tree adds them 64 bits at a time */
    uint64_t blk = G->fk > 1 ? 2 * Wk : Wk, obytes = ts_geom_cdiv(G->rows * G->cols, blk) * blk * 4;
    mem->yout = s->conv || s->half ? lwi_alloc(L, G->rows * G->cols * (s->conv ? 4 : es)) : 0;
    if (!G->out16 || two)
        mem->obuf[mem->fin] = s->conv || s->half ? lwi_talloc_apart(L, obytes, NULL, 0) : lwi_alloc(L, obytes);
    if (two)
        mem->obuf[1 - mem->fin] = lwi_talloc_apart(L, obytes, NULL, 0);
    return TS_OK;
}

/* The initial data: B's coefficient blocks (a rotating B: each tile's first slice) and the bias. */
static ts_status t10_place_b(lw *L, const ts_graph_node *n, const t10_gen *G, const t10_op *s, const t10_mem *mem)
{
    if (L->measure)
        return TS_OK;
    const uint64_t bslot_b = mem->bslot_b;
    float *w = ts_calloc(ts_geom_cdiv(bslot_b, 4) + G->cols + 1, 4);
    if (!w)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory for the weights of '%s'", n->name);
    ts_status rc = TS_OK;
    uint64_t ks;
    for (uint32_t l = 0; l < G->fk && rc == TS_OK; l++)
        for (uint32_t j = 0; j < G->fn && rc == TS_OK; j++)
            for (uint32_t sg = 0; sg < G->steps && rc == TS_OK; sg++) {
                uint64_t kv = slice_k(G, l, sg, &ks);
                uint64_t kc = kc_of(G, kv);
                memset(w, 0, bslot_b);
                build_b(L, s, n->in[1], w, G->U, (uint64_t)j * G->cols, G->cols, ks, kv, kc);
                for (uint32_t i = 0; i < G->fm && rc == TS_OK; i++) {
                    uint32_t t = tile_of(G, i, j, l);
                    if (G->rotb && base_of(G, i, j) * G->rp != sg)
                        continue;
                    rc = lwi_seg(L, t, G->rotb ? mem->bslot[0] : mem->bw + sg * bslot_b, w, G->cols * kc * G->es);
                }
            }
    for (uint32_t j = 0; s->C && j < G->fn && rc == TS_OK; j++) {
        float *bias = w + ts_geom_cdiv(bslot_b, 4);
        for (uint64_t o = 0; o < G->cols; o++)
            bias[o] = j * G->cols + o < s->N ? ts_fill_value_f32(s->C, n->in[2], j * G->cols + o) : 0.0f;
        for (uint32_t i = 0; i < G->fm && rc == TS_OK; i++)
            rc = lwi_seg(L, tile_of(G, i, j, 0), mem->baddr, bias, G->cols * 4);
    }
    ts_free(w);
    return rc;
}

/* A into the plan's layout: row r of block i, k of the tile's range (or of slot k's slice); a
 * Conv's input channels of the tile's range over its pixels, then turned into rows of pixels. */
static ts_status t10_gather_a(lw *L, const t10_gen *G, const t10_op *s, int x, lw_scr *sc, const t10_mem *mem)
{
    ts_status rc = TS_OK;
    uint64_t ks;
    if (s->conv) { /* the channel-major buffer receives while x's holders send: apart from x's elements */
        uint64_t nch = (G->rota ? G->kp : G->kt) / G->taps; /* channels of the k-range or slot */
        uint64_t cbuf = lwi_talloc_apart(L, G->span * nch * 4, (const uint64_t(*)[2])mem->av, 1);
        /* its padded image; f16 with an odd left pad: 4 bytes on, so that its rows' pixels after the
         * pad lie 8-byte aligned for the 64-bit copy (conv_image_rows) */
        bool odd = G->es == 2 && G->pl % 2;
        uint64_t img = G->taps > 1 ? lwi_talloc(L, nch * G->hb * G->wp * 4 + (odd ? 8 : 0)) : 0;
        if (img && odd && img % 8 == 0)
            img += 4;
        for (uint32_t k = 0; k < (G->rota ? G->rp : 1) && rc == TS_OK; k++)
            rc = conv_rows(L, G, x, G->tn, sc, cbuf, img, G->rota ? (int)k : -1,
                           G->rota ? mem->aslot[k] : mem->abuf, G->astr);
        return rc;
    }
    for (uint32_t k = 0; k < (G->rota ? G->rp : 1) && rc == TS_OK; k++) {
        for (uint32_t t = 0; t < L->T; t++)
            sc->lo[t] = sc->hi[t] = 0, sc->nr[t] = 0;
        for (uint32_t l = 0; l < G->fk; l++)
            for (uint32_t i = 0; i < G->fm; i++)
                for (uint32_t j = 0; j < G->fn; j++) {
                    uint32_t t = tile_of(G, i, j, l);
                    uint64_t len = G->rota ? slice_k(G, l, base_of(G, i, j) * G->rp + k, &ks)
                                           : slice_k(G, l, 0, &ks) ? umin(G->K, (uint64_t)l * G->kt + G->kt) - ks : 0;
                    uint64_t r = rows_of(G, i);
                    if (!len || !r)
                        continue;
                    sc->lo[t] = i * G->rows * G->K + ks;
                    sc->hi[t] = sc->lo[t] + len;
                    sc->nr[t] = (uint32_t)r;
                }
        L->into = G->rota ? mem->aslot[k] : mem->abuf;
        L->stagger = true; /* a row's holder serves the fn x fk tiles of its rows: not all in one round */
        /* f16 in whole bodies: the rows a tile holds itself copied by its workers, the rounds packed */
        L->wlocal = L->pack = G->body > 0;
        rc = lwi_gather(L, x, G->tn, sc->lo, sc->hi, sc->nr, G->K, G->astr, true, sc->where);
        L->into = 0;
        L->stagger = L->wlocal = L->pack = false;
    }
    return rc;
}

static void t10_run_free(t10_run *r)
{
    ts_free(r->cur);
    ts_free(r->done);
    ts_free(r->par);
    ts_free(r->ent);
    ts_free(r->prv);
    ts_free(r->nxt);
    ts_free(r->from);
    ts_free(r->words);
}

/* What the steps keep for tn tiles; false when out of memory. */
static bool t10_run_alloc(t10_run *r, uint32_t tn, uint32_t steps)
{
    r->cur = ts_calloc(tn, sizeof *r->cur);
    r->done = ts_calloc(tn, sizeof *r->done);
    r->par = ts_calloc((size_t)tn * steps * 6, sizeof *r->par);
    r->ent = ts_calloc((size_t)tn * 16, sizeof *r->ent);
    r->prv = ts_calloc(tn, sizeof *r->prv), r->nxt = ts_calloc(tn, sizeof *r->nxt);
    r->from = ts_calloc(tn, sizeof *r->from), r->words = ts_calloc(tn, sizeof *r->words);
    if (!r->cur || !r->done || !r->par || !r->ent || !r->prv || !r->nxt || !r->from || !r->words)
        return false;
    for (uint32_t t = 0; t < tn; t++)
        r->cur[t] = -1;
    return true;
}

/* Step st's compute superstep: every tile with work runs the AMP routine of its kind of step
 * (first, adding, last in f16; emitted once per tile) on its slice, the step's words in the table. */
static void t10_compute(lw *L, const t10_gen *G, const t10_op *s, const t10_mem *mem, t10_run *run, uint32_t st,
                        bool lap)
{
    const uint32_t U = G->U;
    const uint64_t es = G->es;
    uint64_t ks;
    for (uint32_t l = 0; l < G->fk; l++)
        for (uint32_t i = 0; i < G->fm; i++)
            for (uint32_t j = 0; j < G->fn; j++) {
                uint32_t t = tile_of(G, i, j, l), sg = sigma_of(G, i, j, st);
                uint64_t kv = slice_k(G, l, sg, &ks), r = rows_of(G, i), cv = cols_of(G, j);
                if (!kv || !r || !cv)
                    continue;
                int cur = run->cur[t], o = cur < 0 ? 0 : 1 - cur;
                mm_args m = {.rows = (uint32_t)r, .nq = (uint32_t)ts_geom_cdiv(cv, U),
                             .kp = (uint32_t)(kc_of(G, kv) / G->per),
                             .nq_real = cv, .units = U, .half = s->half,
                             .a = G->rota ? mem->aslot[st % (G->rp + 1)] : mem->abuf + (uint64_t)sg * G->kp * es,
                             .a_stride = G->astr * es,
                             .w = G->rotb ? mem->bslot[st % 2] : mem->bw + sg * mem->bslot_b,
                             .bias = cur < 0 && l == 0 ? mem->baddr : 0, .out = mem->obuf[o],
                             .out_row = (int64_t)(G->cols * 4), .out_q = (int64_t)(U * 4), .out_u = 4,
                             .acc = cur < 0 ? 0 : mem->obuf[cur], .acc_row = (int64_t)(G->cols * 4)};
                if (G->out16 && ++run->done[t] == mem->ne0) { /* f16's last step: rounded to halves, in pairs */
                    m.out16 = true;
                    m.out = mem->yout;
                    m.out_row = (int64_t)(G->cols * 2);
                    m.out_q = (int64_t)(U * 2);
                    m.out_u = 2;
                }
                m.tab = true;
                uint32_t nb = lwi_mm_shared_count(L, &m); /* the shared-coefficient kernel's step */
                if (!nb && U > 8) { /* B is laid out for it alone (lwi_amp_wchunk) */
                    run->unshared = true;
                    continue;
                }
                uint32_t *pv = &run->par[((size_t)t * G->steps + st) * 6];
                pv[0] = (uint32_t)m.a, pv[1] = (uint32_t)m.w, pv[2] = (uint32_t)m.out;
                pv[3] = (uint32_t)m.acc, pv[4] = (uint32_t)m.bias, pv[5] = nb ? nb - 1 : m.kp;
                size_t *e = &run->ent[(size_t)t * 16 + (m.bias ? 1 : 0) + (m.acc ? 2 : 0) + (m.out16 ? 4 : 0) +
                                      (nb ? 8 : 0)];
                if (!*e) {
                    size_t at = LWT(t).wrk.n, nc = LWT(t).wrk.ncode;
                    lwi_emit_mm(L, t, &m);
                    W(t, EXIT, 0, 0, 0);
                    /* a Conv's routine is the same as an earlier Conv's of the same block on this tile
                     * (its addresses are in the table): that one is run (ResNet-50's fullest tile on
                     * ipu_mk1 held 65,567 instructions of 65,536 with a copy each); MatMul/Gemm
                     * programs are kept as they were, but for the code spread's last pass (L->cspread,
                     * a plan's code past a tile's memory), where theirs are shared so too: its starts
                     * are the first pass's, chosen with the code unshared, so that no tile's code
                     * passes what they were chosen for */
                    *e = (s->conv || (L->cspread && !L->measure) ? lwi_reuse_routine(L, t, at, nc) : at) + 1;
                }
                bool sends = lap && run->words[t]; /* the shift's send, then the step (t10_steps) */
                if (sends)
                    lwi_send(L, t, run->from[t], run->prv[t], run->words[t]);
                lwi_run_all_m0(L, t, *e - 1, mem->ptab + (uint64_t)st * 24);
                if (sends)
                    S(t, RXWAIT, 0, 0, 0);
                run->words[t] = sends ? 0 : run->words[t];
                run->cur[t] = o;
            }
}

/* The shift of A (a) or B after step st: each tile's predecessor, successor, slot sent and words
 * in run; the slot it lands in returned. */
static uint64_t t10_shift_plan(const t10_gen *G, const t10_mem *mem, t10_run *run, uint32_t st, bool a)
{
    memset(run->words, 0, G->tn * sizeof *run->words);
    for (uint32_t l = 0; l < G->fk; l++)
        for (uint32_t i = 0; i < G->fm; i++)
            for (uint32_t j = 0; j < G->fn; j++) {
                uint32_t t = tile_of(G, i, j, l);
                uint32_t g0 = a ? j / G->ft * G->ft : i / G->ft * G->ft, p = a ? j % G->ft : i % G->ft;
                uint32_t pp = g0 + (p + G->ft - 1) % G->ft, pn = g0 + (p + 1) % G->ft;
                run->prv[t] = a ? tile_of(G, i, pp, l) : tile_of(G, pp, j, l);
                run->nxt[t] = a ? tile_of(G, i, pn, l) : tile_of(G, pn, j, l);
                run->words[t] = (a ? rows_of(G, i) * G->kp : cols_of(G, j) ? G->cols * G->kp : 0) * G->es / 4;
                run->from[t] = a ? mem->aslot[st % (G->rp + 1)] : mem->bslot[st % 2];
            }
    return a ? mem->aslot[(st + G->rp) % (G->rp + 1)] : mem->bslot[(st + 1) % 2];
}

/* After step st: a shift superstep per rotating operand, A along j, then B along i; but the one
 * `lapped` names (0: A, 1: B; -1 none), made in the step's superstep (t10_steps). */
static void t10_shifts(lw *L, const t10_gen *G, const t10_mem *mem, t10_run *run, uint32_t st, int lapped)
{
    for (int op = 0; op < 2; op++) {
        bool a = op == 0;
        if ((a ? !G->rota : !G->rotb) || op == lapped)
            continue;
        uint64_t to = t10_shift_plan(G, mem, run, st, a);
        shift(L, G->tn, run->prv, run->nxt, run->from, to, run->words);
    }
}

/* The rotating operand whose shift is made in a step's own superstep (0: A, 1: B; -1 none): the one
 * of more words where both rotate (a shift's words do not depend on the step). Not after the first
 * step, whose superstep starts with the gather's copies (a receive must be armed before any code
 * of unknown length), nor after the last: t10_steps. */
static int t10_lapped(const t10_gen *G, const t10_mem *mem, t10_run *run)
{
    if (!G->rota || !G->rotb)
        return G->rota ? 0 : G->rotb ? 1 : -1;
    uint64_t w[2] = {0, 0};
    for (int op = 0; op < 2; op++) {
        t10_shift_plan(G, mem, run, 0, op == 0);
        for (uint32_t t = 0; t < G->tn; t++)
            w[op] += run->words[t];
    }
    return w[1] > w[0] ? 1 : 0;
}

/* A worker's adds of level d: bp pairs of its sums at $m2 and the received at $m3, the sums stored
 * in place. Where the tile loads 16 bytes a cycle from where both lie, software-pipelined round
 * `ld2xst64pace` (both pairs loaded and the sum of two pairs before stored in one issue, the add in
 * its bundle; the sums of even and odd pairs in $a4:5 and $a6:7 in turn, since a bundle's
 * auxiliary instruction runs first and its main one may not use what that writes): bp + 6 issues
 * where the loop of two loads, the add and the store took 4 bp. */
static void tree_adds(lw *L, uint32_t r, uint64_t bp, bool paced)
{
    if (!paced || bp < 3) {
        W(r, SETZI, RM(4), (int32_t)bp, 0);
        W(r, RPT, RM(4), 4, 0);
        W(r, LD64, RA(0), RM(2), 0);
        W(r, LD64STEP, RA(2), RM(3), 8);
        W(r, F32V2ADD, RA(0), RA(0), RA(2));
        W(r, ST64STEP, RA(0), RM(2), 8);
        return;
    }
    /* pair p's sum in $a4:5 (p even) or $a6:7 (odd) */
#define SUMREG(p) RA((p) % 2 ? 6 : 4)
    W(r, MOV, RM(5), RM(2), 0); /* the stores' pointer, two pairs behind the loads' */
    W(r, LD64STEP, RA(0), RM(2), 8);
    W(r, LD64STEP, RA(2), RM(3), 8);
    BUN(r, LD64STEP, RA(0), RM(2), 8, F32V2ADD, SUMREG(0), RA(0), RA(2)); /* pair 1 in, pair 0 added */
    W(r, LD64STEP, RA(2), RM(3), 8);
    /* pairs 2 .. bp - 1: pair p in, p - 1 added, p - 2 stored */
    if ((bp - 2) / 2) {
        W(r, SETZI, RM(4), (int32_t)((bp - 2) / 2), 0);
        W(r, RPT, RM(4), 8, 0);
        for (uint64_t p = 2; p < 4; p++)
            BUN(r, LD2XST64PACE, RA(0), SUMREG(p), LW_PACK3(RM(2), RM(3), RM(5)), F32V2ADD, SUMREG(p - 1), RA(0), RA(2));
    }
    if (bp % 2) /* pair bp - 1, even */
        BUN(r, LD2XST64PACE, RA(0), SUMREG(0), LW_PACK3(RM(2), RM(3), RM(5)), F32V2ADD, SUMREG(1), RA(0), RA(2));
    BUN(r, ST64STEP, SUMREG(bp), RM(5), 8, F32V2ADD, SUMREG(bp - 1), RA(0), RA(2));
    W(r, ST64STEP, SUMREG(bp - 1), RM(5), 8);
#undef SUMREG
}

/* Level d of the partial-sum tree over l: the tile l = d (mod 2d) sends its sums to l - d (an
 * exchange superstep), whose workers add them, every worker a block of ceil(words / (2 workers))
 * pairs, 64 bits at a time, no overlap (the buffers are padded to whole blocks; a compute
 * superstep; tree_adds). */
static void t10_tree_level(lw *L, const t10_gen *G, const t10_mem *mem, t10_run *run, uint32_t d)
{
    const uint32_t tn = G->tn;
    const int *cur = run->cur;
    uint64_t *words = run->words, *from = run->from;
    memset(words, 0, tn * sizeof *words);
    for (uint32_t l = d; l < G->fk; l += 2 * d)
        for (uint32_t i = 0; i < G->fm; i++)
            for (uint32_t j = 0; j < G->fn; j++) {
                uint32_t t = tile_of(G, i, j, l), r = tile_of(G, i, j, l - d);
                if (cur[t] < 0 || !rows_of(G, i) || !cols_of(G, j))
                    continue;
                words[r] = rows_of(G, i) * G->cols;
                from[r] = t; /* the receiver's sender */
            }
    for (uint32_t r = 0; r < tn; r++)
        if (words[r])
            lwi_recv(L, r, mem->obuf[1 - cur[r]], (uint32_t)from[r], words[r]);
    for (uint32_t r = 0; r < tn; r++)
        if (words[r]) {
            uint32_t t = (uint32_t)from[r];
            lwi_send(L, t, mem->obuf[cur[t]], r, words[r]);
        }
    for (uint32_t r = 0; r < tn; r++)
        if (words[r])
            S(r, RXWAIT, 0, 0, 0);
    lwi_sync_all(L);
    /* a Conv's (G->cm): a MatMul's or Gemm's keep the loop of 4 issues (tree_adds) */
    const ts_ipu_target *tg = &L->p->target;
    const bool paced = G->cm && tg->load_bytes >= 16 && mem->obuf[0] >= tg->interleaved_base &&
                       mem->obuf[1] >= tg->interleaved_base;
    for (uint32_t r = 0; r < tn; r++) {
        if (!words[r])
            continue;
        uint64_t bp = ts_geom_cdiv(words[r], 2 * (uint64_t)L->workers); /* pairs a worker */
        size_t entry = LWT(r).wrk.n;
        W(r, GET, RM(1), TS_IPU_CSR_WORKER, 0);
        W(r, MULI, RM(1), RM(1), (int32_t)(bp * 8));
        W(r, SETZI, RM(2), (int32_t)mem->obuf[cur[r]], 0);
        W(r, ADD, RM(2), RM(2), RM(1));
        W(r, SETZI, RM(3), (int32_t)mem->obuf[1 - cur[r]], 0);
        W(r, ADD, RM(3), RM(3), RM(1));
        tree_adds(L, r, bp, paced);
        W(r, EXIT, 0, 0, 0);
        lwi_run_all(L, r, entry);
    }
    lwi_sync_all(L);
}

/* Zeros in bytes [off, off + nb) of each of the r rows (stride bytes apart) from a on tile t, by its
 * workers (rows over them, overlapping blocks write the same zeros), 64 bits a store. */
static void zero_rows(lw *L, uint32_t t, uint64_t a, uint64_t r, uint64_t stride, uint64_t off, uint64_t nb)
{
    uint32_t rw = (uint32_t)ts_geom_cdiv(r, L->workers);
    size_t entry = LWT(t).wrk.n;
    lwi_emit_start_row(L, t, (uint32_t)r, rw);
    W(t, MULI, RM(2), RM(1), (int32_t)stride);
    W(t, SETZI, RM(3), (int32_t)(a + off), 0);
    W(t, ADD, RM(2), RM(2), RM(3));
    W(t, SETZI, RA(0), 0, 0);
    W(t, SETZI, RA(1), 0, 0);
    W(t, SETZI, RM(6), (int32_t)rw - 1, 0);
    W(t, SETZI, RM(4), (int32_t)(nb / 8), 0);
    size_t row = W(t, MOV, RM(7), RM(2), 0);
    W(t, RPT, RM(4), 1, 0);
    W(t, ST64STEP, RA(0), RM(7), 8);
    W(t, ADDI, RM(2), RM(2), (int32_t)stride);
    W(t, BRNZDEC, RM(6), (int32_t)row, 0);
    W(t, EXIT, 0, 0, 0);
    lwi_run_all(L, t, entry);
}

/* The padding of the slices padded to whole bodies (kc_of) zeroed in A as held, before the first
 * step (in its superstep): a rotating A's in the slots the tile fills first (a shift sends a
 * slot's whole rows, padding with them), else in its k-range. B's are zero in its initial data. */
static void t10_zero_pads(lw *L, const t10_gen *G, const t10_mem *mem)
{
    uint64_t ks;
    for (uint32_t l = 0; G->body && l < G->fk; l++)
        for (uint32_t i = 0; i < G->fm; i++)
            for (uint32_t j = 0; j < G->fn; j++) {
                uint32_t t = tile_of(G, i, j, l);
                uint64_t r = rows_of(G, i);
                for (uint32_t k = 0; r && cols_of(G, j) && k < (G->rota ? G->rp : G->steps); k++) {
                    uint32_t sg = G->rota ? base_of(G, i, j) * G->rp + k : k;
                    uint64_t kv = slice_k(G, l, sg, &ks), kc = kc_of(G, kv);
                    uint64_t a = G->rota ? mem->aslot[k] : mem->abuf + (uint64_t)sg * G->kp * G->es;
                    if (kc > kv)
                        zero_rows(L, t, a, r, G->astr * G->es, kv * G->es, (kc - kv) * G->es);
                }
            }
}

/* The steps: each a compute superstep, then (but for the last) the shifts; the step table as
 * initial data; the partial-sum tree over l. */
static ts_status t10_steps(lw *L, const ts_graph_node *n, const t10_gen *G, const t10_op *s, const t10_mem *mem,
                           t10_run *run)
{
    t10_zero_pads(L, G, mem);
    const int lapped = t10_lapped(G, mem, run);
    for (uint32_t st = 0; st < G->steps; st++) {
        /* the shift of one rotating operand made in the step's superstep: every receiver armed
         * first (into the free slot, which the step does not touch), then each tile sends the slice
         * it is about to compute on (the words are read at the send) and starts its workers, which
         * run while its successor's words arrive (the supervisor, holding the send port, cannot
         * start them before; with them running it has no slot to issue in), and waits for its
         * words before the sync: a superstep and its sync fewer, and the words' latency hidden */
        int lap = st && st + 1 < G->steps ? lapped : -1;
        L->xring = lap >= 0; /* as in shift: a tile sends where it receives */
        if (lap >= 0) {
            uint64_t to = t10_shift_plan(G, mem, run, st, lap == 0);
            for (uint32_t t = 0; t < G->tn; t++)
                if (run->words[t])
                    lwi_recv(L, t, to, run->nxt[t], run->words[t]);
        }
        t10_compute(L, G, s, mem, run, st, lap >= 0);
        for (uint32_t t = 0; lap >= 0 && t < G->tn; t++)
            if (run->words[t]) { /* a tile without work in the step */
                lwi_send(L, t, run->from[t], run->prv[t], run->words[t]);
                S(t, RXWAIT, 0, 0, 0);
            }
        L->xring = false;
        lwi_sync_all(L);
        if (st + 1 == G->steps)
            break;
        t10_shifts(L, G, mem, run, st, lap);
    }
    if (run->unshared) /* not expected: its rows are 16-byte aligned in interleaved memory */
        return lwi_unsupported(L, n, "a step on more than 8 AMP units that the shared-coefficient kernel does not take");
    ts_status rc = TS_OK;
    for (uint32_t t = 0; t < G->tn && rc == TS_OK; t++)
        rc = lwi_seg(L, t, mem->ptab, &run->par[(size_t)t * G->steps * 6], (uint64_t)G->steps * 24);
    for (uint32_t d = 1; d < G->fk && rc == TS_OK; d *= 2)
        t10_tree_level(L, G, mem, run, d);
    return rc;
}

/* A Conv's output: the l = 0 tiles turn their block channel-major (channels over the workers), with
 * the elementwise tail fused into the pass where there is one: add[t] (NULL: none) the other operand
 * of an Add gathered in the output's layout on tile t, added; relu, the Relu applied. Two channels at a
 * time where the block's channels are pairs (a 64-bit load of a pixel's two, two stores): 3 issues a
 * pair, 3 with the Relu too and 5 with the Add and the Relu (software-pipelined: the add and the
 * maxes in bundles with the loads and stores), where the turn took 2 an element and the Relu and the
 * Add after it their own supersteps of 3 and 4 an element. */
static void t10_conv_out(lw *L, const t10_gen *G, const t10_mem *mem, bool relu, const uint64_t *add)
{
    const uint64_t ob = mem->obuf[mem->fin];
    const bool pairs = G->cols % 2 == 0 && ob % 8 == 0;
    const int32_t nc = pairs ? 2 : 1; /* channels a pass of the loop */
    for (uint32_t i = 0; i < G->fm; i++)
        for (uint32_t j = 0; j < G->fn; j++) {
            uint32_t t = tile_of(G, i, j, 0);
            uint64_t r = rows_of(G, i), cv = cols_of(G, j);
            if (!r || !cv)
                continue;
            uint32_t nu = (uint32_t)(cv / (uint64_t)nc); /* cv is even where the channels go in pairs */
            uint32_t rw = (uint32_t)ts_geom_cdiv(nu, L->workers);
            size_t entry = LWT(t).wrk.n;
            lwi_emit_start_row(L, t, nu, rw);
            W(t, SHLI, RM(2), RM(1), pairs ? 3 : 2);
            W(t, SETZI, RM(4), (int32_t)ob, 0);
            W(t, ADD, RM(2), RM(2), RM(4));
            W(t, MULI, RM(3), RM(1), (int32_t)(G->rows * 4 * (uint64_t)nc));
            if (add) {
                W(t, SETZI, RM(4), (int32_t)add[t], 0);
                W(t, ADD, RM(8), RM(3), RM(4));
            }
            W(t, SETZI, RM(4), (int32_t)mem->yout, 0);
            W(t, ADD, RM(3), RM(3), RM(4));
            W(t, SETZI, RM(1), (int32_t)rw - 1, 0);
            /* the Relu on pairs: software-pipelined, 3 issues a pixel, 5 with the Add (the loop r - 2
             * times between a prologue and an epilogue) */
            const bool pipe = pairs && relu;
            const int32_t cst = (int32_t)(G->cols * 4);
            W(t, SETZI, RM(5), (int32_t)(pipe ? (r > 2 ? r - 2 : 0) : r), 0);
            if (relu)
                W(t, SETZI, RA(7), 0, 0);
            size_t ch = W(t, MOV, RM(6), RM(2), 0);
            if (pairs) {
                W(t, ADDI, RM(7), RM(3), (int32_t)(G->rows * 4));
                if (add)
                    W(t, ADDI, RM(9), RM(8), (int32_t)(G->rows * 4));
            }
            if (pipe && add) { /* pixel 0 added, its first lane stored, its second's max in $a5; pixel 1
                                * (its operand with the maxes) loaded */
                W(t, LD64STEP, RA(0), RM(6), cst);
                W(t, LD32STEP, RA(2), RM(8), 4);
                W(t, LD32STEP, RA(3), RM(9), 4);
                W(t, F32V2ADD, RA(0), RA(0), RA(2));
                if (r > 1) {
                    BUN(t, LD32STEP, RA(2), RM(8), 4, F32MAX, RA(4), RA(0), RA(7));
                    BUN(t, LD32STEP, RA(3), RM(9), 4, F32MAX, RA(5), RA(1), RA(7));
                } else {
                    W(t, F32MAX, RA(4), RA(0), RA(7));
                    W(t, F32MAX, RA(5), RA(1), RA(7));
                }
                W(t, ST32STEP, RA(4), RM(3), 4);
            } else if (pipe) { /* pixel 0's first lane stored, its second's max in $a5 */
                W(t, LD64STEP, RA(0), RM(6), cst);
                W(t, F32MAX, RA(4), RA(0), RA(7));
                BUN(t, ST32STEP, RA(4), RM(3), 4, F32MAX, RA(5), RA(1), RA(7));
            }
            if (pipe && r > 1) /* pixel 1 */
                W(t, LD64STEP, RA(0), RM(6), cst);
            size_t rpt = pipe && r < 3 ? SIZE_MAX : W(t, RPT, RM(5), 0, 0), b0 = LWT(t).wrk.n;
            if (pipe) {
                /* a pixel: the last one's second lane stored while this one is added (or its first
                 * lane taken), ..., the next loaded; the loop ends on the load, not in a bundle;
                 * after it (pass 1), the last pixel without the loads, and the last store */
                for (int pass = 0; pass < 2 && r > 1; pass++) {
                    if (pass && rpt != SIZE_MAX && !L->oom)
                        LWT(t).wrk.v[rpt].a[1] = (int32_t)(LWT(t).wrk.n - b0);
                    if (pass && rpt != SIZE_MAX)
                        rpt = SIZE_MAX;
                    if (!pass && rpt == SIZE_MAX)
                        continue;
                    if (add && !pass) {
                        BUN(t, ST32STEP, RA(5), RM(7), 4, F32V2ADD, RA(0), RA(0), RA(2));
                        BUN(t, LD32STEP, RA(2), RM(8), 4, F32MAX, RA(4), RA(0), RA(7));
                        BUN(t, LD32STEP, RA(3), RM(9), 4, F32MAX, RA(5), RA(1), RA(7));
                        W(t, ST32STEP, RA(4), RM(3), 4);
                    } else if (add) {
                        BUN(t, ST32STEP, RA(5), RM(7), 4, F32V2ADD, RA(0), RA(0), RA(2));
                        W(t, F32MAX, RA(4), RA(0), RA(7));
                        BUN(t, ST32STEP, RA(4), RM(3), 4, F32MAX, RA(5), RA(1), RA(7));
                    } else {
                        BUN(t, ST32STEP, RA(5), RM(7), 4, F32MAX, RA(4), RA(0), RA(7));
                        BUN(t, ST32STEP, RA(4), RM(3), 4, F32MAX, RA(5), RA(1), RA(7));
                    }
                    if (!pass)
                        W(t, LD64STEP, RA(0), RM(6), cst);
                }
                W(t, ST32STEP, RA(5), RM(7), 4);
            } else if (pairs) { /* no Relu */
                W(t, LD64STEP, RA(0), RM(6), cst);
                if (add) {
                    W(t, LD32STEP, RA(2), RM(8), 4);
                    W(t, LD32STEP, RA(3), RM(9), 4);
                    W(t, F32V2ADD, RA(0), RA(0), RA(2));
                }
                W(t, ST32STEP, RA(0), RM(3), 4);
                W(t, ST32STEP, RA(1), RM(7), 4);
            } else {
                W(t, LD32STEP, RA(0), RM(6), (int32_t)(G->cols * 4));
                if (add) {
                    W(t, LD32STEP, RA(2), RM(8), 4);
                    W(t, F32ADD, RA(0), RA(0), RA(2));
                }
                if (relu)
                    W(t, F32MAX, RA(0), RA(0), RA(7));
                W(t, ST32STEP, RA(0), RM(3), 4);
            }
            if (rpt != SIZE_MAX && !L->oom)
                LWT(t).wrk.v[rpt].a[1] = (int32_t)(LWT(t).wrk.n - b0);
            W(t, ADDI, RM(2), RM(2), 4 * nc);
            W(t, ADDI, RM(3), RM(3), (int32_t)((G->rows * (uint64_t)nc - r) * 4));
            if (add)
                W(t, ADDI, RM(8), RM(8), (int32_t)((G->rows * (uint64_t)nc - r) * 4));
            W(t, BRNZDEC, RM(1), (int32_t)ch, 0);
            W(t, EXIT, 0, 0, 0);
            lwi_run_all(L, t, entry);
        }
    lwi_sync_all(L);
}

/* The Add and Relu folded into Conv n's output pass (lwi_fuse_tails): the Add's other operand
 * gathered in the output's layout (as the Add would gather it; held as halves, it is first held in
 * f32 words for the Conv alone), then the output turned with them. */
static ts_status t10_conv_tail(lw *L, const ts_graph_node *n, const t10_gen *G, const t10_mem *mem, lw_scr *sc)
{
    int id = L->cur, a = L->fadd ? L->fadd[id] : -1;
    bool relu = L->frelu && L->frelu[id] >= 0;
    if (a < 0) {
        t10_conv_out(L, G, mem, relu, NULL);
        return TS_OK;
    }
    const ts_graph_node *an = ts_graph_get_node(L->g, a);
    int o = n->out[0], y = an->in[0] == o ? an->in[1] : an->in[0];
    const lw_place P = L->pl[o], keep = L->pl[y];
    ts_status rc = lwi_need_placed(L, an, y);
    if (rc == TS_OK && lwi_held_half(L, y))
        rc = lwi_reheld(L, y, 4);
    uint64_t *cnts = rc == TS_OK ? ts_calloc(P.ntiles ? P.ntiles : 1, sizeof *cnts) : NULL;
    if (rc == TS_OK && !cnts)
        rc = ts_err_set(L->err, TS_ENOMEM, "out of memory lowering '%s'", n->name);
    if (rc == TS_OK) {
        lwi_eltwise_ranges(&P, (uint64_t)ts_graph_tensor_elems(ts_graph_get_tensor(L->g, o)), sc, cnts);
        L->base = P.t0;
        /* the staged pieces and those a tile holds itself copied by the workers: by the supervisor,
         * each of the two gather rounds of layer2.1.conv3's addend in resnet50:batch=4 (f16,
         * ipu_mk2) took 6,403 cycles of copying */
        L->wlocal = true;
        rc = lwi_gather(L, y, P.ntiles, sc->lo, sc->hi, sc->nr, P.inner, P.pb, false, sc->where);
        L->wlocal = false;
    }
    if (rc == TS_OK)
        t10_conv_out(L, G, mem, relu, sc->where);
    ts_free(cnts);
    L->pl[y] = keep;
    return rc;
}

/* The output on the l = 0 tiles: a Conv's channels of block j ("channels" cb = cols) by pixels of
 * block i (pb = rows); a product's rows of block i ("channels") by columns of block j ("pixels"). */
static void t10_place_out(lw *L, const ts_graph_node *n, const t10_gen *G, const t10_op *s, const t10_mem *mem)
{
    lw_place *o = &L->pl[n->out[0]];
    if (s->conv) {
        *o = (lw_place){.ntiles = G->fm * G->fn, .t0 = L->base, .chunk = G->rows * G->cols, .addr = mem->yout,
                        .es = 4};
        if (G->fm > 1 || G->rows != G->M) { /* the batch's planes (image, channel) of hwo pixels */
            o->inner = G->hwo;
            o->cb = G->cols;
            o->pb = G->rows;
            o->nrb = G->nrb;
        }
        return;
    }
    *o = (lw_place){.ntiles = G->fm * G->fn, .t0 = L->base, .chunk = G->rows * G->cols,
                    .addr = s->half ? mem->yout : mem->obuf[mem->fin], .es = (uint32_t)G->es};
    if (G->fn > 1 || G->cols != G->N) {
        o->inner = G->N;
        o->cb = G->rows;
        o->pb = G->cols;
        o->nrb = G->fn;
    }
}

ts_status lwi_t10_matmul(lw *L, const ts_graph_node *n, lw_scr *sc, const ts_t10_plan *pl)
{
    t10_op s = {0};
    t10_gen G = {0};
    t10_mem mem = {0};
    ts_status rc = t10_layout(L, n, pl, &s, &G);
    if (rc == TS_OK)
        lwi_place_op(L, G.tn, true);
    if (rc == TS_OK)
        rc = t10_alloc(L, n, &G, &s, n->in[0], &mem);
    if (rc == TS_OK)
        rc = t10_place_b(L, n, &G, &s, &mem);
    if (rc == TS_OK)
        rc = t10_gather_a(L, &G, &s, n->in[0], sc, &mem);
    if (rc != TS_OK)
        return rc;
    t10_run run = {0};
    if (!t10_run_alloc(&run, G.tn, G.steps))
        rc = ts_err_set(L->err, TS_ENOMEM, "out of memory lowering '%s'", n->name);
    else
        rc = t10_steps(L, n, &G, &s, &mem, &run);
    t10_run_free(&run);
    if (rc != TS_OK)
        return rc;
    lwi_use_tiles(L, G.tn);
    t10_place_out(L, n, &G, &s, &mem);
    return s.conv ? t10_conv_tail(L, n, &G, &mem, sc) : TS_OK;
}
