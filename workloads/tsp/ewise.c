/* workloads/tsp/ewise.c — elementwise operators computed in f32 on the VXM: Clip (ReLU6), Sigmoid,
 * Tanh, HardSwish, Gelu, and Add, Sub, Mul, Div with a constant (a scalar, or one value per
 * channel) or, for Sub and Mul, a second activation of the same shape (see docs/lowering-tsp.md,
 * *Elementwise operators*).
 *
 * An int8 activation q stands for q / 16 (the fixed point Softmax reads too). Each output vector
 * is one group: the int8 input(s) read from the west MEM, `cvt f32`, a short chain of f32 steps
 * through the ALU latches (constants read as f32 vectors from the east MEM, where they are
 * replicated in every slice), `cvt i8` (round to nearest even, saturating) and one write. The
 * chain of an operator is its plan (ew_plan): steps over earlier values and constants, so it
 * can be printed and tested apart from the schedule.
 */
#include "workloads/tsp/lower_tsp_int.h"

#include <math.h>
#include <string.h>

#include "core/alloc.h"

#define EW_Q 16.0 /* an int8 activation q stands for q / EW_Q */
#define EW_MAX_STEPS 12
#define EW_MAX_CONSTS 6

/* A step: op on operands a and b (b = NONE for a unary op): an operand >= 0 is a value (0 the
 * first input, 1 the second when there is one, then the steps' results in order), -1 .. -EW_MAX_CONSTS
 * constant -1 - operand. */
#define NONE (-100)
typedef struct ew_step { uint16_t op; int a, b; } ew_step;
/* A constant: one value v, or a tensor's values one per channel (per_tile), or one per channel of
 * each of its rows (rows > 0: a matrix [rows, channels] over an activation's last two axes, pixel p
 * reading row p mod rows: attention's causal mask over its heads). */
typedef struct ew_const {
    bool per_tile; uint32_t rows; double v; int id; int mode;
    uint32_t mask, az; /* mask > 0: per_tile, tile t's vector v in lanes mask (t mod az) to mask (t mod az + 1) - 1,
                        * zeros elsewhere (a head of Q per vector, lt_k_view); id -2 */
} ew_const;

typedef struct ew_plan {
    int nin;                       /* activations read: 1 or 2 */
    ew_step st[EW_MAX_STEPS]; int nst;
    ew_const c[EW_MAX_CONSTS]; int nc;
    bool nonneg;                   /* every result is >= 0 */
    bool i8;                       /* the chain is in int8 (a Clip with min 0: no conversions, one-byte
                                    * constants, a quarter of the streams) */
} ew_plan;

/* Constant modes for a per-channel tensor: its value v times EW_Q, v, or 1 / v. */
enum { CM_Q, CM_ONE, CM_INV };

static int k_scalar(ew_plan *p, double v)
{
    p->c[p->nc] = (ew_const){.v = v, .id = -1};
    return -1 - p->nc++;
}

static int k_tensor(ew_plan *p, int id, int mode, uint32_t rows, double v)
{
    p->c[p->nc] = (ew_const){.per_tile = true, .rows = rows, .v = v, .id = id, .mode = mode};
    return -1 - p->nc++;
}

/* Add step op(a, b); its value's number. */
static int step(ew_plan *p, uint16_t op, int a, int b)
{
    p->st[p->nst] = (ew_step){.op = op, .a = a, .b = b};
    return p->nin + p->nst++;
}

/* u stands for q (input 0). clamp(u, lo, hi) in q units: relu(u - lo) + lo, then hi - relu(hi - v). */
static void plan_clip(ew_plan *p, double lo, double hi)
{
    int v = 0;
    p->i8 = lo == 0.0; /* relu, then hi - relu(hi - r) with r in 0..127: no int8 step saturates */
    if (lo > -128.0) {
        if (lo == 0.0) {
            v = step(p, LT_RELU, v, NONE);
        } else {
            int k = k_scalar(p, lo);
            v = step(p, LT_ADD, step(p, LT_RELU, step(p, LT_SUB, v, k), NONE), k);
        }
    }
    if (hi < 127.0) {
        int k = k_scalar(p, hi);
        step(p, LT_SUB, k, step(p, LT_RELU, step(p, LT_SUB, k, v), NONE));
    }
    p->nonneg = lo >= 0.0;
}

/* 16 sigmoid(u / 16) = 8 + 8 tanh(u / 32); 16 tanh(u / 16). */
static void plan_sigmoid(ew_plan *p)
{
    int t = step(p, LT_TANH, step(p, LT_MUL, 0, k_scalar(p, 1.0 / (2.0 * EW_Q))), NONE);
    int k = k_scalar(p, EW_Q / 2.0);
    step(p, LT_ADD, step(p, LT_MUL, t, k), k);
    p->nonneg = true;
}

static void plan_tanh(ew_plan *p)
{
    int t = step(p, LT_TANH, step(p, LT_MUL, 0, k_scalar(p, 1.0 / EW_Q)), NONE);
    step(p, LT_MUL, t, k_scalar(p, EW_Q));
}

/* x relu6(x + 3) / 6 in q units: u (relu(u + 48) - relu(u - 48)) / 96. */
static void plan_hardswish(ew_plan *p)
{
    int k = k_scalar(p, 3.0 * EW_Q);
    int a = step(p, LT_RELU, step(p, LT_ADD, 0, k), NONE);
    int b = step(p, LT_RELU, step(p, LT_SUB, 0, k), NONE);
    int m = step(p, LT_MUL, step(p, LT_SUB, a, b), 0);
    step(p, LT_MUL, m, k_scalar(p, 1.0 / (6.0 * EW_Q)));
}

/* The tanh form of GELU, with x = u / 16: u (0.5 + 0.5 tanh(x (c0 + c1 x^2))), c0 = sqrt(2 / pi),
 * c1 = 0.044715 c0. It differs from the erf form by at most 3e-4 x 16 = 5e-3 of a step of q. */
static void plan_gelu(ew_plan *p)
{
    double c0 = sqrt(2.0 / 3.14159265358979323846);
    int x = step(p, LT_MUL, 0, k_scalar(p, 1.0 / EW_Q));
    int x2 = step(p, LT_MUL, x, x);
    int in = step(p, LT_ADD, step(p, LT_MUL, x2, k_scalar(p, 0.044715 * c0)), k_scalar(p, c0));
    int t = step(p, LT_TANH, step(p, LT_MUL, in, x), NONE);
    int h = k_scalar(p, 0.5);
    step(p, LT_MUL, step(p, LT_ADD, step(p, LT_MUL, t, h), h), 0);
}

/* ---- binary operators ---- */

/* Whether a matrix b [R, C] (leading axes of 1) is the last two axes of activation a (not an image):
 * each pixel p of a reads row p mod R. */
static bool bcast_rows(const int64_t *da, int ra, const int64_t *db, int rb)
{
    if (rb < 2 || ra < rb || ra == 4 || db[rb - 2] == 1 || db[rb - 1] != da[ra - 1] || db[rb - 2] != da[ra - 2])
        return false;
    for (int i = 0; i < rb - 2; i++)
        if (db[i] != 1)
            return false;
    return true;
}

/* Whether tensor b broadcasts against activation a as one value, or one value per channel
 * (per_tile), or per channel of each row (*rows > 0, bcast_rows); false when it does not. */
static bool bcast_of(const lt *L, int aid, int bid, bool *per_tile, uint32_t *rows)
{
    int ra, rb;
    const int64_t *da = lt_dims(L, aid, &ra), *db = lt_dims(L, bid, &rb);
    int64_t ne = ts_graph_tensor_elems(ts_graph_get_tensor(L->g, bid));
    *per_tile = false;
    *rows = 0;
    if (ne == 1)
        return true;
    if (rb > ra)
        return false;
    if (bcast_rows(da, ra, db, rb)) {
        *rows = (uint32_t)db[rb - 2];
        *per_tile = true;
        return true;
    }
    int cax = ra == 4 ? 1 : ra - 1; /* the channel axis of a */
    for (int i = 0; i < rb; i++) {
        int ax = ra - rb + i;
        if (db[i] != 1 && (ax != cax || db[i] != da[ax]))
            return false;
    }
    *per_tile = true;
    return true;
}

static bool is_act(const lt *L, int id)
{
    ts_tensor_kind k = ts_graph_get_tensor(L->g, id)->kind;
    return k == TS_TENSOR_ACTIVATION || k == TS_TENSOR_INPUT;
}

/* Add, Sub, Mul, Div of an activation and a constant (either side), or Sub, Mul of two
 * activations of one shape; *ai the activation read first. false: a form it does not take. */
static bool plan_binary(const lt *L, const ts_graph_node *nd, ew_plan *p, int *ai)
{
    int x = nd->in[0], y = nd->in[1];
    bool ax = is_act(L, x), ay = is_act(L, y), pt;
    uint32_t rows;
    *ai = 0;
    if (ax && ay) {
        if (nd->op != TS_OP_SUB && nd->op != TS_OP_MUL)
            return false;
        p->nin = 2;
        if (nd->op == TS_OP_SUB)
            step(p, LT_SUB, 0, 1);
        else
            step(p, LT_MUL, step(p, LT_MUL, 0, 1), k_scalar(p, 1.0 / EW_Q));
        return true;
    }
    if (!ax && !ay)
        return false;
    int a = ax ? x : y, c = ax ? y : x;
    *ai = ax ? 0 : 1;
    if (!bcast_of(L, a, c, &pt, &rows))
        return false;
    const ts_graph_tensor *ct = ts_graph_get_tensor(L->g, c);
    double v = pt ? 0.0 : ts_fill_value_f32(ct, c, 0);
    switch (nd->op) {
    case TS_OP_ADD:
    case TS_OP_SUB: {
        int k = pt ? k_tensor(p, c, CM_Q, rows, 0) : k_scalar(p, v * EW_Q);
        step(p, nd->op == TS_OP_ADD ? LT_ADD : LT_SUB, ax || nd->op == TS_OP_ADD ? 0 : k,
             ax || nd->op == TS_OP_ADD ? k : 0);
        return true;
    }
    case TS_OP_MUL:
        step(p, LT_MUL, 0, pt ? k_tensor(p, c, CM_ONE, rows, 0) : k_scalar(p, v));
        return true;
    case TS_OP_DIV:
        if (!ax || (!pt && v == 0.0))
            return false; /* a constant divided by an activation: no reciprocal of an int8 */
        step(p, LT_MUL, 0, pt ? k_tensor(p, c, CM_INV, rows, 0) : k_scalar(p, 1.0 / v));
        return true;
    default: return false;
    }
}

/* The plan of node nd; *ai the input read first (the activation of a constant form). */
static ts_status plan_of(lt *L, const ts_graph_node *nd, ew_plan *p, int *ai)
{
    memset(p, 0, sizeof *p);
    p->nin = 1;
    *ai = 0;
    double lo, hi;
    switch (nd->op) {
    case TS_OP_CLIP:
        lo = nd->attrs.min * EW_Q;
        hi = nd->attrs.max * EW_Q;
        plan_clip(p, lo < -128.0 ? -128.0 : rint(lo), hi > 127.0 ? 127.0 : rint(hi));
        return TS_OK;
    case TS_OP_SIGMOID: plan_sigmoid(p); return TS_OK;
    case TS_OP_TANH: plan_tanh(p); return TS_OK;
    case TS_OP_GELU: plan_gelu(p); return TS_OK;
    default:
        if (lt_is_hardswish(nd)) {
            plan_hardswish(p);
            return TS_OK;
        }
        if (nd->nin == 2 && plan_binary(L, nd, p, ai))
            return TS_OK;
        return ts_lower_fail(L->err, nd, "the TSP lowering takes an activation with a constant (one value, one per "
                                         "channel or a matrix over its last two axes), or Sub and Mul of two "
                                         "activations of one shape");
    }
}

/* ---- constants ---- */

/* Every constant of the plan as f32 vectors in every east slice: 4 byte planes per vector, one
 * vector (a scalar), one per channel tile, or one per row and channel tile (row r's tile t is
 * vector r T + t); *words[k] its first word. */
/* The key of a tensor constant in L->ewc (its id, mode, rows, int8, tiles); false for a scalar. */
static bool ewc_key(const ew_plan *p, int k, uint32_t T, uint32_t key[5])
{
    const ew_const *c = &p->c[k];
    if (c->id == -1)
        return false;
    float f = (float)c->v;
    uint32_t fb;
    memcpy(&fb, &f, 4);
    uint32_t v[5] = {(uint32_t)c->id, c->mask ? fb : (uint32_t)c->mode, c->mask ? c->mask : c->rows, p->i8, T};
    memcpy(key, v, sizeof v);
    return true;
}

/* Constant k's word when a node before laid out the same (L->ewc), else UINT32_MAX. */
static uint32_t ewc_find(const lt *L, const ew_plan *p, int k, uint32_t T)
{
    uint32_t key[5];
    for (uint32_t i = 0; ewc_key(p, k, T, key) && i < L->newc; i++)
        if (!memcmp(L->ewc[i], key, sizeof key))
            return L->ewc[i][5];
    return UINT32_MAX;
}

static ts_status place_consts(lt *L, const ts_graph_node *nd, const ew_plan *p, uint32_t T, uint32_t *word)
{
    uint32_t n = 0, wpv = p->i8 ? 1 : 4; /* words per vector */
    uint32_t known[EW_MAX_CONSTS];
    for (int k = 0; k < p->nc; k++) {
        known[k] = ewc_find(L, p, k, T);
        word[k] = n;
        if (known[k] == UINT32_MAX)
            n += wpv * (p->c[k].per_tile ? T * (p->c[k].rows ? p->c[k].rows : 1) : 1);
    }
    for (int k = 0; k < p->nc; k++)
        if (known[k] != UINT32_MAX)
            word[k] = known[k];
    if (!n)
        return TS_OK;
    uint32_t base;
    ts_status rc = lt_const_region(L, n, "the constants", nd, &base);
    image im;
    if (rc != TS_OK || (rc = lt_img_init(L, &im, L->nE, base, n)) != TS_OK)
        return rc;
    for (int k = 0; k < p->nc; k++) {
        const ew_const *c = &p->c[k];
        const ts_graph_tensor *ct = c->id >= 0 ? ts_graph_get_tensor(L->g, c->id) : NULL;
        if (known[k] != UINT32_MAX)
            continue;
        uint32_t nv = c->per_tile ? T * (c->rows ? c->rows : 1) : 1;
        for (uint32_t i = 0; i < nv * L->VL; i++) {
            double v = c->v;
            if (ct) {
                /* element: channel i of a per-channel constant, channel (i / VL mod T) VL + lane of row
                 * i / (T VL) of a per-row one */
                uint64_t ne = (uint64_t)ts_graph_tensor_elems(ct), cols = ne, el = i;
                if (c->rows) {
                    cols = ne / c->rows;
                    uint64_t ch = (uint64_t)(i / L->VL % T) * L->VL + i % L->VL;
                    el = ch < cols ? (uint64_t)(i / (T * L->VL)) * cols + ch : ne;
                }
                v = el < ne ? ts_fill_value_f32(ct, c->id, el) : 0.0;
                v = c->mode == CM_Q ? v * EW_Q : c->mode == CM_INV ? (v != 0.0 ? 1.0 / v : 0.0) : v;
            }
            if (c->mask && i % L->VL / c->mask != i / L->VL % c->az)
                v = 0.0;
            float f = (float)v;
            uint32_t b;
            memcpy(&b, &f, 4);
            if (p->i8)
                b = (uint32_t)(int32_t)v & 0xff;
            uint32_t w = word[k] + wpv * (c->per_tile ? i / L->VL : 0);
            for (uint32_t e = 0; e < L->nE; e++)
                for (uint32_t by = 0; by < wpv; by++)
                    im.s[e][(size_t)(w + by) * L->VL + i % L->VL] = (uint8_t)(b >> (8 * by));
        }
        word[k] += base;
        uint32_t key[5];
        if (ewc_key(p, k, T, key) && L->newc < LT_EWC_MAX) {
            memcpy(L->ewc[L->newc], key, sizeof key);
            L->ewc[L->newc++][5] = word[k];
        }
    }
    return lt_const_flush(L, &im);
}

/* HardSwish, named by the graph (TS_OP_HARDSWISH where the IR has it; by name, so this file builds
 * with either IR). */
bool lt_is_hardswish(const ts_graph_node *nd)
{
    return !strcmp(ts_graph_op_name(nd->op), "HardSwish");
}

/* ---- the schedule ---- */

typedef struct ew_arg {
    const ew_plan *p;
    uint32_t last_use[2 + EW_MAX_STEPS]; /* per value: cycle of its last read, from the group's start */
    const uint32_t *cword;
    tens *in[2], *y;
    uint64_t v;
    uint32_t t0;  /* ... and tile t0 + (s, h / az) where Q's Slice computes nothing (lt_head_base) */
    uint32_t az;  /* > 0: output vector (s, h) reads input vector (s, h / az) (a head of Q a vector, lt_k_view) */
    uint32_t tile;
    uint32_t pix; /* the output vector's pixel (a per-row constant's row is pix mod rows) */
    /* LEAN (lower_tsp.c) and an f32 chain: the constants the same for every vector stay in latches
     * (sched.c, lt_kept_in) instead of being read from the east MEM for each vector; every vector's
     * chain then carries the operator's one tag (ktag), the kept latches' */
    bool keep;
    uint32_t ktag, kt;  /* kt: the tiles of the output (a per-tile constant keeps a latch per tile) */
    lt_kept *kept;      /* [EW_MAX_CONSTS][kt] */
} ew_arg;

/* The kept latch of constant k for the vector being placed (a per-row constant's holds the row of
 * the vectors placed last: sched_ew places a row's vectors one after another). */
static lt_kept *kept_of(const ew_arg *e, int k)
{
    return &e->kept[(uint32_t)k * e->kt + (e->p->c[k].per_tile ? e->tile : 0)];
}

/* LEAN: the rows of the per-row constant an operator keeps (a causal mask [S, S] added to the scores
 * [h, S, S]: the vectors of pixels r, S + r, .. placed one after another share row r's latch, read
 * once where each vector read its 4 words); 0 where it keeps none. */
static uint32_t kept_rows(const ew_arg *e)
{
    for (int k = 0; e->keep && k < e->p->nc; k++)
        if (e->p->c[k].rows && e->y->P % e->p->c[k].rows == 0)
            return e->p->c[k].rows;
    return 0;
}

/* Operand o of a step at cycle t: a value, or a constant read to arrive then. */
static bool operand(lt *L, const ew_arg *e, int o, uint64_t t, uint32_t tag, val *vals, val *out)
{
    if (o >= 0) {
        *out = vals[o];
        return true;
    }
    const ew_const *c = &e->p->c[-1 - o];
    uint32_t vec = c->per_tile ? e->tile + (c->rows ? e->pix % c->rows * e->y->T : 0) : 0; /* place_consts */
    uint32_t kt;
    if (!e->p->i8 && e->keep && (!c->rows || kept_rows(e)) &&
        lt_kept_in(L, kept_of(e, -1 - o), e->cword[-1 - o] + 4 * vec, L->tg->reg.f32, t, tag, out, &kt))
        return kt == tag; /* the latch was loaded with the operator's tag */
    if (!e->p->i8)
        return lt_scale_in(L, e->cword[-1 - o] + 4 * vec, t, tag, out);
    uint32_t pv = L->tg->pos_vxm; /* one byte plane on one stream */
    int s;
    if (!lt_take_group(L, P_E2V_W, 1, t, pv, &s) ||
        !lt_rd_any(L, 1, e->cword[-1 - o] + vec, t, pv, WEST, s, tag))
        return false;
    *out = (val){.alu = -1, .dir = WEST, .s = s, .t = t};
    return true;
}

/* The input vector that output vector v reads. */
static uint64_t in_vec(const ew_arg *e, uint64_t v, const tens *x)
{
    return e->az ? v / e->y->T * x->T + e->t0 + v % e->y->T / e->az : v;
}

/* The inputs read to arrive at A and converted to f32 into vals[0..nin). */
static bool inputs(lt *L, const ew_arg *e, uint64_t A, uint32_t tag, val *vals)
{
    const ts_tsp_regs *R = &L->tg->reg;
    uint32_t mem, word, m0 = 0;
    val raw[2];
    for (int i = 0; i < e->p->nin; i++) {
        uint64_t iv = in_vec(e, e->v, e->in[i]);
        lt_slot(L, e->in[i], iv, &mem, &word);
        if (i == 0 ? !lt_vin_w(L, mem, word, A, tag, e->in[i]->ready[iv], &raw[i])
                   : !lt_vin_w2(L, mem, word, A, tag, e->in[i]->ready[iv], &raw[0], m0, &raw[i]))
            return false;
        m0 = mem;
    }
    for (int i = 0; i < e->p->nin; i++) {
        if (e->p->i8) {
            vals[i] = raw[i];
            continue;
        }
        if (!lt_vop(L, LT_CVT, R->f32, R->i8, A, &raw[i], NULL, -1, 0, tag, &vals[i], NULL) ||
            !lt_hold(L, &vals[i], A + e->last_use[i]))
            return false;
    }
    return true;
}

/* A VXM op's latency (as lt_vop). */
static uint32_t op_lat(const lt *L, uint16_t op)
{
    const ts_tsp_dfunc *f = &L->tg->d_func;
    return op == LT_MUL ? f->mul : op == LT_RELU ? f->relu : op == LT_TANH ? f->exp : f->add;
}

/* The cycle (from the group's start) at which every value is last read: the chain's timing is
 * fixed, so a value is held in its latch from the start through its last read, and the ALUs
 * chosen after it see the latch taken. */
static void plan_times(const lt *L, const ew_plan *p, uint32_t *last_use)
{
    uint32_t tv[2 + EW_MAX_STEPS];
    for (int i = 0; i < p->nin; i++)
        tv[i] = last_use[i] = p->i8 ? 0 : L->tg->d_func.cvt;
    for (int i = 0; i < p->nst; i++) {
        const ew_step *s = &p->st[i];
        uint32_t t = 0;
        if (s->a >= 0 && tv[s->a] > t)
            t = tv[s->a];
        if (s->b >= 0 && tv[s->b] > t)
            t = tv[s->b];
        if (s->a >= 0 && t > last_use[s->a])
            last_use[s->a] = t;
        if (s->b >= 0 && t > last_use[s->b])
            last_use[s->b] = t;
        tv[p->nin + i] = last_use[p->nin + i] = t + op_lat(L, s->op);
    }
}

static bool try_ew_at(lt *L, const ew_arg *e, uint64_t A, uint64_t *w)
{
    const ew_plan *p = e->p;
    const ts_tsp_regs *R = &L->tg->reg;
    uint32_t tag = e->keep ? e->ktag : L->tag % 65535 + 1;
    val vals[2 + EW_MAX_STEPS], a, b, o;
    int so = -1;
    if (!inputs(L, e, A, tag, vals))
        return false;
    int last = p->nin - 1;
    for (int i = 0; i < p->nst; i++) {
        const ew_step *s = &p->st[i];
        uint64_t t = 0;
        if (s->a >= 0 && vals[s->a].t > t)
            t = vals[s->a].t;
        if (s->b >= 0 && vals[s->b].t > t)
            t = vals[s->b].t;
        if (!operand(L, e, s->a, t, tag, vals, &a) || (s->b != NONE && !operand(L, e, s->b, t, tag, vals, &b)))
            return false;
        last = p->nin + i;
        val *pb = s->b == NONE ? NULL : s->b == s->a ? &a : &b; /* x times x: one latch, held once */
        bool out8 = p->i8 && i + 1 == p->nst; /* an int8 chain's last step goes to the stream itself */
        uint16_t op = !p->i8 ? s->op : s->op == LT_SUB ? LT_SUBS : s->op == LT_ADD ? LT_ADDS : s->op;
        if (!lt_vop(L, op, p->i8 ? R->i8 : R->f32, 0, t, &a, pb, out8 ? P_FROMV_W : -1, 1, tag, &vals[last],
                    out8 ? &so : NULL) ||
            !lt_hold(L, &vals[last], A + e->last_use[last]))
            return false;
        /* a latch operand's hold is the value's own */
        if (s->a >= 0)
            vals[s->a] = a;
        if (s->b >= 0 && s->b != s->a)
            vals[s->b] = b;
    }
    if (p->i8)
        o = vals[last];
    else if (!lt_vop(L, LT_CVT, R->i8, R->f32, vals[last].t, &vals[last], NULL, P_FROMV_W, 1, tag, &o, &so))
        return false;
    uint32_t om, ow;
    lt_slot(L, e->y, e->v, &om, &ow);
    if (!lt_wr(L, om, ow, o.t, L->tg->pos_vxm, WEST, so, tag, e->y->avail, w))
        return false;
    if (!e->keep)
        L->tag = tag;
    return true;
}

/* try_ew_at, whose failed try leaves the kept latches as they were (lt_search undoes their cycles). */
static bool try_ew(lt *L, const void *arg, uint64_t A, uint64_t *w)
{
    const ew_arg *e = arg;
    lt_kept was[EW_MAX_CONSTS];
    for (int k = 0; e->keep && k < e->p->nc; k++)
        was[k] = *kept_of(e, k);
    if (try_ew_at(L, e, A, w))
        return true;
    for (int k = 0; e->keep && k < e->p->nc; k++)
        *kept_of(e, k) = was[k];
    return false;
}

/* The k-th vector placed: in order, or with a kept per-row constant (kept_rows) row by row, the
 * heads' vectors of a row together; the kept latches of a row that is done are freed. */
static uint64_t placed_vec(lt *L, ew_arg *e, uint64_t k, uint32_t rows)
{
    tens *y = e->y;
    if (!rows)
        return k;
    uint64_t H = y->P / rows, r = k / ((uint64_t)H * y->T), h = k / y->T % H, v = (h * rows + r) * y->T + k % y->T;
    for (int c = 0; k % ((uint64_t)H * y->T) == 0 && c < e->p->nc; c++)
        if (e->p->c[c].rows)
            for (uint32_t t = 0; t < e->kt; t++)
                lt_kept_end(L, &e->kept[(uint32_t)c * e->kt + t]);
    return v;
}

static ts_status sched_ew(lt *L, const ts_graph_node *nd, ew_arg *e, ts_lower_tsp_layer *ly)
{
    tens *y = e->y;
    uint64_t n = (uint64_t)y->P * y->T, prev = 0;
    uint32_t rows = kept_rows(e);
    for (uint64_t k = 0; k < n; k++) {
        uint64_t v = placed_vec(L, e, k, rows);
        e->v = v;
        e->tile = (uint32_t)(v % y->T);
        e->pix = (uint32_t)(v / y->T);
        uint64_t A = 0, w;
        for (int i = 0; i < e->p->nin; i++) {
            uint32_t mem, word;
            uint64_t iv = in_vec(e, v, e->in[i]);
            lt_slot(L, e->in[i], iv, &mem, &word);
            uint64_t lb = e->in[i]->ready[iv] + L->tg->d_func.read + (L->tg->pos_vxm - lt_mem_pos(L, mem));
            if (lb > A)
                A = lb;
        }
        if (prev > A) /* searched from the cycle the group before took (as lt.mono) */
            A = prev;
        ts_status rc = lt_search(L, try_ew, e, NULL, &A, &w, nd, false);
        if (rc != TS_OK)
            return rc;
        prev = A;
        y->ready[v] = w + L->tg->d_func.write + 1;
        for (int i = 0; i < e->p->nin; i++)
            if (L->rdmax > e->in[i]->last_read)
                e->in[i]->last_read = L->rdmax;
        lt_span(ly, A, w);
        ly->passes++;
    }
    return TS_OK;
}

/* An elementwise operator of ewise.c: its plan, its constants, its output placed, the schedule. */
ts_status lt_lower_ewise(lt *L, const ts_graph_node *nd, ts_lower_tsp_layer *ly)
{
    ew_plan p;
    int ai;
    ts_status rc = plan_of(L, nd, &p, &ai);
    if (rc != TS_OK)
        return rc;
    ew_arg e = {.p = &p};
    /* Q / 8 between a head split and Q Kᵀ (lt_q_scale): computed on the split's input, every element
     * scaled alike, the output in that input's layout for the product to read */
    size_t nc;
    const int *c = ts_graph_consumers(L->g, nd->out[0], &nc);
    const ts_graph_node *mm = nc == 1 ? ts_graph_get_node(L->g, c[0]) : NULL;
    int src = mm && p.nin == 1 && lt_q_scale(L->g, mm) == nd ? lt_q_split(L->g, mm)->in[0] : -1;
    uint32_t c0 = 0;
    if (src >= 0 && lt_k_view(L->g, mm)) /* Q's Slice computes nothing: its input is read */
        src = lt_head_base(L, src, &c0);
    for (int i = 0; i < p.nin; i++) {
        e.in[i] = &L->t[src >= 0 ? src : nd->in[i == 0 ? ai : 1]];
        if (!e.in[i]->placed)
            return ts_lower_fail(L->err, nd, "an input is not an int8 activation the lowering placed");
    }
    if (p.nin == 2 && (e.in[0]->P != e.in[1]->P || e.in[0]->C != e.in[1]->C))
        return ts_lower_fail(L->err, nd, "the TSP lowering takes two activations of one shape (no broadcast)");
    uint32_t C = e.in[0]->C, T = e.in[0]->T;
    if (src >= 0 && lt_k_view(L->g, mm)) { /* a head a vector, masked: Q Kᵀ reads K's split's input */
        int qr;
        const int64_t *qd = lt_dims(L, mm->in[0], &qr);
        if (qr != 3 || p.nst != 1 || p.st[0].op != LT_MUL || p.nc != 1 || p.c[0].per_tile || qd[2] <= 0 ||
            L->VL % (uint32_t)qd[2] || (uint64_t)qd[0] * (uint64_t)qd[2] + c0 > e.in[0]->C)
            return ts_lower_fail(L->err, nd, "the TSP lowering takes Q / 8 of heads dividing 320 lanes");
        e.az = L->VL / (uint32_t)qd[2];
        e.t0 = c0 / L->VL;
        p.c[0] = (ew_const){.per_tile = true, .v = p.c[0].v, .id = -2, .mask = (uint32_t)qd[2], .az = e.az};
        T = (uint32_t)qd[0];
        C = T * L->VL;
    }
    uint32_t cword[EW_MAX_CONSTS];
    if ((rc = place_consts(L, nd, &p, T, cword)) != TS_OK)
        return rc;
    e.cword = cword;
    e.keep = L->lean && !p.i8;
    e.kt = T;
    if (e.keep && !(e.kept = ts_calloc((size_t)EW_MAX_CONSTS * e.kt, sizeof *e.kept)))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    if (e.keep)
        e.ktag = lt_new_tag(L);
    plan_times(L, &p, e.last_use);
    int out = nd->out[0];
    if ((rc = lt_place(L, out, e.in[0]->P, C, nd, false, lt_bank_pref(L, e.in[0]))) != TS_OK) {
        ts_free(e.kept);
        return rc;
    }
    e.y = &L->t[out];
    e.y->nonneg = p.nonneg;
    rc = sched_ew(L, nd, &e, ly);
    for (size_t i = 0; e.keep && i < (size_t)EW_MAX_CONSTS * e.kt; i++)
        lt_kept_end(L, &e.kept[i]);
    ts_free(e.kept);
    if (rc != TS_OK)
        return rc;
    for (int i = 0; i < p.nin; i++)
        if (i == 0 || nd->in[1] != nd->in[0])
            lt_release(L, src >= 0 ? src : nd->in[i == 0 ? ai : 1]);
    return TS_OK;
}
