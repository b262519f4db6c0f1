/* workloads/tsp/lower_tsp_int.h — private declarations of the TSP lowering (not for other modules).
 *
 * The rooms, in the order a compilation uses them:
 *   lower_tsp.c  the driver: checks the target, walks the graph one operator at a time, plans
 *                the instruction fetches, emits the queues and fills the report
 *   memory.c     MEM allocation (free ranges per hemisphere and bank) and tensor placement,
 *                the images of initial data, graph inputs
 *   products.c   MatMul, Gemm and Conv as streamed matrix products on the MXM planes (the east ones for
 *                blocks of many passes)
 *   vxm_ops.c    Relu, Add, MaxPool and GlobalAveragePool on the VXM
 *   softmax.c    Softmax on the VXM, with the row sum on plane W1 (its all-ones f16 block)
 *   layernorm.c  LayerNormalization on the VXM, with the row sums on plane W1
 *   concat.c     Concat, Slice, Transpose (keeping the channel axis) and Expand as products of
 *                their inputs with 0/1 blocks (products.c runs them)
 *   ewise.c      elementwise operators in f32 on the VXM: Clip, Sigmoid, Tanh, HardSwish, Gelu, and
 *                Add, Sub, Mul, Div with a constant or (Sub, Mul) a second activation
 *   ifetch.c     instruction fetch: ifetches and their text reads for queues longer than the
 *                queue capacity, and the replay that checks every queue
 *   sched.c      the reservation tables (bitmaps over cycles, the undo log, pending instructions,
 *                the first-fit search of a group, stream pools) and the units as resources: MEM
 *                reads and writes (ports, banks, the pairing rule), VXM operations (ALUs, latches)
 *   lowering.c   the registry adapter: parameters from a config, the per-layer attribution
 * The lt_ functions are the rooms' own helpers under names the linker sees; each is documented
 * where it is defined.
 */
#ifndef TS_WORKLOADS_TSP_LOWER_TSP_INT_H
#define TS_WORKLOADS_TSP_LOWER_TSP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/tsp/tsp_target.h"
#include "core/program.h"
#include "workloads/graph.h"
#include "workloads/lower/errors.h"
#include "workloads/lower/fill.h"
#include "workloads/lower/geometry.h"
#include "workloads/tsp/lower_tsp.h"

/* Opcode numbers: the TSP's one table. */
enum lt_op {
#define TSP_OP(id, mn, ops, cls, unit, ev, fl, doc) LT_##id,
#define TSP_OPL(id, mn, ops, cls, unit, def, src, ev, fl, doc) LT_##id,
#include "arch/tsp/tsp_isa.def"
#undef TSP_OP
#undef TSP_OPL
    LT_COUNT
};

enum { EAST = 0, WEST = 1 };

/* Stream pools (32 streams per direction): first stream and count. Groups of 4 (int32, f32) start
 * at multiples of 4. */
enum { P_WGT, P_ACT, P_E2V_W, P_FROMV_W, P_W2V_E, P_FROMV_E, P_PACK_W, P_EACT, P_COUNT };
/* The stretches of a stream a value needs, from its producer to its consumer: west of the VXM, at the
 * VXM, east of it (a mask of them). Two values on one stream and trajectory meet only where their
 * stretches do: a weight row from the west MEM to a west plane never meets a value the VXM reads
 * from the east (docs/lowering-tsp.md, *Stream stretches*). */
enum { SEG_W = 1, SEG_V = 2, SEG_E = 4, SEG_ALL = 7, LT_SEGS = 3 };
typedef struct lt_pool {
    int dir;
    int first, n;  /* streams first .. first + n - 1 */
    unsigned seg;  /* the stretches its values need */
    int from;      /* groups are tried from stream first + from on, then from first (a pool that grew over
                    * streams others use takes its own first) */
} lt_pool;
extern const lt_pool lt_pool_sets[3][P_COUNT];

#define LT_STREAMS 32    /* streams per direction the pools use (the lowering needs that many) */
#define IW_STREAMS 16
#define DUAL_PASSES 128  /* a block streaming this many vectors is installed on two planes */
#define QUAD_PASSES 256  /* ... and this many on all four (products.c, install_block) */
#define GIVE_UP 1000000u /* cycles searched for one group before the lowering gives up */
#define DIAG_OFF 65536u

/* ---- bitmaps over cycles (sched.c) ---- */

typedef struct bits { uint64_t *w; size_t nw; } bits;

static inline bool lt_bget(const bits *b, uint64_t i)
{
    size_t k = (size_t)(i >> 6);
    return k < b->nw && (b->w[k] >> (i & 63)) & 1;
}

int lt_bput(bits *b, uint64_t i, bool v);

/* ---- the scheduler's state ---- */

/* An instruction of a queue at cycle t; ly: the layer (L->layers) of the operator that placed it
 * (UINT32_MAX: none), which the text's count by operator reads (ifetch.c, text_by_op). */
typedef struct rec { uint64_t t; ts_insn in; uint32_t ly; } rec;
/* The last cycle a rec takes its queue: a `repeat n, d` (LEAN, ifetch.c: at the cycle of the
 * instruction it repeats) through its last copy. */
static inline uint64_t lt_rec_end(const rec *r)
{
    return r->in.op == LT_REPEAT ? r->t + (uint64_t)r->in.a[0] * (uint64_t)r->in.a[1] : r->t;
}
typedef struct lq { rec *v; size_t n, cap; bits issue, wr; } lq;
typedef struct undo { bits *b; uint64_t i; } undo;
typedef struct pend { uint32_t q; uint64_t t; ts_insn in; } pend;

/* A free range of words (the same range in every slice of a hemisphere). */
typedef struct fr { uint32_t base, len; uint64_t avail; } fr;
typedef struct alloc { fr *v; size_t n, cap; uint32_t first, top, limit; } alloc;

/* A placed int8 tensor. */
typedef struct tens {
    bool placed, nonneg, output;
    bool fused;             /* computed by the product before (products.c: a fused Relu's input, a fused Add's
                             * inputs and output): its node has nothing left to do */
    uint32_t P, T, C;       /* pixels, channel tiles, channels */
    uint32_t base, off, nw; /* region: words base..base+nw in every W slice */
    uint64_t avail;         /* writes into the region only after this cycle */
    uint64_t *ready;        /* per vector: first cycle a read may issue */
    uint64_t last_read;
    int users;              /* consumer nodes not yet scheduled */
    int owner;              /* tensor whose region this is (aliases), else itself */
    uint32_t ones;          /* lanes C .. C + ones - 1 of every vector hold 1: the bias lanes of the 1 x 1 Conv
                             * that reads it (products.c, ones_lanes); 0: those lanes hold 0 */
    uint32_t rep, repk;     /* a product's output written for Convs that pack their taps (products.c,
                             * pack_slots): pixel (y, x)'s C channels lie in slot (x + repk y) mod rep, lanes
                             * slot C .. slot C + C - 1, the other lanes 0; rep 0: in lanes 0 .. C - 1 */
} tens;

/* The 0/1 rows of a moving operator laid out once (products.c: cat_rows). */
typedef struct lt_rows { uint8_t *img; uint64_t rows; uint32_t woff, wbase; } lt_rows;

/* A weight tensor's rows laid out for a matrix product (products.c: weights), kept so that another
 * product reading the same tensor the same way (a tied embedding and LM head, a weight shared by
 * two MatMuls) reads them from there instead of a second copy. */
typedef struct lt_wrows {
    int wid, kind;
    uint32_t N, K, KT, woff, wbase, wfirst, wn;
    bool band;              /* in runs (products.c, wrow_at) */
    bool east;              /* ... and their east copy (products.c, east_rows) */
    uint32_t ewoff, ewbase;
    uint32_t wsplit;        /* rows from wsplit on lie in the east (products.c, split_rows); 0: none */
    uint32_t w2off, w2base;
    uint32_t e2n, w3base;   /* split_rows in both east bank halves: east words e2n on at w3base (0: one) */
} lt_wrows;

/* A constant of 4 words of every east slice (an f32 scale) kept in ALU latches while a product's
 * passes read it (sched.c, lt_kept_in): the word, and up to LT_KEPT_MAX latches loaded with it, each
 * its ALU, the tag it carries and the cycles from its commit through `held` reserved for it. */
#define LT_KEPT_MAX 4
typedef struct lt_kept {
    uint32_t word, n;
    struct { uint32_t alu, tag; uint64_t t0, used, held; } l[LT_KEPT_MAX]; /* used: its last read */
} lt_kept;

typedef struct lt {
    const ts_graph *g;
    const ts_tsp_target *tg;
    ts_err *err;
    ts_program *prog;
    uint32_t VL, nW, nE, nalu, nq;
    lq *q;
    bits (*bank)[2];       /* [MEM data-segment index][bank] */
    bits lat[TS_TSP_TARGET_MAX_ALUS];
    bits diag[LT_SEGS][2][TS_TSP_TARGET_MAX_STREAMS]; /* [stretch][direction][stream], by trajectory */
    undo *u; size_t nu, capu;
    pend *pd; size_t npd, cappd;
    bool oom;
    uint32_t tag;
    uint64_t last;         /* last cycle with an instruction */
    uint64_t rdmax;        /* latest MEM read of the group being placed */
    uint32_t rot;          /* rotating start for slice and ALU choices */
    alloc al[2][2];        /* [hemisphere][bank]: west, east; words below and above half */
    uint32_t half;         /* first word of bank 1 */
    tens *t;               /* per graph tensor */
    /* per plane (W0, W1, E0, E1: products.c, plane_pos): the last abc of the block it holds */
    uint64_t plane_busy[4];
    uint64_t buf_free[4];  /* per plane: the first cycle an lw may fill its weight buffer (products.c,
                            * install_buffered: one after the last iw that copied it) */
    int mode;              /* lower_tsp.c, MODES: 0 the east planes too and the wide pools, 1 the west planes
                            * alone, 2 and the narrow pools (the schedule of before the east planes) */
    const lt_pool *pools;  /* lt_pool_sets[mode] */
    bool lean_runs;        /* LEAN's first try: the partial sums in runs (products.c, psum_word) */
    bool lean;             /* lower_tsp.c, LEAN: a text whose count alone is over every word free of data is
                            * tried again with fewer MEM accesses (every product keeps its scale in a latch) */
    bool east_used;        /* a product's blocks went on the east planes */
    uint32_t ezero;        /* 1 + a word of zeros in every east slice (rows past a block's valid ones on
                            * an east plane), 0 until laid out (products.c, east_rows) */
    int next_plane;
    bool keep_scale;       /* the final passes of the product being placed read its scale from a latch (ks) */
    bool keep_bias;        /* ... and its first passes its bias (kb), where it has one bias vector */
    lt_kept ks, kb;        /* ... those (lt_search puts them back after a failed try) */
    uint32_t ptag;         /* LEAN: the one tag of every single-plane pass of the product being placed (its
                            * abc and requantisation then repeat from pass to pass); 0: a tag a pass */
    ts_lower_tsp_layer *layers; size_t nlayers, caplayers;
    uint64_t words_used;
    uint32_t fwin;         /* every queue keeps a free cycle in each aligned window of fwin (0: none) */
    uint32_t (*tnext)[2];  /* [MEM data-segment index][bank]: next free word for instruction text */
    uint64_t fetches;
    bool text_short;       /* the instruction text does not fit in MEM (ifetch.c): no later try helps */
    bool text_over;        /* ... its count alone is over every word free of data (ifetch.c, text_fits): no
                            * other schedule helps either (lower_tsp.c, MODES) */
    bool text_far;         /* ... and over LT_LEAN_REACH times those words (ifetch.c, text_fits) */
#define LT_LEAN_REACH 5   /* LEAN cut BERT-base's count to 0.48 of its words, GPT-2 small prefill's to
                           * 0.46 (lower_tsp.c): its own shortfall is the figure to give up to 5 times */
    bool text_live;        /* text also below the data, in words free until first written (ifetch.c) */
    bool text_out;         /* the words above the data ran out while fetches were placed (ifetch.c) */
    uint32_t fetch_slack;  /* entries a queue asks for text ahead of its own count (ifetch.c; 0 on the first try) */
    lt_rows *cats; size_t ncats, capcats; /* the 0/1 rows laid out so far (owned) */
    lt_wrows *wts; size_t nwts, capwts;   /* the matrix products' weight rows laid out so far */
#define LT_ONEHOT_MAX 4
#define LT_CGROUPS 4      /* the compact layout's groups of east slices holding constants */
#define LT_CPOOL 64       /* words of a pool of constants (or more for a larger constant) */
#define LT_GSHIFT 24      /* a constant's word: the real word plus (group + 1) << LT_GSHIFT (lt_rd_any) */
    uint32_t onehot_c0[LT_ONEHOT_MAX]; /* the channel offset of V's heads each set was laid out for */
    tens onehot[LT_ONEHOT_MAX]; /* the one-hot vectors of A V's transposes (products.c; ready owned); [0] alone
                                 * but in the compact layout */
    bool compact;          /* the compact layout, tried when the first does not fit (lower_tsp.c) */
    bool room_short;       /* a region found no room (memory.c) */
    /* the compact layout's constants (memory.c, lt_const_region): a pool of words whose LT_CGROUPS groups
     * of east slices hold different constants, each filled from the pool's first word */
    uint32_t cpool_base, cpool_words, cpool_fill[LT_CGROUPS];
#define LT_ZC_MAX 64
    uint32_t zc[LT_ZC_MAX][3]; uint32_t nzc; /* products' words without a bias laid out: tiles, scale bits, word */
#define LT_EWC_MAX 16
    /* the tensor constants of ewise.c laid out: tensor, mode, rows, int8 (0/1), tiles, word (every layer of a
     * decoder adds the same causal mask) */
    uint32_t ewc[LT_EWC_MAX][6]; uint32_t newc;
#define LT_ONES_MAX 8
    uint32_t ones[LT_ONES_MAX][2]; uint32_t nones; /* the all-ones f16 rows laid out: width, word (softmax.c) */
    bool mono;             /* a batch > 1: the VXM groups of one operator are searched from the cycle the one
                            * before it took (a batch's first images finish while the VXM is busy with the
                            * others: searching each group from its inputs' cycle costs O(groups x cycles)) */
} lt;

/* Register numbers (the target's numbering): stream s of direction dir, the latch of ALU a. */
static inline int32_t lt_sreg(const lt *L, int dir, int s)
{
    return dir == WEST ? L->tg->reg.west + s : L->tg->reg.east + s;
}

static inline int32_t lt_areg(const lt *L, int a)
{
    return L->tg->reg.alu + a;
}

/* The stream-register position of MEM slice `mem` (data-segment index). */
static inline uint32_t lt_mem_pos(const lt *L, uint32_t mem)
{
    return mem < L->nW ? L->tg->pos_mem_w[mem] : L->tg->pos_mem_e[mem - L->nW];
}

/* ---- reservations (sched.c) ---- */

uint32_t lt_new_tag(lt *L);
bool lt_take(lt *L, bits *b, uint64_t i);
void lt_undo_to(lt *L, size_t mark, size_t pmark);
void lt_emit(lt *L, uint32_t q, uint64_t t, uint16_t op, int n, const int32_t *a);
int lt_keep(lt *L);
/* Emit one instruction with the operands listed. */
#define LT_NOPND(...) ((int)(sizeof((int32_t[]){__VA_ARGS__}) / sizeof(int32_t)))
#define E1(L, q, t, op, ...) lt_emit(L, q, t, op, LT_NOPND(__VA_ARGS__), (int32_t[]){__VA_ARGS__})

/* A group of instructions tried at cycle t: true when placed (its reservations taken, its
 * instructions pending), *w then the cycle of its last write. */
typedef bool (*lt_fit)(lt *L, const void *arg, uint64_t t, uint64_t *w);

/* What a group needs free at every cycle t it could go at, whatever else it chooses: reservations
 * at fixed offsets from t. A cycle where one is taken cannot hold the group, so the search skips
 * it without trying (a group's timing is fixed; only its streams, ALUs and replicated slices are
 * chosen). Only necessary conditions go in: a need left out costs a try, never a different cycle.
 * Needs past the capacity are dropped for the same reason. */
#define LT_NEED_MAX 192
typedef struct lt_need_bit { const bits *b; int64_t off; } lt_need_bit;     /* bit t + off of b free */
typedef struct lt_need_streams { int pool, w; int64_t off; } lt_need_streams; /* an aligned group of w
                                                                                * streams of pool free at
                                                                                * trajectory key t + off */
typedef struct lt_need_alu { int64_t off; uint32_t d; } lt_need_alu;           /* an ALU whose queue is free
                                                                                * at t + off and its latch
                                                                                * at t + off + d */
typedef struct lt_need {
    uint64_t tmin;          /* no cycle before this one (a write into a region only after its avail) */
    uint32_t nb, ns, na;
    lt_need_bit b[LT_NEED_MAX];
    lt_need_streams s[LT_NEED_MAX / 2];
    lt_need_alu a[LT_NEED_MAX / 2];
} lt_need;

void lt_need_rd(const lt *L, lt_need *n, uint32_t mem, uint32_t word, int64_t ta, uint32_t pc, int dir);
void lt_need_wr(const lt *L, lt_need *n, uint32_t mem, uint32_t word, int64_t tb, uint32_t pp, int dir,
                uint64_t lb);
void lt_need_group(const lt *L, lt_need *n, int pool, int w, int64_t t, uint32_t pos);
void lt_need_vop(const lt *L, lt_need *n, uint16_t op, int64_t t, int pool, int w);
void lt_need_vin(const lt *L, lt_need *n, uint32_t mem, uint32_t word, int64_t ta);
void lt_need_vin2(const lt *L, lt_need *n, uint32_t mem, uint32_t word, int64_t ta, bool other_stream,
                  uint32_t other_mem);
uint32_t lt_vop_lat(const lt *L, uint16_t op);

/* need: the group's needs, or NULL to try every cycle. */
ts_status lt_search(lt *L, lt_fit fit, const void *arg, const lt_need *need, uint64_t *t, uint64_t *w,
                    const ts_graph_node *nd, bool named);

static inline uint64_t lt_diag_key(int dir, uint64_t t, uint32_t pos)
{
    return dir == EAST ? t + DIAG_OFF - pos : t + pos;
}

bool lt_take_stream(lt *L, int dir, int s, uint64_t t, uint32_t pos, unsigned seg);
bool lt_stream_free(const lt *L, int dir, int s, uint64_t key, unsigned seg);
bool lt_take_group(lt *L, int pool, int w, uint64_t t, uint32_t pos, int *s);
int lt_cmp_rec(const void *a, const void *b);

/* ---- MEM and VXM (sched.c) ---- */

bool lt_rd(lt *L, uint32_t mem, uint32_t word, uint64_t ta, uint32_t pc, int dir, int s, uint32_t tag, uint64_t lb);
bool lt_rd_any(lt *L, int hemi, uint32_t word, uint64_t ta, uint32_t pc, int dir, int s, uint32_t tag);
bool lt_wr(lt *L, uint32_t mem, uint32_t word, uint64_t tb, uint32_t pp, int dir, int s, uint32_t tag, uint64_t lb,
           uint64_t *when);

/* A value the VXM reads: a stream group arriving at the VXM at cycle t, or an ALU latch committed
 * at cycle t and held (reserved) through cycle `held`. */
typedef struct val { int alu; int dir, s; uint64_t t, held; } val;

bool lt_hold(lt *L, val *v, uint64_t t);
bool lt_vop(lt *L, uint16_t op, int32_t type, int32_t from, uint64_t t, val *a, val *b, int pool, int w,
            uint32_t tag, val *out, int *ds);
bool lt_vop_tags(lt *L, uint16_t op, int32_t type, int32_t from, uint64_t t, val *a, val *b, int pool, int w,
                 uint32_t itag, uint32_t otag, val *out, int *ds);
bool lt_kept_in(lt *L, lt_kept *k, uint32_t word, int32_t type, uint64_t t, uint32_t tag, val *v, uint32_t *ktag);
void lt_kept_end(lt *L, lt_kept *k);
bool lt_vin_w(lt *L, uint32_t mem, uint32_t word, uint64_t ta, uint32_t tag, uint64_t lb, val *v);
bool lt_vin_w2(lt *L, uint32_t mem, uint32_t word, uint64_t ta, uint32_t tag, uint64_t lb, const val *other,
               uint32_t other_mem, val *v);
bool lt_scale_in(lt *L, uint32_t sword, uint64_t t, uint32_t tag, val *v);
bool lt_bias_in(lt *L, uint32_t bword, uint64_t t, uint32_t tag, val *v);
bool lt_byte_in(lt *L, uint32_t word, uint64_t t, uint32_t tag, val *v);

/* ---- MEM regions and placement (memory.c) ---- */

int lt_al_put(alloc *a, uint32_t base, uint32_t len, uint64_t avail);
uint32_t lt_fresh_room(const lt *L, int hemi, int *bank);
ts_status lt_region(lt *L, int hemi, uint32_t words, const char *what, const ts_graph_node *nd, bool fresh,
                    int bank, uint32_t *base, uint64_t *avail);
alloc *lt_alloc_of(lt *L, int hemi, uint32_t base);
int lt_bank_pref(const lt *L, const tens *x);
ts_status lt_place(lt *L, int id, uint32_t P, uint32_t C, const ts_graph_node *nd, bool fresh, int bank);
void lt_release(lt *L, int id);

/* Vector i of tensor x is word `word` of MEM slice `mem` (the west stripe). */
static inline void lt_slot(const lt *L, const tens *x, uint64_t i, uint32_t *mem, uint32_t *word)
{
    uint64_t k = x->off + i;
    *mem = (uint32_t)(k % L->nW);
    *word = x->base + (uint32_t)(k / L->nW);
}

/* Per-slice images of a region, added as data segments. */
typedef struct image { uint8_t **s; uint32_t n, words, base; } image;

ts_status lt_img_init(lt *L, image *im, uint32_t nslices, uint32_t base, uint32_t words);
ts_status lt_img_flush(lt *L, image *im, uint32_t first);
ts_status lt_const_region(lt *L, uint32_t words, const char *what, const ts_graph_node *nd, uint32_t *base);
ts_status lt_const_flush(lt *L, image *im);
ts_status lt_scale_const(lt *L, const ts_graph_node *nd, float sc, uint32_t *base);
ts_status lt_byte_const(lt *L, const ts_graph_node *nd, uint8_t byte, uint32_t *word);

const int64_t *lt_dims(const lt *L, int id, int *rank);
ts_status lt_shape_pc(lt *L, const ts_graph_node *nd, int id, uint32_t *P, uint32_t *C);
ts_status lt_place_input(lt *L, int id, const ts_graph_node *nd);

/* ---- layers (lower_tsp.c) ---- */

void lt_span(ts_lower_tsp_layer *y, uint64_t a, uint64_t b);
int lt_fused_relu(const lt *L, int out);
/* The Transpose whose input's vectors are MatMul mm's blocks' rows (Kᵀ), or NULL. */
const ts_graph_node *lt_kt_source(const ts_graph *g, const ts_graph_node *mm);
/* The Transpose of a 2-D weight MatMul mm reads as B[n][k], or NULL. */
const ts_graph_node *lt_wt_source(const ts_graph *g, const ts_graph_node *mm);

/* ---- Concat, Slice, Transpose, Expand as products (concat.c): 0/1 blocks on the planes ---- */

#define LT_CAT_MAX 8
typedef struct lt_cat {
    int op;                         /* TS_OP_CONCAT, _SLICE, _TRANSPOSE or _EXPAND */
    int n;                          /* inputs */
    int ids[LT_CAT_MAX];            /* their tensors */
    tens *x[LT_CAT_MAX];
    uint32_t kt0[LT_CAT_MAX + 1];   /* input i's channel tiles are blocks kt0[i] .. kt0[i + 1] - 1 */
    int r, cax;                     /* the output's rank and channel axis */
    int64_t od[TS_GRAPH_MAX_RANK];  /* the output's dimensions */
    int64_t id[LT_CAT_MAX][TS_GRAPH_MAX_RANK]; /* each input's, right-aligned to rank r */
    int64_t ax, off[LT_CAT_MAX];    /* Concat: the axis, each input's offset along it */
    int64_t start[TS_GRAPH_MAX_RANK], step[TS_GRAPH_MAX_RANK]; /* Slice, per axis */
    int64_t perm[TS_GRAPH_MAX_RANK]; /* Transpose: output axis k is input axis perm[k] */
    int rs;                         /* Reshape: 1 splits each input pixel's channels into G pixels, 2 joins
                                     * G pixels' channels into one (attention's heads), 0 neither */
    int64_t G, Z, Cin, Cout;        /* ... G, groups of Cout (split) or Cin (join) channels per tile Z */
    int out;                        /* the tensor it writes: the node's output, or a folded Transpose's */
    bool inplace;                   /* a split writing each group in the lanes it comes from (lt_k_inplace) */
    /* A Transpose keeping the channel axis folded into a split after it or a join before it
     * (lt_split_fold, lt_join_fold): its rank, channel axis, output and input dimensions and perm;
     * r 0: none. A split's output pixels are then the Transpose's, a join's input pixels its input's. */
    struct { int r, cax; int64_t od[TS_GRAPH_MAX_RANK], id[TS_GRAPH_MAX_RANK], perm[TS_GRAPH_MAX_RANK]; } tf;
} lt_cat;

ts_status lt_cat_shape(lt *L, const ts_graph_node *nd, lt_cat *c, uint32_t *M, uint32_t *N);
bool lt_reshape_moves(const ts_graph *g, const ts_graph_node *nd);
/* The Transpose keeping the channel axis (and moving pixels) that a head split writes for (the split's
 * output, through Reshapes that rename, read by it alone), else NULL. */
const ts_graph_node *lt_split_fold(const ts_graph *g, const ts_graph_node *split);
/* The head split whose input MatMul mm reads as B through the split and its folded Transpose (1, 0, 2),
 * the split's output read by mm alone: A V's V, whose rows the planes transpose from the split's input
 * directly (products.c, transpose_rows), so neither computes anything; else NULL. */
const ts_graph_node *lt_v_split(const ts_graph *g, const ts_graph_node *mm);
/* Q Kᵀ whose Q is a head split and its folded Transpose (1, 0, 2) and whose Kᵀ is read through a
 * Transpose of another head split of the same width (lt_kt_source), each read by it alone: the split
 * of Q (then MatMul mm reads Q's rows from that split's input, all heads of a tile in each vector, and
 * K's split writes each head where its channels lie, zeros elsewhere: lt_k_inplace), else NULL. */
const ts_graph_node *lt_q_split(const ts_graph *g, const ts_graph_node *mm);
/* The Div or Mul by one constant between lt_q_split's folded Transpose and MatMul mm (BERT's and
 * ViT's Q / 8), each read once, else NULL: it is computed on the split's input instead, whose every
 * element it scales alike, and mm reads Q's rows from its output. */
const ts_graph_node *lt_q_scale(const ts_graph *g, const ts_graph_node *mm);
/* Whether head split sp writes each head in the lanes its channels lie in (lt_q_split) where its Q Kᵀ has no
 * lt_q_scale. */
bool lt_k_inplace(const ts_graph *g, const ts_graph_node *sp);
/* Where Q Kᵀ mm has Q / 8 between Q's split and it (lt_q_scale): K's head split, which computes nothing.
 * The Div writes each head of Q in the lanes its channels lie in, zeros in the others (ewise.c), and
 * mm's blocks read K's rows from the split's input, all heads of a tile in each; else NULL. */
const ts_graph_node *lt_k_view(const ts_graph *g, const ts_graph_node *mm);
/* The tensor a head view reads for head split input id (lt_v_split's V, lt_k_view's Q): the input of
 * the Slice of the last axis that produced id where that Slice computes nothing (lower_tsp.c), the
 * Slice's first channel in *c0; else id itself, *c0 0. */
int lt_head_base(const lt *L, int id, uint32_t *c0);
/* The head join that A V mm writes directly (lower_tsp.c): mm's output [H, S, D] read only by a
 * Transpose (1, 0, 2) that the join [S, H, D] -> [S, H D] folds (lt_join_fold), D dividing 320
 * lanes; mm's block of head h then holds Vᵀ's rows at rows (D h) mod 320 on, the heads of a tile
 * its reduction blocks (products.c). Else NULL. */
const ts_graph_node *lt_av_join(const lt *L, const ts_graph_node *mm);
/* Whether head split sp is the split lt_k_view names for the Q Kᵀ reading it. */
bool lt_k_viewed(const ts_graph *g, const ts_graph_node *sp);
/* The Transpose keeping the channel axis whose output a head join alone reads, else NULL. */
const ts_graph_node *lt_join_fold(const ts_graph *g, const ts_graph_node *join);
/* squeeze.c: *out a copy of g whose rank-4 tensors of a batch of 1 are rank 3 (same ids, names
 * and values), or NULL when g has none, holds an image operator or a node that cannot follow. */
ts_status lt_squeeze(const ts_graph *g, ts_graph **out, ts_err *err);
/* squeeze.c: *out a copy of g whose packed in-projections (a MatMul by a weight [C, 3 D], its bias
 * Add, the Slices of Q, K and V, K's split read through Q / 8 masked per head) lay K out from a
 * multiple of vl lanes (Q, V, zeros, K), so that K's Slice computes nothing (same ids, names and
 * values of Q, K and V); NULL where g has none. */
ts_status lt_qkv_pack(const ts_graph *g, uint32_t vl, ts_graph **out, ts_err *err);
int lt_cat_input(const lt_cat *c, uint32_t kt);
int64_t lt_cat_vec(const lt_cat *c, uint32_t m, uint32_t kt);
bool lt_cat_one(const lt_cat *c, uint32_t n, uint32_t kt, uint32_t l, uint32_t VL, uint32_t N);
bool lt_cat_used(const lt_cat *c, uint32_t nt, uint32_t kt, uint32_t VL, uint32_t N);

/* ---- operators (products.c, vxm_ops.c, softmax.c): each checks what it takes, places its output
 * and schedules its groups into layer ly ---- */

ts_status lt_lower_product(lt *L, const ts_graph_node *nd, ts_lower_tsp_layer *ly);
ts_status lt_lower_elem(lt *L, const ts_graph_node *nd, ts_lower_tsp_layer *ly);
ts_status lt_lower_maxpool(lt *L, const ts_graph_node *nd, ts_lower_tsp_layer *ly);
ts_status lt_lower_gap(lt *L, const ts_graph_node *nd, ts_lower_tsp_layer *ly);
ts_status lt_lower_softmax(lt *L, const ts_graph_node *nd, ts_lower_tsp_layer *ly);
ts_status lt_lower_layernorm(lt *L, const ts_graph_node *nd, ts_lower_tsp_layer *ly);
ts_status lt_ones_block(lt *L, const ts_graph_node *nd, uint32_t N, ts_lower_tsp_layer *ly, uint64_t *T);
ts_status lt_lower_ewise(lt *L, const ts_graph_node *nd, ts_lower_tsp_layer *ly);
bool lt_is_hardswish(const ts_graph_node *nd);

/* ---- instruction fetch (ifetch.c) ---- */

ts_status lt_plan_fetches(lt *L);

#endif
