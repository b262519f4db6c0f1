/* workloads/ipu/lower_ipu_int.h — what the files of the IPU lowering share (internal to workloads/ipu/).
 *
 * The lowering (lower_ipu.h; docs/lowering-ipu.md) in rooms, each a file:
 *   lower_ipu.c            the driver: the passes over the graph, liveness, each operator's report
 *   lower_ipu_emit.c       instructions, workers and chip-wide syncs, the program's streams
 *   lower_ipu_mem.c        tile memory: the dynamic region, weights, shared tables, the graph inputs
 *   lower_ipu_exchange.c   where a tensor's elements lie, the gather over the exchange, sends
 *   lower_ipu_matmul.c     the AMP matrix-product kernel, MatMul and Gemm, MatMul of two activations
 *   lower_ipu_ampk.c       the AMP kernel whose coefficient loads serve all the workers
 *   lower_ipu_conv.c       Conv (and the one-row Gemm): its plan, memory and kernels
 *   lower_ipu_eltwise.c    elementwise ops, Softmax, LayerNorm, Transpose
 *   lower_ipu_batch.c      a batched Conv image by image
 *   lower_ipu_dconv.c      Conv with groups, dilations or a batch, on the workers
 *   lower_ipu_move.c       Concat, Slice, Expand: copies of runs of elements over the exchange
 *   lower_ipu_pool.c       MaxPool, AveragePool, GlobalAveragePool
 *   lower_ipu_t10_plans.c  planner (b): the operators it takes and their plans (plan_t10.h's model)
 *   lower_ipu_t10.c        planner (b)'s code generation
 *   lower_ipu_adapter.c    the registry's ts_lowering, the parameters, the per-layer attribution
 * Planner (a), load-compute-store, is every file but the two t10 ones; planner (b), compute-shift,
 * lowers its operators with (a)'s memory, gather and AMP kernel.
 *
 * The chip is known through arch/ipu/ipu_target.h (L->p->target) and the opcode table only.
 */
#ifndef TS_WORKLOADS_LOWER_IPU_INT_H
#define TS_WORKLOADS_LOWER_IPU_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/program.h"
#include "workloads/ipu/lower_ipu.h"
#include "workloads/ipu/plan_t10.h"
#include "workloads/lower/errors.h"
#include "workloads/lower/fill.h"
#include "workloads/lower/geometry.h"

/* Opcode numbers: the IPU's one table. */
enum lw_op {
#define IPU_OP(id, mn, ops, cls, unit, ctx, lat, ev, ec, rd, wr, doc) LW_##id,
#include "arch/ipu/ipu_isa.def"
#undef IPU_OP
    LW_COUNT
};

#define RM(n) TS_IPU_MREG(n) /* $m register number */
#define RA(n) TS_IPU_AREG(n) /* $a register number */

static inline uint64_t umin(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* An instruction as the lowering holds it until the program is written: the opcode and the three
 * operands the IPU's instructions take (ts_insn has room for seven; a program of tens of millions of
 * instructions is held in half the host memory so). */
typedef struct lw_insn { uint16_t op; int32_t a[3]; } lw_insn;
/* A tile's code: n entries, ncode of them instructions that take code memory (a bundle's braces
 * take none, as the loader counts them). */
typedef struct lw_code { lw_insn *v; size_t n, cap, ncode; } lw_code;
/* A worker routine registered for reuse (lwi_reuse_routine): its first entry, length and hash. */
typedef struct lw_rout { size_t start, len; uint64_t hash; } lw_rout;
typedef struct lw_tile {
    lw_code sup, wrk;
    lw_rout *rout; size_t nrout, caprout; /* routines to reuse, owned */
} lw_tile;
typedef struct lw_mark { uint32_t tile, pc, id; } lw_mark;
/* Where a tensor lives, on tiles t0..t0 + ntiles - 1. Flat (inner = 0): element e on tile
 * t0 + e / chunk at element e % chunk. Blocked (inner > 0, a Conv output split by rows too):
 * e = c * inner + p is on tile t0 + (c / cb) * nrb + p / pb at element (c % cb) * pb + p % pb;
 * chunk = cb * pb. */
typedef struct lw_place {
    uint32_t ntiles;
    uint32_t t0;              /* first tile (an operator of few tiles spread over the chip) */
    uint64_t chunk, addr;
    uint32_t es;              /* bytes per element */
    uint64_t inner, cb, pb;   /* blocked layout; inner 0 = flat */
    uint32_t nrb;
} lw_place;
typedef struct lw_blk { uint64_t a, n; } lw_blk; /* a live block of the dynamic region */
/* An operator's weights: bytes per tile (the most any of its tiles holds), the tiles lo..hi-1
 * their segments go to (lo == hi: none), their address on those tiles and the lowest static byte
 * on any tile while the operator runs (lwi_place_weights); spread: its first tile chosen by
 * lwi_spread; cs: 1 + the first tile the code spread chose in the first pass (lwi_place_op: the
 * passes' code differs a little, their tiles must not), 0: none. */
typedef struct lw_wt { uint64_t bytes, addr, lim; uint32_t lo, hi, cs; bool spread; } lw_wt;
typedef struct lw_tab { uint64_t hash, bytes, addr; uint32_t tiles; } lw_tab; /* static data the same on every tile */
/* An exchange of the program as emitted: in superstep `step`, tile dst receives (words > 0) or tile
 * src sends (words < 0) that many words; node: the operator that emitted it; pc: the receive's or
 * send's index in its tile's supervisor code. */
typedef struct lw_xrec { uint32_t step, src, dst; int64_t words; int node; uint32_t pc; } lw_xrec;
/* The operators that put the most code on one tile: node, instructions (LW_CODE_TOP of them). */
#define LW_CODE_TOP 3
typedef struct lw_ctop { int node[LW_CODE_TOP]; uint32_t n[LW_CODE_TOP]; } lw_ctop;
/* Code bytes per instruction: `tile.insn_bytes` of every shipped IPU config (32-bit instructions,
 * HC33; research §1.2). ipu_target.h does not carry the key, so the lowering's check of each tile's
 * code (lwi_check_code) assumes it; the loader checks again with the config's own. */
#define LW_INSN_BYTES 4
/* Planner (a)'s smallest share of the tile memory for a product's weights past 1/64 (lower_ipu.c):
 * below it a try changes little but costs a whole pass. */
#define LW_MIN_SHARE 1024u

/* The state of one pass of the lowering (lower_ipu.c). */
typedef struct lw {
    const ts_graph *g;
    const ts_lower_ipu_params *p;
    ts_program *prog;
    ts_err *err;
    uint32_t T;           /* tiles the plan may use */
    uint32_t used;        /* tiles that got work: streams are emitted for 0..used-1 */
    uint32_t optiles;     /* tiles the current operator uses */
    uint32_t base;        /* the current operator's first tile: lwi_gather's receivers are base + t */
    /* An operator placed by lwi_place_op names its own tiles 0..tn-1 in its code: S, W, LWT,
     * lwi_seg, lwi_send, lwi_recv, lwi_late, lwi_mark, lwi_reuse_routine and lwi_stable add toff
     * (= base) to the tiles they are given. 0 but while such an operator's own code is emitted:
     * the gather, the syncs and the conversions of tensors held elsewhere (lwi_reheld) name tiles
     * as they are and set it to 0 while they run. */
    uint32_t toff;
    /* per tile: the weight bytes of the operators lowered so far in this pass that lwi_spread did
     * not place (lwi_place_op starts an operator where they are fewest), owned; NULL: every
     * operator starts at tile 0 */
    uint64_t *wload;
    /* the first tiles lwi_place_op chose, by key (the operator's kind, shapes and name less its
     * layer numbers) and tiles: the same operator of every layer lands on the same tiles. Owned. */
    struct lw_pkey { uint64_t key; uint32_t tn, t0; uint32_t *prof; } *pkeys; size_t npkeys, cappkeys;
    /* the code spread (a plan's code past a tile's memory planned again): the operator of a key met
     * before starts where its last one's instructions per tile (pkeys[].prof, owned, tn entries)
     * added to the instructions already there make the fullest tile fullest least (lwi_place_op);
     * pk: the key of the current operator (-1: none), pk_t0 its first tile, whose profile
     * lower_op records */
    bool cspread;
    int pk;
    uint32_t pk_t0;
    uint32_t *code0;      /* per tile: its instructions before the current operator, owned */
    lw_ctop *ctop;        /* per tile: the operators that put the most code there, owned */
    uint32_t units;       /* AMP f32 units: outputs per AMP pass */
    uint32_t units16;     /* AMP f16 units (4 inputs each) */
    uint32_t workers;     /* worker contexts per tile */
    lw_tile *tiles;       /* T, owned */
    lw_place *pl;         /* per tensor, owned; ntiles 0 = not placed */
    /* Memory. Initial data (weights, biases, address tables) lives for the whole run in the static
     * region, from the top of tile memory down; tensors and buffers in the dynamic region from the
     * bottom up, first fit, freed after their last use, at the same addresses on every tile. */
    /* Initial data is loaded before the run, so the memory of an operator's weights must not be
     * written before the operator runs; after it, the memory is free. Top down: the tables shared
     * by content (the same addresses on every tile, kept for the whole run), then the weights, each
     * tile its own stack: an operator's weights lie at one address on the tiles that hold them
     * (lw_wt), below the weights the operators after it put on those tiles, so operators on
     * disjoint tiles share addresses. While operator k runs, the weights of operators k.. lie above
     * w[k].lim on every tile and the dynamic region stays below it. A first pass (measure) finds
     * each operator's weight bytes and tiles; lwi_place_weights then gives each its address. */
    bool measure;         /* first pass: sizes only, no segments */
    lw_wt *w;             /* per node (filled by the first pass and lwi_place_weights), borrowed */
    uint64_t perm;        /* table bytes (first pass total) */
    uint64_t ptop;        /* next table goes below this */
    uint64_t slim;        /* the lowest static byte on any tile while the current operator runs */
    uint64_t wnext;       /* next weight byte of the current node */
    int cur;              /* node being lowered; -1 while the graph inputs are placed */
    /* per tile: the weight bytes of the operators of more than an eighth of the chip that cover it,
     * from a first pass; lwi_spread puts an operator of few tiles where they are fewest (NULL: by
     * its kind alone). Borrowed. */
    const uint64_t *tload;
    uint64_t into;        /* when set, the next gather lands there (the caller's buffer) */
    lw_blk *blk; size_t nblk, capblk;  /* live dynamic blocks by address, owned */
    uint64_t hw;          /* highest dynamic byte in use since the current operator began */
    uint64_t *tmp; size_t ntmp, captmp; /* the current operator's buffers, freed at its end */
    lw_tab *tabs; size_t ntabs, captabs; /* owned */
    int *root;            /* per tensor: the tensor whose memory it is (Reshape, Flatten alias) */
    int *last;            /* per root tensor: its last consumer node; -1 = kept (graph output) */
    /* Elementwise tails done by a planner (b) Conv's output pass (fuse_tails in lower_ipu.c): per
     * node, the Add whose other operand the Conv adds and the Relu it applies (-1: none); fold: for an
     * Add or Relu done so, the tensor whose memory its output is (-1: not folded). Owned. */
    int *fadd, *frelu, *fold;
    /* per node: a MatMul's bias (fuse_tails): the weight of N values the Add that alone reads its
     * output adds to each row, which the MatMul then adds as a Gemm's C (-1: none). Owned. */
    int *fbias;
    uint32_t step;        /* supersteps so far */
    lw_mark *marks; size_t nmarks, capmarks;
    lw_xrec *xr; size_t nxr, capxr; /* every send and receive, for the check before emission; owned */
    ts_lower_layer *layers; size_t nlayers, caplayers;
    bool oom;
    /* A tile's supervisor or worker code alone passed the tile's memory (code_lim instructions):
     * the pass cannot give a program, so from then on no code array grows past its size (each
     * starts again from its first entry, its count going on: indices stay inside, the code is
     * garbage) and no marks, exchange records or reused routines are kept. The operator's code
     * check (lwi_check_code, counts kept) then fails as it would have; the first pass, which does
     * not check code, goes on to its end. A plan far over the tile (ViT-B/16 at batch 4 on
     * ipu_mk2 at a small budget) took 14 GB of host memory before its operator's check. */
    bool code_cut;
    uint64_t code_lim;
    bool overfull;        /* an operator did not fit tile memory (the t10 planner retries) */
    uint64_t short_by;    /* then the bytes it was short (at least 1) */
    bool code_over;       /* that was a tile's code past its memory (short_by 1) */
    uint32_t mmshare;     /* planner (a): a MatMul/Gemm's weights take at most 1/mmshare of the tile memory */
    bool coalesce;        /* gather: one send for pieces that follow on in the sender's memory, one copy loop
                           * for staged pieces of equal length equally far apart (Transpose, MatMul of
                           * activations, and the plans of models whose weights do not fit at 1/4) */
    bool stagger;         /* gather: receiver t takes its senders from its (t mod n)-th on (planner (b)'s A) */
    bool staged;          /* gather: every transfer received into the staging buffer, then copied */
    bool balance;         /* gather, with stagger: each receiver's rotation the one that loads the busiest of its
                           * senders in their rounds least (gather_balance) */
    bool pack;            /* gather: rounds packed so that a sender serves one receiver a round (gather_pack) */
    bool onedst;          /* gather: the sends of a transfer after its first leave the receiver's number
                           * in $m6 as the first set it (2 instructions a piece, not 3) */
    /* per tile, in the code spread's last pass (lower_ipu_exchange.c, xset): the tile numbers its
     * supervisor's $m6 (a receive's sender) and $m8 (a send's receiver) hold, and the first entry
     * of its supervisor code not yet looked at for a write to them; owned, NULL until needed */
    struct lw_xreg { int32_t v[2]; size_t at[2]; bool ok[2]; } *xreg;
    bool xring;           /* a ring's shift (lower_ipu_t10.c): every tile that sends armed its receive
                           * before, so a setzi left out (xset) never sends before the receiver arms */
    bool bcast;           /* gather: the transfers of one sender that send the same words sent once, broadcast,
                           * where the rounds so cost less (gather_bcast) */
    bool wlocal;          /* gather: what a tile holds itself copied by its workers, 64 bits a load (where
                           * every such piece is 8-byte aligned and whole pairs), not its supervisor */
    uint64_t rows_w, rows_st, rows_span; /* gather with wlocal and into: of each range (rows_span words
                           * apart from into), only rows of rows_w words r = 0 mod rows_st are read
                           * (a strided 1x1 Conv's): the workers copy only those of staged pieces */
    const ts_t10_plan *plans; /* per node: the compute-shift plan (tiles 0 = load-compute-store); NULL = lcs */
} lw;

/* Scratch per tile for an operator's ranges: lo, hi, nr, where (T entries each, owned by the pass). */
typedef struct lw_scr { uint64_t *lo, *hi, *where; uint32_t *nr; } lw_scr;

/* ---- instructions, workers and syncs (lower_ipu_emit.c) ---- */

/* Append an instruction to c; its index (L->oom set when out of memory). */
size_t lwi_emit(lw *L, lw_code *c, int op, int32_t a0, int32_t a1, int32_t a2);
/* Tile t of the current operator's own, with lw *L in scope: tile L->toff + t (lw's toff). */
#define LWT(t) (L->tiles[(t) + L->toff])
/* On tile t's supervisor (S) or worker code (W), with lw *L in scope: S(t, SETZI, RM(1), 0, 0). */
#define S(t, op, a, b, c) lwi_emit(L, &LWT(t).sup, LW_##op, (a), (b), (c))
#define W(t, op, a, b, c) lwi_emit(L, &LWT(t).wrk, LW_##op, (a), (b), (c))
/* ld2xst64pace's three pointers ($m_ld1, $m_ld2, $m_st) in its third operand (an lw_insn holds
 * three), one byte each: the program's instruction has them as its operands 2 to 4 (emit_stream). */
#define LW_PACK3(a, b, c) ((int32_t)((a) | (b) << 8 | (c) << 16))
/* The bits of f, an immediate of ldconst or setzi. */
int32_t lwi_fbits(float f);
/* A strided 1x1 Conv (stride st, output rows of wo pixels, input rows of wi): the input pixels that
 * `rows` output pixels of whole output rows read, their input rows whole (one row at least). */
static inline uint64_t lwi_conv_span(uint64_t rows, uint64_t wo, uint64_t st, uint64_t wi)
{
    uint64_t nro = rows / wo ? rows / wo : 1;
    return ((nro - 1) * st + 1) * wi;
}
/* A Conv of kh x kw taps (taps > 1) on input rows of wi pixels, hin of them: the input pixels that
 * `rows` output pixels of whole output rows read at the most, (rows / wo - 1) st + kh input rows
 * (the padding rows not read), whole. */
static inline uint64_t lwi_conv_band(uint64_t rows, uint64_t wo, uint64_t st, uint64_t kh, uint64_t hin,
                                     uint64_t wi)
{
    uint64_t nro = rows / wo ? rows / wo : 1, nb = (nro - 1) * st + kh;
    return (nb < hin ? nb : hin) * wi;
}
/* The worker routine just emitted on tile t, wrk entries [start, wrk.n) (ncode0: wrk.ncode before
 * it), self-contained (its branches inside it): if tile t holds one the same but for where it lies
 * (branch targets taken from each routine's start), the new one is taken back and the old one's
 * start returned; else the new one is registered and start returned. */
size_t lwi_reuse_routine(lw *L, uint32_t t, size_t start, size_t ncode0);
/* A superstep mark at tile t's next supervisor instruction. */
void lwi_mark(lw *L, uint32_t t);
/* Every tile ends the superstep with a chip-wide sync. */
void lwi_sync_all(lw *L);
/* Run the routine at wrk pc `entry` on every worker of tile t (with $m0 := v), wait for them. */
void lwi_run_all(lw *L, uint32_t t, size_t entry);
void lwi_run_all_m0(lw *L, uint32_t t, size_t entry, uint64_t v);
/* $m1 := this worker's first row of `rows` in blocks of rw (the last blocks overlap). */
void lwi_emit_start_row(lw *L, uint32_t t, uint32_t rows, uint32_t rw);
/* The current operator uses tiles base..base + n - 1 (the first pass records them: its weights
 * go there). */
void lwi_use_tiles(lw *L, uint32_t n);
/* An operator of tn tiles, few against the chip (a decode step's LayerNorm of one row, its
 * Softmax), starts at a tile chosen by its kind, shapes and name rather than at tile 0, so that
 * their code does not pile up on tile 0: with L->tload, among the runs of tn tiles where the
 * weights of the operators of many tiles are fewest (its own weights then take the memory those
 * leave). Sets and returns L->base. Operators of more tiles keep base 0. */
uint32_t lwi_spread(lw *L, uint32_t tn);
/* An operator with weights on tn tiles (a MatMul, Gemm or Conv of every planner, a LayerNorm of
 * many rows) starts, when L->wload is set, at the first tile of the run of tn tiles whose fullest
 * holds the fewest weights of the operators before it (the first such run), or, keyed, where an
 * operator of the same key and tiles started before; else at tile 0. Under the code spread
 * (L->cspread) a keyed operator met before starts instead where its last one's code, added to the
 * code on the tiles, leaves the tiles where it is heavy, then the fullest tile, least full, among
 * the runs whose fullest holds no more weights than the keyed start's and a quarter of the tile
 * (that start first, then from tile 0; code_start). Sets L->base and L->toff and returns the
 * first tile. */
uint32_t lwi_place_op(lw *L, uint32_t tn, bool keyed);
/* After a keyed operator's code (before lwi_check_code), under the code spread: the instructions it
 * put on each of its tiles, its key's profile for the next operator of the key. */
void lwi_code_profile(lw *L);
/* After each operator: each tile's code against its memory (LW_INSN_BYTES an instruction, the halt
 * to come counted); TS_EINPUT naming the tile, the bytes over and the operators that put the most
 * code there. */
ts_status lwi_check_code(lw *L);
/* The tiles' code as the program's streams (worker code after the supervisor's), the marks; *out
 * takes L->prog. */
ts_status lwi_finish(lw *L, ts_program **out);

/* ---- tile memory (lower_ipu_mem.c) ---- */

/* The SRAM element (sends and receives of one superstep are kept in different ones). */
uint64_t lwi_element_bytes(const lw *L);
/* The element-aligned span [av[0], av[1]) of [addr, addr + bytes). */
void lwi_elem_span(const lw *L, uint64_t addr, uint64_t bytes, uint64_t av[2]);
/* Dynamic blocks, first fit: kept until released (alloc), avoiding [av0, av1) (av1 0: anywhere),
 * or the current operator's buffers, freed with it (talloc), avoiding the element-aligned spans
 * av[0..nav) ([lo, hi) pairs; hi 0: none). */
uint64_t lwi_alloc(lw *L, uint64_t bytes);
uint64_t lwi_alloc_avoid(lw *L, uint64_t bytes, uint64_t av0, uint64_t av1);
uint64_t lwi_alloc_apart(lw *L, uint64_t bytes, const uint64_t (*av)[2], size_t nav);
void lwi_release(lw *L, uint64_t a);
uint64_t lwi_talloc(lw *L, uint64_t bytes);
uint64_t lwi_talloc_avoid(lw *L, uint64_t bytes, uint64_t av0, uint64_t av1);
uint64_t lwi_talloc_apart(lw *L, uint64_t bytes, const uint64_t (*av)[2], size_t nav);
/* The current operator's weights: initial data placed for it alone (0 in the first pass), the same
 * address on each of its tiles. */
uint64_t lwi_salloc(lw *L, uint64_t bytes);
/* Initial data: len bytes at addr of tile t (nothing in the first pass); TS_EINTERNAL for the
 * current operator's weights on a tile outside those the first pass found it to use. */
ts_status lwi_seg(lw *L, uint32_t t, uint64_t addr, const void *bytes, uint64_t len);
/* The weights' addresses, each tile its own stack below the tables' perm bytes (lw's memory): from
 * the last operator to the first, operator k's at the lowest weight byte of its tiles w[k].lo..hi-1
 * less its bytes; w[k].lim the lowest weight byte on any tile then. T tiles, nn operators.
 * Operators whose tiles all include one tile stack exactly as one stack would. TS_ENOMEM. */
ts_status lwi_place_weights(lw_wt *w, size_t nn, uint32_t T, uint64_t top, ts_err *err);
/* The same with the operators of at most `narrow` tiles (0: none) placed first, at the top, then
 * the others (lwi_place_op's spread: an operator's weights take one address on all its tiles, so
 * operators of many tiles placed among the spread ones went below the highest of them). */
ts_status lwi_place_weights_by(lw_wt *w, size_t nn, uint32_t T, uint64_t top, uint32_t narrow, ts_err *err);
/* load (T entries) from a first pass's w: per tile, the weight bytes of the operators covering it,
 * all of them or (wide) those whose weights lie on more than T / 8 tiles. */
void lwi_weight_sums(const lw_wt *w, size_t nn, uint32_t T, bool wide, uint64_t *load);
/* tload (T entries) from a first pass's w: lwi_weight_sums of the wide operators. True if an
 * operator spread by lwi_spread has weights. */
bool lwi_tile_load(const lw_wt *w, size_t nn, uint32_t T, uint64_t *tload);
/* A table the same on every tile, placed once per content on tiles 0..tn-1; *rc gets an error. */
uint64_t lwi_stable(lw *L, const void *v, uint64_t bytes, uint32_t tn, ts_status *rc);
/* Tile memory the current operator needs, and its check against the tile ("what 'name' needs
 * ... KiB per tile ..."; sets L->overfull). */
uint64_t lwi_need_bytes(const lw *L);
ts_status lwi_check_fit(lw *L, const char *what, const char *name);
/* The graph inputs as initial data, in chunks of whole rows over the tiles. */
ts_status lwi_place_inputs(lw *L);

/* ---- the exchange (lower_ipu_exchange.c) ---- */

/* Element e of a tensor placed at P: its tile, its element index there, and how many elements from
 * e on lie contiguously on that tile. */
uint64_t lwi_pl_run(const lw_place *P, uint64_t e, uint32_t *tile, uint64_t *off);
/* Tile L->base + t, t < tn, needs nr[t] (NULL: 1) ranges of tensor x, the j-th [lo[t] + j*sst, hi[t] + j*sst),
 * at element offsets j*dstr of one contiguous slice of its memory; where[t] gets the slice's
 * address (see lower_ipu_exchange.c). */
ts_status lwi_gather(lw *L, int x, uint32_t tn, const uint64_t *lo, const uint64_t *hi, const uint32_t *nr,
                     uint64_t sst, uint64_t dstr, bool force, uint64_t *where);
/* Tile t arms a receive of `words` words from tile src into `to`; sends `words` words at `from`
 * to tile dst. */
void lwi_recv(lw *L, uint32_t t, uint64_t to, uint32_t src, uint64_t words);
void lwi_send(lw *L, uint32_t t, uint64_t from, uint32_t dst, uint64_t words);
/* The check before emission that the program cannot hang or drop words in the exchange: in every
 * superstep, the words each tile waits for from another equal the words that tile sends it, both
 * tiles have streams, and the receiver arms its input in time: a word that arrives before its
 * receiver's input selects the sender is lost. After the chip-wide sync every supervisor starts
 * together, so a receive is in time when the receiver's supervisor reaches it through code of known
 * length (setzi, loads, stores, rpt loops of a count set there) in no more cycles than the sender's
 * reaches its first send to it (a receive after the receiver's rxwait, a second transfer in the
 * superstep, is not checked). TS_EINTERNAL naming
 * the superstep, the tiles and the operators otherwise. */
ts_status lwi_check_exchange(lw *L);
/* Whether tile r would arm a receive from tile s too late to take its words were both to arm and
 * send now, in this superstep (by lwi_check_exchange's rule, with what each has issued since the
 * superstep began: a gather's local copies, say); the caller then syncs first. */
bool lwi_late(const lw *L, uint32_t r, uint32_t s);

/* ---- operators of planner (a) ---- */

/* The driver's checks (lower_ipu.c): an error naming the operator ("... (the IPU lowering does not
 * support this yet)"); input x must be placed (an activation or a graph input); is x held as f16
 * halves. */
ts_status lwi_unsupported(lw *L, const ts_graph_node *n, const char *why);
ts_status lwi_need_placed(lw *L, const ts_graph_node *n, int x);
bool lwi_held_half(const lw *L, int x);

/* out[row r, output o] = sum_k a[r][k] w[k][o] (+ bias[o]), rows of 2*kp f32 at a + r*a_stride;
 * coefficient blocks [q][kp][unit][2] at w (U*8 bytes each); output o = q*U + u stored at
 * out + r*out_row + q*out_q + u*out_u; bias (0 = none) U floats per q. */
typedef struct mm_args {
    uint32_t rows, nq, kp;
    uint64_t nq_real;          /* outputs to store: nq*U, less in a partial last group */
    uint32_t units;            /* AMP units: outputs per group */
    bool half;                 /* f16 inputs and coefficients (f16v4amp, 4 inputs per unit) */
    bool out16;                /* outputs rounded to f16 and stored as halves (else f32) */
    uint64_t a, a_stride, w, bias, out;
    int64_t out_row, out_q, out_u;
    uint32_t taps;             /* > 0: the input is read in `taps` runs of $m11 pairs, $m4 advanced by
                                * tap_skip bytes between them (a kernel row of a channel-last image) */
    int32_t tap_skip;
    uint64_t acc;              /* != 0: add the f32 partial sums at acc (rows acc_row bytes apart, outputs
                                * of a row contiguous) instead of bias */
    int64_t acc_row;
    bool tab;                  /* a, w, out, acc, bias and kp from the six words at $m0 (one routine for
                                * every step; acc and bias then only say whether there are any; under
                                * the shared-coefficient kernel the sixth word is its repeat count) */
} mm_args;

/* The AMP matrix-product kernel (lower_ipu_matmul.c): the routine every worker of tile t runs on
 * its block of m->rows; and the AMP groups of one row of it, m->nq_real outputs (the coefficients
 * from $m5, the input from $m2, the bias or partial sums from $m8, the outputs to $m6). */
void lwi_emit_mm(lw *L, uint32_t t, const mm_args *m);
void lwi_emit_amp_groups(lw *L, uint32_t t, const mm_args *m);
/* The end of one group of AMP outputs: the worker's accumulators read, the bias or partial sums at
 * register rb added (rb stepped), nstore outputs stored at register ro (ro stepped). */
void lwi_emit_group_out(lw *L, uint32_t t, const mm_args *m, uint32_t nstore, int32_t rb, int32_t ro);
/* The shared-coefficient AMP kernel (lower_ipu_ampk.c): lwi_emit_mm's routine with one coefficient
 * load serving all the workers, when the shape and the tile allow it; false (nothing emitted)
 * otherwise. */
bool lwi_emit_mm_shared(lw *L, uint32_t t, const mm_args *m);
/* The bodies of a group under that kernel when it takes m (the repeat count of a table's step is
 * this less 1), else 0. */
uint32_t lwi_mm_shared_count(const lw *L, const mm_args *m);
/* Where that kernel on more than 8 units (coefficient blocks worker by worker, one post-incremented
 * pointer) wants the 16-byte block `pos` of input step k2 of a group of `steps` input steps: *chunk,
 * in 16-byte blocks from the group's start; false when U is 8 or less, has no schedule, or steps
 * are not whole bodies. */
bool lwi_amp_wchunk(uint32_t W, uint32_t U, uint64_t steps, uint64_t k2, uint32_t pos, uint64_t *chunk);

/* A convolution's shape (a Gemm of one row is one of C = K input channels on a 1x1 image). */
typedef struct cv_shape {
    uint64_t C, H, Wd, M, kh, kw, sh, sw, pt, pl, pbot, pr, Ho, Wo;
    const ts_graph_tensor *Wt, *Bt; /* weights; bias of M values or NULL */
    int wid, bid;
    int wmode;                      /* 0: Conv [M][C][kh][kw]; 1: Gemm B[N][K] (transB); 2: B[K][N] */
    bool half;                      /* f16: inputs and weights rounded to f16 for f16v4amp (if C is even) */
    uint64_t N;                     /* images of a batch (0 or 1: one), each on tiles of its own */
    uint64_t x0;                    /* the input's first element (an image of a batch lowered alone) */
    struct cv_wkeep *wkeep;         /* NULL; else the weights placed by the first image and reused */
} cv_shape;
/* Weights shared by the images of a batch lowered one after another. */
typedef struct cv_wkeep { bool set; uint64_t waddr, baddr; } cv_wkeep;

/* Each operator: n's output placed in L->pl, its supersteps emitted; sc is scratch. */
ts_status lwi_lower_matmul(lw *L, const ts_graph_node *n, lw_scr *sc);    /* lower_ipu_matmul.c */
ts_status lwi_lower_bmm(lw *L, const ts_graph_node *n, lw_scr *sc);
/* f16 tensor x held the other way for the current operator alone (es 2: halves, 4: f32 words): each
 * tile holding it converts its elements into a buffer of the operator in one compute superstep, and
 * x's placement names that buffer (the caller puts the placement back after the operator). Nothing
 * when x is held so already, or its chunk (flat: its elements) is odd. */
ts_status lwi_reheld(lw *L, int x, uint32_t es);
ts_status lwi_lower_conv(lw *L, const ts_graph_node *n, lw_scr *sc);      /* lower_ipu_conv.c */
ts_status lwi_lower_conv_shape(lw *L, const ts_graph_node *n, lw_scr *sc, const cv_shape *s);
/* A batched Conv one image after another on all tiles, each image's output moved into the batch's
 * flat layout (lower_ipu_batch.c): when the images side by side replicate the weights too often. */
ts_status lwi_lower_conv_images(lw *L, const ts_graph_node *n, lw_scr *sc, const cv_shape *s);
/* A Conv with groups, dilations or a batch, on the workers' f32 units (lower_ipu_dconv.c). */
ts_status lwi_lower_dconv(lw *L, const ts_graph_node *n, lw_scr *sc, const ts_geom_window *w);
ts_status lwi_lower_eltwise(lw *L, const ts_graph_node *n, lw_scr *sc);   /* lower_ipu_eltwise.c */
/* The ranges of x's elements (placed at P, total of them) each tile of P holds: sc's lo, hi, nr (the
 * gather's ranges of another operand laid out as x), cnts[t] the elements from x's chunk start. */
void lwi_eltwise_ranges(const lw_place *P, uint64_t total, lw_scr *sc, uint64_t *cnts);
ts_status lwi_lower_softmax(lw *L, const ts_graph_node *n, lw_scr *sc);
ts_status lwi_lower_layernorm(lw *L, const ts_graph_node *n, lw_scr *sc);
ts_status lwi_lower_transpose(lw *L, const ts_graph_node *n, lw_scr *sc);
/* The IR's HardSwish (TS_OP_COUNT while the IR has none: it is matched by name); whether op is one
 * of the one-operand elementwise ops (Relu, Gelu, Clip, Sigmoid, Tanh, HardSwish). */
ts_graph_op lwi_op_hardswish(void);
bool lwi_unary_op(ts_graph_op op);
/* Concat, Slice and Expand: data movements (lower_ipu_move.c). */
ts_status lwi_lower_move(lw *L, const ts_graph_node *n, lw_scr *sc);
/* Whether move operator n reads its first input in place (its output is that memory). */
bool lwi_move_alias(lw *L, const ts_graph_node *n);
ts_status lwi_lower_pool(lw *L, const ts_graph_node *n, lw_scr *sc);      /* lower_ipu_pool.c */

/* ---- planner (b) ---- */

/* A MatMul/Gemm planner (b) generates code for. */
typedef struct t10_op {
    const ts_graph_tensor *A, *B, *C;
    uint64_t M, K, N;
    bool tb;   /* Gemm transB: B is [N][K] */
    bool gemm; /* a Gemm */
    bool conv; /* a Conv: M = output pixels, K = input channels x taps, N = output channels */
    bool half; /* f16 throughout (a MatMul/Gemm): halves in and out, f32 partial sums, f16v4amp */
    uint64_t wo; /* a Conv's output row (pixels) */
    uint64_t st, wi, hwi; /* a Conv's stride (1 but for a strided 1x1), input row and input pixels */
    uint64_t taps;        /* a Conv's kernel positions kh x kw (1: a 1x1 Conv); k = channel x taps + tap */
    uint64_t kh, kw, hin; /* a Conv's kernel, input rows */
    uint64_t pt, pl, pr;  /* a Conv's padding: top, left, right (the bottom is implied by the output rows) */
    uint64_t nimg;        /* a Conv's images (its batch, folded into M: image by image) */
    uint64_t creal;       /* a Conv's input channels (K / taps, or fewer where an f16 Conv's are padded
                           * to a multiple of 4 with zero channels) */
    bool read; /* a Conv's output is read by another operator */
} t10_op;

/* lower_ipu_t10_plans.c. Node n as planner (b) takes it into *s; false if it does not. */
bool lwi_t10_shape(const ts_graph *g, const ts_graph_node *n, t10_op *s);
/* Before the lowering: a plan for every MatMul/Gemm/1x1 Conv planner (b) can generate code for
 * (plans[node].tiles = 0 for the others), from each one's Pareto set over weight bytes, trading
 * memory across them within `budget` bytes per tile (ts_t10_reconcile). *total (NULL: not wanted)
 * gets the bytes per tile the chosen plans take by the model (their weights and the largest other
 * part), at most budget; 0 when nothing was traded (no such operator, or plans imposed). */
ts_status lwi_t10_plans(const ts_graph *g, const ts_lower_ipu_params *p, uint64_t budget, ts_t10_plan *plans,
                        uint64_t *total, ts_err *err);
/* The f16 AMP units of planner (b)'s Conv s with column blocks of cols and k per step kp where they
 * are more than 8 (MK2's 16: the shared-coefficient kernel with its blocks worker by worker,
 * lower_ipu_ampk.c): whole groups of them and steps of whole bodies; else 0 (8 units, as (a)). */
uint32_t lwi_t10_wide(const ts_lower_ipu_params *p, const t10_op *s, uint64_t cols, uint64_t kp);
/* lower_ipu_t10.c: node n with its plan. */
ts_status lwi_t10_matmul(lw *L, const ts_graph_node *n, lw_scr *sc, const ts_t10_plan *plan);

#endif
