/* workloads/wse/lower_wse_int.h — what the passes of the WSE lowering share (private).
 *
 * ts_lower_wse (lower_wse.c) runs the passes in order, each over the array of stages:
 *   build   lower_wse_build.c   the graph as a chain of stages: the source, the stages of each
 *                               operator (lower_wse_stages.c), forks and joins of skip paths, the sink;
 *   place   lower_wse_place.c   every stage's rectangle: matrix products sized by compute and weights
 *                               for the balanced pipeline time T, then west to east along the band;
 *   routes  lower_wse_routes.c  every stage's colours, the pass-through routes of the skip paths;
 *   emit    lower_wse_emit.c    each PE's stream (routes first, then code) stage by stage: I/O and
 *                               joins there, matrix products in lower_wse_emit_mm.c, line buffers
 *                               (im2col, maxpool) in lower_wse_emit_lb.c, single-PE operators in
 *                               lower_wse_emit_pe.c;
 *   report  lower_wse_report.c  the report, locate, the per-stage attribution, the registry adapter.
 */
#ifndef TS_WORKLOADS_WSE_LOWER_WSE_INT_H
#define TS_WORKLOADS_WSE_LOWER_WSE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/wse/wse_isa.h"
#include "arch/wse/wse_target.h"
#include "core/err.h"
#include "core/program.h"
#include "workloads/graph.h"
#include "workloads/lower/errors.h"
#include "workloads/lower/fill.h"
#include "workloads/lower/geometry.h"
#include "workloads/lower/unsupported.h"
#include "workloads/wse/lower_wse.h"

/* Route ports (mask bits) and the longest DSD, from arch/wse/wse_target.h. */
enum { P_N = WSE_MASK_N, P_S = WSE_MASK_S, P_E = WSE_MASK_E, P_W = WSE_MASK_W, P_R = WSE_MASK_R };
enum { PIECE = WSE_DSD_MAX_LEN };

/* Register conventions of the emitted code: r15 holds 0; DSD registers 12 and 13 are the
 * helpers' (ts_lww_in_to_mem and the like); vector moves run on microthreads 0 and 1. */
_Static_assert(15 < WSE_NREGS && 15 < WSE_NDSD, "the lowering uses r15 and DSD registers up to 15");

/* ---- stages ---- */

/* Stage kinds and their names in the report (ts_lww_kind_name), one line each. */
#define LW_KINDS(X)                     \
    X(SOURCE, "source")                 \
    X(SINK, "sink")                     \
    X(MM, "matmul")                     \
    X(FEED, "im2col")                   \
    X(RELU, "relu")                     \
    X(SOFTMAX, "softmax")               \
    X(MAXPOOL, "maxpool")               \
    X(GAP, "avgpool")                   \
    X(ADD, "add")                       \
    X(FIFO, "fifo")                     \
    X(JOIN, "join")                     \
    X(CONCAT, "concat")                 \
    X(ELEM, "elementwise")              \
    X(SLICE, "slice")                   \
    X(TRANSPOSE, "transpose")           \
    X(NORM, "layernorm")                \
    X(ATTN, "attention")              \
    X(PCAT, "concat-param")             \
    X(ROPE, "rotary")
enum {
#define LW_KIND_ENUM(k, name) K_##k,
    LW_KINDS(LW_KIND_ENUM)
#undef LW_KIND_ENUM
};
extern const char *const ts_lww_kind_name[];

typedef struct lw_stage {
    int kind, node;
    int prev, prev2;  /* the stages whose output it reads (prev2: a join's skip input), -1 for none */
    int lane;         /* 0: the main band along the top rows; 1: a skip path in the rows below */
    bool fork;        /* its output also goes down to a skip path */
    uint64_t row;     /* a fork: one row of its output stream (an image row, or the last axis) */
    uint32_t x, y0, w, h, kr, kc;
    uint32_t set;     /* colour set: colours 4 set .. 4 set + 3 */
    uint32_t cin, cout, cskip;
    uint64_t in_n, out_n, macs, mem;
    /* matmul: rows M of K inputs, N outputs; wt[k * N + n]; bias[N] or NULL (owned) */
    int64_t M, K, N; /* concat: M blocks of K main and N skip values; slice: M blocks of K dropped,
                      * N kept, L dropped */
    float *wt, *bias;
    bool relu;
    bool h16;       /* matmul: binary16 weights, MACs (fmach) and partial sums (lower_wse_emit_mm.c) */
    bool clip;      /* matmul, join: a fused Clip to [lo, hi] (ReLU6) */
    float lo, hi;   /* clip: the bounds; elem: Clip's too */
    int eop;        /* elem: the graph op (Clip, Sigmoid, Tanh, HardSwish, Gelu; vop 1: Gelu's tanh form;
                     * Mul: SwiGLU, two values in per value out, rows of L out) */
    /* image stages: batch, channels, size, window, strides, pads (top, left, bottom, right);
     * transpose: the input dims in B, C, H, W, the permutation in kh, kw, sh, sw, the rank in G */
    int64_t B, C, H, W, kh, kw, sh, sw, pt, pl, pb, pr, Ho, Wo;
    bool in_nhwc;
    int64_t dh, dw, khe; /* im2col: dilations; the rows its ring keeps, (kh - 1) dh + 1 */
    uint32_t G; /* im2col and maxpool: channel groups, one PE each */
    /* softmax: rows of L */
    int64_t L;
    /* add: vals[n] in stream order, opcode, operand order; source: vals are the input (owned) */
    float *vals;
    uint64_t period; /* add: the parameter repeats every period values of the stream */
    int vop;
    bool swap;
    uint32_t kcmin; /* matmul: fewest columns its weights need; RMSNormalization: fewest PEs its row's
                     * parts need (G > 1: split, lower_wse_norm.c) */
    uint32_t gwant; /* RMSNormalization of a long row: the PEs it would take (place gives it what the
                     * mesh's width leaves, at least kcmin) */
    uint64_t chunk; /* source and sink: elements per PE */
    /* attention (lower_wse_attn.c): M rows of F of L values, N heads, K per query and key, C per
     * value; cols[3 j .. 3 j + 2] head j's first q, k and v columns of F (owned); lo the scale */
    int64_t *cols; /* a decode's RMSNormalization down a column cut unevenly: its G + 1 cuts; a
                    * decode's product of one chain cut unevenly by columns: its kc + 1 cuts of N
                    * (chain_cuts in lower_wse_place.c) (owned) */
    int64_t nc;   /* attention: keys and values before the stream's (a KV cache's) */
    int64_t nseq; /* attention: the sequences of M rows it takes one after another (a batch) */
    float *cache; /* attention: per head its nc cached keys (K x nc), then values (nc x C) (owned) */
    uint32_t akr, akc; /* attention: the fewest K and V parts whose PEs fit (kr, kc: those it takes) */
    bool fold;    /* attention: each head's V parts after its first down the column east of its K parts
                   * (lower_wse_attn.c), not along row 0 */
    bool band;    /* attention: every head's mask is constant along its diagonals (a causal or sliding-
                   * window mask): vals keeps M + nc + M - 1 values a head, row m its [M - 1 - m, +N) */
    int64_t nbk;  /* attention: a decode head's positions split in blocks of nbk over a column of PEs
                   * (lower_wse_attn.c, each a block's keys and values), 0 when not split */
    uint32_t ko;  /* matmul before SwiGLU's gate: its outputs leave east over ko rows, one column group
                   * each (group g's columns a row lower per group, its chain along row g); the gate:
                   * takes them on its ko rows and merges them in its last column; a decode's RMSNormalization
                   * (norm_rows in lower_wse_place.c): its row's ko parts down its column, kstep rows
                   * apart, each sent east on its own row; a decode's attention of split heads
                   * (heads_rows): its ko heads' outputs each east on row q kstep; 0 or 1: one chain */
    uint32_t kstep; /* a decode's gate and up product and SwiGLU's gate that feed the down product on
                     * rows (kin): the rows from one group's (gate row's) top to the next; a decode's
                     * RMSNormalization of ko parts: the rows from one part's PE to the next; a
                     * decode's attention of ko heads on rows: from one head's row to the next; 0: 1 */
    uint32_t kin;   /* a decode's product after SwiGLU's gate, a RMSNormalization of ko parts or an
                     * attention of ko heads on rows (its input row q: head q's outputs)
                     * (lower_wse_emit_mm.c): its input comes on kin rows, one per row of the gate
                     * (part of the norm), each down kr / kin rows of its own (the gate's row q's
                     * outputs, the norm's part q, the inputs of its rows [q kr / kin, +kr / kin)); the
                     * gate then merges nothing; 0 or 1: one row broadcast along row 0 */
    bool crow;      /* a decode's product of one chain cut for it (chain_cuts in lower_wse_place.c, kr >= 2):
                     * its row 0 takes no inputs and only passes the chain on, the outputs of the
                     * columns west of it, then its column's, which row 1 sums, finishes and sends north
                     * (lower_wse_emit_mm.c) */
    uint32_t sko, sstep; /* a decode's product whose outputs go spread into a join and a RMSNormalization
                          * down a column (spread_rows in lower_wse_place.c): sko column groups, the
                          * westmost the norm's last part, each group's outputs east on its part's row
                          * (part p on row p sstep; lower_wse_emit_mm.c); the join then (ko, kstep,
                          * cols) one PE on each of those rows, adding its part (lower_wse_emit.c) */
    bool rpass;     /* a decode's RMSNormalization before a product of one row without a bias (norm_pass
                     * in lower_wse_place.c): in a row (G parts and a PE more) it passes its row on raw
                     * as it comes and gives 1 / s after it, down a column (ko parts) it sends each part
                     * raw and 1 / s after part 0 (lower_wse_norm.c); that product (rpass too) holds its
                     * weights times the norm's scale and scales its sums by the 1 / s its row 0 takes
                     * after its input (lower_wse_emit_mm.c) */
} lw_stage;

/* The lowering of one graph: its stages in stream order, west to east. */
typedef struct lw {
    const ts_graph *g;
    const ts_wse_target *t; /* borrowed */
    ts_err *err;            /* borrowed */
    lw_stage *st;           /* owned; n of cap */
    size_t n, cap;
    uint64_t T;             /* the balanced pipeline's cycles by the cost model (place) */
    bool narrow;            /* place: products split for the fewest columns, not the fewest PEs */
    bool h16;               /* the graph's input is f16: binary16 matrix products (lower_wse_emit_mm.c) */
    bool decode;            /* place: the program decodes one token against a cache (decoding in
                             * lower_wse_place.c), set once before the placement's passes */
    int64_t **maps;         /* the row orders of streams (lw_cur.rows), owned; nmaps of capmaps */
    size_t nmaps, capmaps;
    const int64_t *out_rows; /* the graph output's row order at the sink, or NULL (one of maps) */
} lw;

static inline bool lw_is_param(const ts_graph_tensor *t)
{
    return t->kind == TS_TENSOR_WEIGHT || t->kind == TS_TENSOR_CONST;
}

/* A new stage of kind and node at the end of L->st (NULL when out of memory; pointers into L->st
 * taken before are then stale). */
lw_stage *ts_lww_add_stage(lw *L, int kind, int node);

/* ---- build: the stage graph (lower_wse_build.c, lower_wse_stages.c) ---- */

/* The stream at one point of the chain. */
typedef struct lw_cur {
    int t;     /* the tensor the stream carries */
    bool nhwc; /* streamed pixel by pixel (a 4-d Conv output with H * W > 1) */
    /* the stream's order of the tensor's rows (its last axis) when it is not the tensor's own:
     * rows[r] is where row r travels (a Transpose of the rows before, which moved nothing); NULL
     * when the stream is in row-major order (borrowed from L->maps) */
    const int64_t *rows;
} lw_cur;

/* The rows of tensor t (its elements over its last axis, of *width elements each; 1 for a scalar). */
int64_t ts_lww_rows(const ts_graph_tensor *t, int64_t *width);
/* A new row order of n rows owned by L (NULL when out of memory). */
int64_t *ts_lww_new_rows(lw *L, int64_t n);
/* Whether two row orders of n rows are the same (NULL: row-major). */
bool ts_lww_same_rows(const int64_t *a, const int64_t *b, int64_t n);
/* A Transpose that keeps the last axis where it is and moves rows (x's rows in order rows, NULL
 * for row-major): no stage; *out the order of its output's rows in the stream (NULL when that is
 * row-major). False when the permutation moves the last axis. */
bool ts_lww_transpose_rows(lw *L, const ts_graph_node *n, const ts_graph_tensor *x, const int64_t *rows,
                           const int64_t **out, ts_status *rc);

/* What the stage builder of one operator sees: the operator, the stream it reads (in[at]), its
 * parameter operand besides the stream (other, -1 if none), the tensors in and out. */
typedef struct lw_op {
    const ts_graph_node *n;
    int node;
    lw_cur c;
    size_t at;
    int other;
    const ts_graph_tensor *x, *y;
    int64_t nx, ny;
    int prev; /* the stage that gives the stream */
} lw_op;

/* The chain of stages from graph input to output (source first, sink last). */
ts_status ts_lww_build(lw *L, int input, int output);
/* The stages of operator o, appended to L->st with its node (none when the stream only changes
 * its name, or when a Relu is fused into the stage before); *out_nhwc: whether the operator's
 * output streams pixel by pixel. */
ts_status ts_lww_op_stages(lw *L, const lw_op *o, bool *out_nhwc);
/* What the WSE lowering refuses whatever the shapes (lower_wse_stages.c): the pre-pass, build and
 * ts_lww_op_stages all ask it. */
extern const ts_lower_ops ts_lww_ops;

/* A skip path joined by Concat (lower_wse_concat.c): main_t and skip_t the streams it joins, nhwc
 * whether they stream pixel by pixel. */
ts_status ts_lww_concat_stage(lw *L, const ts_graph_node *n, int node, int main_t, int skip_t, bool nhwc);

/* ---- the wait-for graph (lower_wse_check.c) ---- */

/* What the stages of a path from stage `from` (a fork) to stage `to` hold: on the main path, what
 * it takes in before it gives out (lag); on a skip path, what it can keep (room, its FIFOs' two
 * halves and what its other stages hold); in values of the fork's stream. */
uint64_t ts_lww_lag(const lw *L, int from, int to);
uint64_t ts_lww_room(const lw *L, int from, int to);
/* No cycle of waiting: the stages' graph, every join's skip path against its main path's lag,
 * and, with P, the routes of every colour; without P, also every stage's PEs within their SRAM. An
 * error names the operators. */
ts_status ts_lww_check(const lw *L, const ts_program *P);

/* ---- place (lower_wse_place.c) ---- */

/* SRAM of a matmul PE with ki inputs and nb outputs: weights, input row, accumulators, bias, zero, junk. */
static inline uint64_t lw_mm_mem(uint64_t ki, uint64_t nb) { return ki * nb * 4 + ki * 4 + 2 * nb * 4 + 8; }

/* A binary16 product's PE (lower_wse_emit_mm.c): its weight rows of nb halves padded to a multiple
 * of 4 (8 bytes: every row starts in the first half of the banks), the binary32 input row at XA,
 * the binary16 accumulators at AA (4 mod 8: the other half of the banks, so fmach runs at its full
 * width), the binary16 bias at BA, the accumulators widened to binary32 at OA, a zero word at ZA,
 * a junk word at JA; lw_mm16_end is its SRAM. */
typedef struct lw_mm16 {
    uint64_t row, XA, AA, BA, OA, ZA, JA, end;
} lw_mm16;
static inline lw_mm16 lw_mm16_at(uint64_t ki, uint64_t nb)
{
    lw_mm16 o;
    o.row = (nb + 3) / 4 * 8;
    o.XA = ki * o.row;
    o.AA = (o.XA + ki * 4 + 7) / 8 * 8 + 4;
    o.BA = o.AA + (nb * 2 + 3) / 4 * 4;
    o.OA = o.BA + (nb * 2 + 3) / 4 * 4;
    o.ZA = o.OA + nb * 4;
    o.JA = o.ZA + 4;
    o.end = o.JA + 4;
    return o;
}
/* SRAM of a matmul PE, binary16 (h16) or binary32. */
static inline uint64_t lw_mm_bytes(bool h16, uint64_t ki, uint64_t nb)
{
    return h16 ? lw_mm16_at(ki, nb).end : lw_mm_mem(ki, nb);
}

/* A product of s->ko > 1 output rows (lower_wse_emit_mm.c): the first column of its column group g
 * (0 for g 0, kc from g ko on): the first column from g kc / ko whose first output is even, so no
 * (gate, up) pair of SwiGLU's interleaved columns is cut (kc when there is none: place then keeps
 * one chain); the group of column j. */
uint32_t ts_lww_mm_group_col(const lw_stage *s, uint32_t g);
uint32_t ts_lww_mm_group_of(const lw_stage *s, uint32_t j);
/* The outputs [*n0, *n1) of every row that group g of product s sends (along row g). */
void ts_lww_mm_group_out(const lw_stage *s, uint32_t g, uint64_t *n0, uint64_t *n1);

/* The first output of column j (j <= s->kc) of product s: s->cols[j] when place cut its columns
 * unevenly (chain_cuts in lower_wse_place.c: a decode's one chain, its later columns wider), else
 * j N / kc; the most outputs of one of its columns. */
uint64_t ts_lww_mm_col(const lw_stage *s, uint32_t j);
uint64_t ts_lww_mm_nb_most(const lw_stage *s);
/* Row i of product s: its inputs [*k0, *k1) and those of its input row's group [*g0, *g1) (s->kin:
 * the norm's part, the gate's row, the head it takes; else all of K). */
void ts_lww_mm_row_k(const lw *L, const lw_stage *s, uint32_t i, uint64_t *k0, uint64_t *k1, uint64_t *g0,
                     uint64_t *g1);

/* Every stage's rectangle; *hm the rows of the main band (skip paths run from row *hm). */
ts_status ts_lww_place(lw *L, uint32_t *hm);

/* ---- routes and colours (lower_wse_routes.c) ---- */

/* A route a PE needs only to pass a colour through (skip paths down, along and up). */
typedef struct lw_pass {
    uint32_t pe;
    int colour, rx, tx;
    bool done; /* emitted (in the PE's own stream) */
} lw_pass;

/* G(j) and R(i) of a stage's colour set: the row chain east alternates by column, the partial
 * sums north by row. */
static inline uint32_t lw_gcol(const lw_stage *s, uint32_t j) { return s->set * 4 + 2 + (j & 1); }
static inline uint32_t lw_rcol(const lw_stage *s, uint32_t i) { return s->set * 4 + (i & 1); }
/* A decode's product cut for its chain (s->crow, one chain) of 8 rows or more: a column of nb
 * outputs climbs its partial sums in two runs when the rows the second saves (about 7 cycles each,
 * less a cycle to pass) pay for row 1's second add of nb, about when 3 (kr - 2) > nb. Rows [2, m)
 * climb to row 1 on the row colours as before; rows [m, kr) climb to row m, which sends their sums
 * on to row 1 on lw_mm_xcol, a chain colour (row 0 alone takes those), the routers of the rows
 * between passing them north, a cycle a row where a row that adds takes about 8; row 1 adds both
 * (a spread product's, s->sko: the chain colour its output colour is not, which its groups' outputs
 * take down and east below row 0). Returns m = 2 + (kr - 2) / 2, 0 for one run. */
static inline uint32_t lw_mm_split(const lw_stage *s, uint64_t nb)
{
    return s->crow && s->ko <= 1 && s->kr >= 8 && 3 * ((uint64_t)s->kr - 2) > nb ? 2 + (s->kr - 2) / 2 : 0;
}
static inline uint32_t lw_mm_xcol(const lw_stage *s) { return lw_gcol(s, s->sko > 1 ? s->kc : 0); }
/* Ports of a chain's output route: east, and down too from the last PE of a fork. */
static inline int lw_outp(const lw_stage *s, bool last) { return P_E | (last && s->fork ? P_S : 0); }
/* Whether join s takes one PE that adds its two streams as they come and sends the sums straight
 * on (placed so in lower_wse_place.c, emitted so in lower_wse_emit.c): a decode's join of rows
 * with no fused Relu or Clip. Its G PEs each took both streams' whole row and the last sent the
 * row on after them, about 2 C cycles of the token's path; one fadds from the fabric to the fabric
 * takes about C, in step with the stages around it. */
static inline bool lw_join_streams(const lw *L, const lw_stage *s)
{
    return s->kind == K_JOIN && !s->relu && !s->clip && !s->in_nhwc && L->decode;
}

/* A decode's product s whose outputs go spread (s->sko > 1): the outputs [*n0, *n1) of its column
 * j, its column group's first column and the first output of that group's part (lower_wse_emit_mm.c). */
void ts_lww_mm_spread_out(const lw_stage *s, uint32_t j, uint64_t *n0, uint64_t *n1, uint32_t *first,
                          uint64_t *from);
/* The first output of part p (p <= s->sko) of spread product s. */
uint64_t ts_lww_mm_spread_cut(const lw_stage *s, uint32_t p);

/* Whether join s takes the parts of a spread product (s->ko > 1, spread_rows in lower_wse_place.c):
 * one PE on each part's row, its slice of the skip row kept, its part added as it comes. */
static inline bool lw_join_spread(const lw_stage *s) { return s->kind == K_JOIN && s->ko > 1; }
/* The colour a spread join's PEs send their sums east on: its output colour, or when it forks (its
 * output colour then the row down to the skip path) its other chain colour. */
static inline uint32_t lw_join_east(const lw_stage *s) { return s->fork ? lw_gcol(s, 1) : s->cout; }

/* Whether streaming join s (lw_join_streams) takes its skip path's row into memory first, then adds
 * it to the main stream's as that comes (one operand from the fabric, one from memory): the two
 * streams share the ramp from its router into the core, a wavelet a cycle, so that adding them as
 * both came gave about a value every 2 cycles on the token's path. The skip row comes ahead (the
 * fork's output, long before the main path's), and one row of it must fit the PE. */
static inline bool lw_join_keeps_skip(const lw *L, const lw_stage *s)
{
    return lw_join_streams(L, s) && (uint64_t)s->C * 4 <= L->t->sram_bytes;
}

/* Every stage's colour set and its input, output and skip colours (after place). */
void ts_lww_colours(lw *L);
/* The pass-through routes of every skip path, sorted by PE then colour; *v owned by the caller.
 * TS_ENOMEM (err not set) when out of memory. */
ts_status ts_lww_skip_routes(lw *L, uint32_t hm, lw_pass **v, size_t *n);

/* ---- emit (lower_wse_emit*.c) ---- */

typedef struct lw_gen {
    ts_stream *s;  /* the PE stream being written (borrowed from the program) */
    bool oom;
    lw_pass *pass; /* pass-through routes by PE, emitted first in a PE's stream (borrowed) */
    size_t npass;
} lw_gen;

/* Append instruction code with its n operands (ints); sets G->oom when out of memory. */
void ts_lww_op(lw_gen *G, int code, int n, ...);
/* The index of the next instruction. */
int ts_lww_pc(const lw_gen *G);
/* n wavelets of colour cin into memory from addr with stride (elements; 0 drops them in one word). */
void ts_lww_in_to_mem(lw_gen *G, uint32_t cin, uint64_t addr, uint64_t n, int stride);
/* Of n values coming in on cin, [lo, hi) into memory from addr and the others, before and after,
 * into the junk word at junk (a PE's part of a row every PE of a stage takes in). */
void ts_lww_in_part(lw_gen *G, uint32_t cin, uint64_t junk, uint64_t addr, uint64_t lo, uint64_t hi, uint64_t n);
/* Pass n wavelets from colour cin on to colour cout. */
void ts_lww_in_to_out(lw_gen *G, uint32_t cin, uint32_t cout, uint64_t n);
/* Send n words from addr on colour cout. */
void ts_lww_mem_to_out(lw_gen *G, uint64_t addr, uint64_t n, uint32_t cout);
/* A counted loop: li rc, n at the head; close with ts_lww_loop_end(G, rc, head). */
int ts_lww_loop_head(lw_gen *G, int rc, int64_t n);
void ts_lww_loop_end(lw_gen *G, int rc, int head);
/* The fused Relu on n words from addr: a negative sign bit stores +0 (r15 holds 0; uses r5-r7). */
void ts_lww_relu_mem(lw_gen *G, int addr, int64_t n);
/* Start PE (x, y)'s stream with its pass-through routes; NULL (G->oom) when out of memory. */
ts_stream *ts_lww_pe_stream(ts_program *P, const ts_wse_target *t, uint32_t x, uint32_t y, lw_gen *G);

/* Every stage's PEs, then the PEs that only pass colours through. */
ts_status ts_lww_emit(lw *L, ts_program *P, lw_gen *G);
/* One stage's PEs, by kind: matrix products (lower_wse_emit_mm.c), line buffers of im2col and
 * maxpool (lower_wse_emit_lb.c), relu, fifo, add, softmax and avgpool (lower_wse_emit_pe.c). */
ts_status ts_lww_emit_mm(lw *L, ts_program *P, size_t si, lw_gen *G);
ts_status ts_lww_emit_lb(lw *L, ts_program *P, size_t si, lw_gen *G);
ts_status ts_lww_emit_single(lw *L, ts_program *P, size_t si, lw_gen *G);
/* The elementwise PE (lower_wse_elem.c): per element recv, the function, send. */
/* Whether op is HardSwish (by its name: the IR gains TS_OP_HARDSWISH after Clip). */
bool ts_lww_is_hardswish(int op);
void ts_lww_emit_elem(lw_gen *G, const lw_stage *s);
/* An elementwise stage split over s->G PEs in a row (place): PE g passes on the values of each row
 * before its part (part G - 1 - g), applies the function to its part, passes on the rest; SwiGLU's
 * gate after a product of s->ko > 1 output rows: a row of G PEs for each, merged up the last column. */
ts_status ts_lww_emit_elem_split(lw *L, ts_program *P, lw_gen *G, const lw_stage *s);
/* SwiGLU from stream F (lower_wse_elem.c): F read by two projections only (ts_lww_is_proj, each with
 * its bias Add or none), the gate's output a by a Sigmoid and by the Mul of a and the Sigmoid's
 * output (SiLU), that by one Mul with the up projection's output. nodes: the gate and up MatMuls,
 * their bias Adds (-1: none), the Sigmoid, the SiLU Mul, the last Mul, and whether either has a
 * bias. Its stages: one product of both weights, their columns interleaved (gate j, up j), then
 * an elementwise stage (eop Mul) taking each pair to SiLU(gate) up. */
bool ts_lww_is_glu(const ts_graph *g, int F, int nodes[8]);
ts_status ts_lww_glu_stages(lw *L, int F, const int nodes[8]);
/* Clamp n words from addr to [lo, hi] in place (uses r5-r9; r15 holds 0). */
void ts_lww_clip_mem(lw_gen *G, int addr, int64_t n, float lo, float hi);
/* From lower_wse_emit_pe.c: a float's bits; r3 := exp(r2 - r1) for r2 - r1 <= 0 (constants in
 * r9, r11-r14 set by ts_lww_exp_consts; uses r4, r5); r1 := 1 / r8 (uses r2, r5). */
int ts_lww_bits(float f);
void ts_lww_exp_consts(lw_gen *G);
void ts_lww_exp(lw_gen *G);
void ts_lww_recip(lw_gen *G);
/* r1 := the max of the n words at address 0 (lower_wse_emit_pe.c; uses r2, r3, r6, r7). */
void ts_lww_row_max(lw_gen *G, int64_t n);
/* exp(x - max) in place of the n words at base with their max in r1, their sum in r8
 * (lower_wse_emit_pe.c; uses r2, r3, r6, r7). */
void ts_lww_exp_sum(lw_gen *G, int64_t n, int base);
/* A softmax's end over n words at address 0 with their max in r1 (lower_wse_emit_pe.c): exp in
 * place, 1/sum at rcp, the row times it out on colour c through output descriptor dsd. */
void ts_lww_softmax_scale(lw_gen *G, int64_t n, int rcp, int dsd, int c);
/* Slice and Transpose (lower_wse_move.c): their stages and their PE's code. */
ts_status ts_lww_slice_stage(lw *L, const ts_graph_node *n, int node, const ts_graph_tensor *x, bool nhwc);
ts_status ts_lww_transpose_stage(lw *L, const ts_graph_node *n, int node, const ts_graph_tensor *x, bool nhwc);
void ts_lww_emit_move(lw_gen *G, const lw_stage *s);
/* LayerNormalization over the last axis (lower_wse_norm.c): its stage and its PE's code. */
ts_status ts_lww_norm_stage(lw *L, const ts_graph_node *n, int node, const ts_graph_tensor *x, bool nhwc);
ts_status ts_lww_emit_norm(lw *L, ts_program *P, lw_gen *G, const lw_stage *s);
/* SRAM of a PE of RMSNormalization's row of L values over g PEs: one PE the row, its scale, 1 / s
 * and from 256 values the 64 partial sums of squares and a block's squares; split, a part's. */
static inline uint64_t lw_rms_mem(uint64_t L, uint64_t g)
{
    const uint64_t n = (L + g - 1) / g;
    return g > 1 ? 8 * n + 4 + (n >= 64 ? 8 * 64 : 0) : 8 * L + (L >= 256 ? 8 * 64 + 4 : 8);
}
/* SRAM of a PE of a LayerNormalization split over PEs in a row, its part n values: the part, its
 * scale and bias, the mean and 1 / s, and from 64 values the 64 partial sums of squares and a
 * block's 64 squares. */
static inline uint64_t lw_ln_mem(uint64_t n) { return 12 * n + 8 + (n >= 64 ? 8 * 64 : 0); }
/* The first value of part q (q <= s->G) of a decode's RMSNormalization down a column (s->ko > 1):
 * s->cols[q] when place cut the row unevenly (norm_pass in lower_wse_place.c: a norm that passes
 * its row on, its first parts longer), else q L / G. */
uint64_t ts_lww_norm_cut(const lw_stage *s, uint32_t q);
/* A split RMSNormalization or LayerNormalization (s->G > 1 PEs in a row, lower_wse_norm.c). */
ts_status ts_lww_emit_norm_split(lw *L, ts_program *P, lw_gen *G, const lw_stage *s);
/* A Concat join's PE (lower_wse_concat.c). */
ts_status ts_lww_emit_concat(lw *L, ts_program *P, size_t si, lw_gen *G);

/* Attention (lower_wse_attn.c): the region of the graph from stream F (read first by node
 * `first`, its rows in order rows) as one stage appended to L->st; its nodes marked in done, *out_t
 * the tensor it gives and *out_rows the order of its rows (NULL: row-major). */
ts_status ts_lww_attn_stage(lw *L, int F, const int64_t *rows, int first, bool *done, int *out_t,
                            const int64_t **out_rows);
/* Whether node is a projection of F (a MatMul of F by a 2-d weight); the attention of three or
 * more projections of F: one product of their weights side by side (their bias Adds folded in),
 * then the attention stage on its stream (two stages appended). */
bool ts_lww_is_proj(const ts_graph *g, int node, int F);
ts_status ts_lww_attn_proj(lw *L, int F, const int64_t *rows, int first, bool *done, int *out_t,
                           const int64_t **out_rows);
ts_status ts_lww_emit_attn(lw *L, ts_program *P, size_t si, lw_gen *G);
/* Whether attention stage s may take more K and V parts than its memory needs (akr, akc) in a
 * pipeline of many rows: no cache, no split by positions, V parts along row 0 (at most 2). */
bool ts_lww_attn_sizable(const lw_stage *s);
/* Cycles a row of F takes in attention stage s with kp K parts and vp V parts (about, per PE):
 * the row of F multicast to every PE (a cycle a value), then the busier of the top K part (per
 * key column of its part a MAC loop over the sequence's S keys, and the softmax of S scores,
 * about 30 cycles each: assumed, the scalar exp and sum) and a V part (per key a MAC loop over its
 * value columns, and the row chain east: every head's outputs, a cycle each). */
uint64_t ts_lww_attn_row_cost(const lw_stage *s, uint64_t kp, uint64_t vp);
/* Give attention stage s (ts_lww_attn_sizable) kp K parts and vp V parts: its rectangle (vp
 * columns and 1 + kp rows a head) and its PEs' memory. */
void ts_lww_attn_parts(lw_stage *s, uint32_t kp, uint32_t vp);
/* The rotary stage before an attention (lower_wse_attn.c): per row of the stream (M rows of L),
 * the N columns its queries and keys read rotated, each c1 x + c2 x' of its own value x and its
 * partner's x' in the row; vals: the N (own, partner) columns (int32), then per row the N (c1,
 * c2); over G PEs in a row, part p the columns [cols[2 p], cols[2 p + 1]) (owned), PE g part G - 1 - g. */
ts_status ts_lww_emit_rope(lw *L, ts_program *P, lw_gen *G, const lw_stage *s);

/* ---- report (lower_wse_report.c) ---- */

/* Fill rep from the placed stages (TS_ENOMEM with err set when out of memory). */
ts_status ts_lww_report(const lw *L, uint32_t hm, int output, ts_lower_wse_report *rep);

#endif
