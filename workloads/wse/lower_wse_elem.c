/* workloads/wse/lower_wse_elem.c — elementwise operators: Clip (ReLU6, fused into the matrix
 * product or join before it when it can be), Sigmoid, Tanh, HardSwish and Gelu (erf form), each
 * a PE of its own that receives, computes and sends one element at a time with scalar binary32
 * ops (the ISA has no vector compare, exp or divide).
 *
 *   clip      two sign tests of x - lo and hi - x (blt on the bits);
 *   sigmoid   e = exp(-|x|) (the softmax's exp, docs/lowering-wse.md), s = 1 / (1 + e) (its
 *             Newton reciprocal), x >= 0 ? s : e s;
 *   tanh      e = exp(-2|x|), t = (1 - e) / (1 + e), the sign of x;
 *   hardswish x clip(x + 3, 0, 6) / 6;
 *   gelu      x (1 + erf(x / sqrt 2)) / 2, erf by Abramowitz and Stegun 7.1.26 (|error| <= 1.5e-7):
 *             erf z = 1 - t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) exp(-z^2), t = 1 / (1 + p z), z >= 0;
 *   gelu tanh x (1 + tanh u) / 2 = x sigmoid(2 u), u = sqrt(2 / pi) (x + 0.044715 x^3) (GPT-2's form);
 *   swiglu    SiLU(a) b = a sigmoid(a) b of a pair (a, b) of the stream (eop Mul: Llama's gate, the
 *             stage after one product of the gate's and the up projection's weights, their columns
 *             interleaved, so each pair comes out side by side): two values in, one out.
 */
#include <string.h>

#include "core/alloc.h"
#include "workloads/wse/lower_wse_int.h"

bool ts_lww_is_hardswish(int op) { return !strcmp(ts_graph_op_name((ts_graph_op)op), "HardSwish"); }

/* r1 := clamp(r1, r_lo, r_hi) (uses r2). */
static void clamp_reg(lw_gen *G, int rlo, int rhi)
{
    ts_lww_op(G, WSE_OP_FSUB, 3, 2, 1, rlo);
    ts_lww_op(G, WSE_OP_BLT, 3, 2, 15, ts_lww_pc(G) + 2);
    ts_lww_op(G, WSE_OP_BR, 1, ts_lww_pc(G) + 2);
    ts_lww_op(G, WSE_OP_MOV, 2, 1, rlo);
    ts_lww_op(G, WSE_OP_FSUB, 3, 2, rhi, 1);
    ts_lww_op(G, WSE_OP_BLT, 3, 2, 15, ts_lww_pc(G) + 2);
    ts_lww_op(G, WSE_OP_BR, 1, ts_lww_pc(G) + 2);
    ts_lww_op(G, WSE_OP_MOV, 2, 1, rhi);
}

void ts_lww_clip_mem(lw_gen *G, int addr, int64_t n, float lo, float hi)
{
    ts_lww_op(G, WSE_OP_FLI, 2, 8, ts_lww_bits(lo));
    ts_lww_op(G, WSE_OP_FLI, 2, 9, ts_lww_bits(hi));
    ts_lww_op(G, WSE_OP_LI, 2, 6, addr);
    int l = ts_lww_loop_head(G, 7, n);
    ts_lww_op(G, WSE_OP_LD, 3, 1, 6, 0);
    clamp_reg(G, 8, 9);
    ts_lww_op(G, WSE_OP_ST, 3, 1, 6, 0);
    ts_lww_op(G, WSE_OP_ADDI, 3, 6, 6, 4);
    ts_lww_loop_end(G, 7, l);
}

/* r2 := -|r6| */
static void neg_abs(lw_gen *G)
{
    ts_lww_op(G, WSE_OP_MOV, 2, 2, 6);
    ts_lww_op(G, WSE_OP_BLT, 3, 6, 15, ts_lww_pc(G) + 2);
    ts_lww_op(G, WSE_OP_FSUB, 3, 2, 15, 6);
}

/* r3 := exp(r2) for r2 <= 0 (r1 := 0 as the exp's subtrahend). */
static void exp_r2(lw_gen *G)
{
    ts_lww_op(G, WSE_OP_LI, 2, 1, 0);
    ts_lww_exp(G);
}

/* Per element in r6, the result in r1. */
static void sigmoid(lw_gen *G)
{
    neg_abs(G);
    exp_r2(G);
    ts_lww_op(G, WSE_OP_FLI, 2, 5, ts_lww_bits(1.0f));
    ts_lww_op(G, WSE_OP_FADD, 3, 8, 3, 5);
    ts_lww_recip(G);
    ts_lww_op(G, WSE_OP_BLT, 3, 6, 15, ts_lww_pc(G) + 2); /* x < 0: e / (1 + e) */
    ts_lww_op(G, WSE_OP_BR, 1, ts_lww_pc(G) + 2);
    ts_lww_op(G, WSE_OP_FMUL, 3, 1, 1, 3);
}

static void tanh_(lw_gen *G)
{
    neg_abs(G);
    ts_lww_op(G, WSE_OP_FADD, 3, 2, 2, 2);
    exp_r2(G);
    ts_lww_op(G, WSE_OP_FLI, 2, 5, ts_lww_bits(1.0f));
    ts_lww_op(G, WSE_OP_FADD, 3, 8, 3, 5);
    ts_lww_op(G, WSE_OP_FSUB, 3, 7, 5, 3); /* 1 - e */
    ts_lww_recip(G);
    ts_lww_op(G, WSE_OP_FMUL, 3, 1, 1, 7);
    ts_lww_op(G, WSE_OP_BLT, 3, 6, 15, ts_lww_pc(G) + 2);
    ts_lww_op(G, WSE_OP_BR, 1, ts_lww_pc(G) + 2);
    ts_lww_op(G, WSE_OP_FSUB, 3, 1, 15, 1);
}

static void hardswish(lw_gen *G)
{
    ts_lww_op(G, WSE_OP_FLI, 2, 5, ts_lww_bits(3.0f));
    ts_lww_op(G, WSE_OP_FADD, 3, 1, 6, 5);
    ts_lww_op(G, WSE_OP_FLI, 2, 8, ts_lww_bits(6.0f));
    clamp_reg(G, 15, 8);
    ts_lww_op(G, WSE_OP_FMUL, 3, 1, 1, 6);
    ts_lww_op(G, WSE_OP_FLI, 2, 5, ts_lww_bits((float)(1.0 / 6.0)));
    ts_lww_op(G, WSE_OP_FMUL, 3, 1, 1, 5);
}

static void gelu(lw_gen *G)
{
    static const double a[5] = {0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429};
    neg_abs(G); /* r2 = -|x| */
    ts_lww_op(G, WSE_OP_FLI, 2, 5, ts_lww_bits((float)0.70710678118654752));
    ts_lww_op(G, WSE_OP_FMUL, 3, 2, 2, 5); /* r2 = -z, z = |x| / sqrt 2 */
    ts_lww_op(G, WSE_OP_FSUB, 3, 7, 15, 2); /* r7 = z */
    ts_lww_op(G, WSE_OP_FLI, 2, 5, ts_lww_bits(0.3275911f));
    ts_lww_op(G, WSE_OP_FMUL, 3, 8, 7, 5);
    ts_lww_op(G, WSE_OP_FLI, 2, 5, ts_lww_bits(1.0f));
    ts_lww_op(G, WSE_OP_FADD, 3, 8, 8, 5);  /* r8 = 1 + p z */
    ts_lww_op(G, WSE_OP_FMUL, 3, 0, 2, 7);  /* r0 = -z^2 */
    ts_lww_recip(G);                        /* r1 = t */
    ts_lww_op(G, WSE_OP_MOV, 2, 7, 1);
    ts_lww_op(G, WSE_OP_FLI, 2, 8, ts_lww_bits((float)a[4]));
    for (int k = 3; k >= 0; k--) {
        ts_lww_op(G, WSE_OP_FMUL, 3, 8, 8, 7);
        ts_lww_op(G, WSE_OP_FLI, 2, 5, ts_lww_bits((float)a[k]));
        ts_lww_op(G, WSE_OP_FADD, 3, 8, 8, 5);
    }
    ts_lww_op(G, WSE_OP_FMUL, 3, 8, 8, 7);  /* r8 = t (a1 + t (...)) */
    ts_lww_op(G, WSE_OP_MOV, 2, 2, 0);
    exp_r2(G);                              /* r3 = exp(-z^2) */
    ts_lww_op(G, WSE_OP_FMUL, 3, 3, 3, 8);
    ts_lww_op(G, WSE_OP_FLI, 2, 5, ts_lww_bits(1.0f));
    ts_lww_op(G, WSE_OP_FSUB, 3, 1, 5, 3);  /* r1 = erf(z) */
    ts_lww_op(G, WSE_OP_BLT, 3, 6, 15, ts_lww_pc(G) + 2);
    ts_lww_op(G, WSE_OP_BR, 1, ts_lww_pc(G) + 2);
    ts_lww_op(G, WSE_OP_FSUB, 3, 1, 15, 1); /* erf(x / sqrt 2) for x < 0 */
    ts_lww_op(G, WSE_OP_FADD, 3, 1, 1, 5);
    ts_lww_op(G, WSE_OP_FMUL, 3, 1, 1, 6);
    ts_lww_op(G, WSE_OP_FLI, 2, 5, ts_lww_bits(0.5f));
    ts_lww_op(G, WSE_OP_FMUL, 3, 1, 1, 5);
}

/* Gelu's tanh form: x sigmoid(2 u) (x kept in r0). */
static void gelu_tanh(lw_gen *G)
{
    ts_lww_op(G, WSE_OP_MOV, 2, 0, 6);
    ts_lww_op(G, WSE_OP_FMUL, 3, 5, 6, 6);
    ts_lww_op(G, WSE_OP_FMUL, 3, 5, 5, 6);
    ts_lww_op(G, WSE_OP_FLI, 2, 7, ts_lww_bits(0.044715f));
    ts_lww_op(G, WSE_OP_FMUL, 3, 5, 5, 7);
    ts_lww_op(G, WSE_OP_FADD, 3, 5, 5, 6);
    ts_lww_op(G, WSE_OP_FLI, 2, 7, ts_lww_bits((float)1.5957691216057308)); /* 2 sqrt(2 / pi) */
    ts_lww_op(G, WSE_OP_FMUL, 3, 6, 5, 7);
    sigmoid(G);
    ts_lww_op(G, WSE_OP_FMUL, 3, 1, 1, 0);
}

/* The part of an elementwise stage's row of L values that PE g of G computes: [a, b), part
 * G - 1 - g. Each PE passes the raw parts before its own on at once, takes its own into memory,
 * computes it there and sends it, then passes on the computed parts after it: the first PE takes
 * the last part, and all compute side by side (a PE that computed as it received would hold the
 * PEs before it to its pace, and the parts of a row would be computed one after the other). */
static void elem_part(const lw_stage *s, int64_t L, uint32_t g, int64_t *a, int64_t *b)
{
    const uint32_t p = s->G - 1 - g;
    *a = p * L / s->G;
    *b = (p + 1) * L / s->G;
}

/* The function of r6 into r1 (every register but r10 and r15). */
static void elem_fn(lw_gen *G, const lw_stage *s);

/* Values of the stream in per value out: 2 for SwiGLU's pairs, else 1. */
static int64_t elem_in_per_out(const lw_stage *s) { return s->eop == TS_OP_MUL ? 2 : 1; }

/* The function on n elements from ci to co (r10 the count; the function's registers). */
static void elem_loop(lw_gen *G, const lw_stage *s, uint32_t ci, uint32_t co, int64_t n)
{
    int l = ts_lww_loop_head(G, 10, n);
    ts_lww_op(G, WSE_OP_RECV, 2, 6, (int)ci);
    elem_fn(G, s);
    if (s->eop == TS_OP_MUL) { /* SwiGLU: times the pair's second value */
        ts_lww_op(G, WSE_OP_RECV, 2, 6, (int)ci);
        ts_lww_op(G, WSE_OP_FMUL, 3, 1, 1, 6);
    }
    ts_lww_op(G, WSE_OP_SEND, 2, (int)co, 1);
    ts_lww_loop_end(G, 10, l);
}

/* SwiGLU's SiLU: r1 := r6 sigmoid(r6) (r0, r6, r7, r10 and r15 kept). */
static void silu(lw_gen *G)
{
    sigmoid(G);
    ts_lww_op(G, WSE_OP_FMUL, 3, 1, 1, 6);
}

static void elem_fn(lw_gen *G, const lw_stage *s)
{
    switch (s->eop) {
    case TS_OP_CLIP:
        ts_lww_op(G, WSE_OP_MOV, 2, 1, 6);
        ts_lww_op(G, WSE_OP_FLI, 2, 8, ts_lww_bits(s->lo));
        ts_lww_op(G, WSE_OP_FLI, 2, 9, ts_lww_bits(s->hi));
        clamp_reg(G, 8, 9);
        break;
    case TS_OP_SIGMOID: sigmoid(G); break;
    case TS_OP_MUL: silu(G); break;
    case TS_OP_TANH: tanh_(G); break;
    case TS_OP_GELU:
        if (s->vop)
            gelu_tanh(G);
        else
            gelu(G);
        break;
    default: hardswish(G); break;
    }
}

void ts_lww_emit_elem(lw_gen *G, const lw_stage *s)
{
    if (s->eop == TS_OP_SIGMOID || s->eop == TS_OP_TANH || s->eop == TS_OP_GELU || s->eop == TS_OP_MUL)
        ts_lww_exp_consts(G);
    elem_loop(G, s, s->cin, s->cout, (int64_t)s->out_n);
}

/* SwiGLU's gate on s->ko rows (its product's column groups, lower_wse_emit_mm.c): the pairs
 * [*p0, *p1) of every row of the stream that its row q takes. */
static void glu_slice(const lw *L, const lw_stage *s, uint32_t q, int64_t *p0, int64_t *p1)
{
    uint64_t n0, n1;
    ts_lww_mm_group_out(&L->st[s->prev], q, &n0, &n1);
    *p0 = (int64_t)n0 / 2;
    *p1 = (int64_t)n1 / 2;
}

/* PE g of row q of an elementwise stage over s->G PEs in a row (SwiGLU's gate on s->ko rows: row q
 * takes its product's column group q, the pairs [p0, p1) of every row of the stream). The last
 * PE of a row of the gate passes on, after its row's outputs, those of the rows below it, which
 * come up the last column (colours R(q)): PE (G - 1, 0) sends every row's outputs east in order;
 * when the next product takes them on its rows (its kin), each row's last PE sends its row's east
 * alone, the rows s->kstep apart. */
static ts_status elem_split_pe(lw *L, ts_program *P, lw_gen *G, const lw_stage *s, uint32_t q, uint32_t g)
{
    /* the rows unrolled: the function takes every register but r10 (its count) and r15 (zero), and a
     * count kept in memory would not hold under sim.timing_only (loads read 0); SwiGLU's pairs: r10
     * reads them, r7 writes the results over them (its function keeps r7) */
    const int64_t k = elem_in_per_out(s);
    const uint32_t ci = g ? lw_gcol(s, g - 1) : s->cin;
    const size_t si = (size_t)(s - L->st);
    const bool rows = si + 1 < L->n && L->st[si + 1].kin > 1; /* each row's outputs east on its own */
    const bool up = s->ko > 1 && !rows && g + 1 == s->G; /* the last column: the rows below pass up it */
    const uint32_t co = up && q ? lw_rcol(s, q) : lw_gcol(s, g);
    int64_t a, b, p0 = 0, p1 = s->L, e0, end = s->L; /* the rows below: pairs [p1, end) */
    if (s->ko > 1) {
        glu_slice(L, s, q, &p0, &p1);
        glu_slice(L, s, s->ko - 1, &e0, &end);
    }
    const int64_t Lq = p1 - p0; /* the values of a row this row of PEs takes */
    elem_part(s, Lq, g, &a, &b);
    if (!ts_lww_pe_stream(P, L->t, s->x + g, s->y0 + q * (s->kstep ? s->kstep : 1), G))
        return TS_ENOMEM;
    ts_lww_op(G, WSE_OP_ROUTE, 3, (int)ci, P_W, P_R);
    if (up && q + 1 < s->ko)
        ts_lww_op(G, WSE_OP_ROUTE, 3, (int)lw_rcol(s, q + 1), P_S, P_R);
    ts_lww_op(G, WSE_OP_ROUTE, 3, (int)co, P_R, up && q ? P_N : lw_outp(s, g + 1 == s->G));
    ts_lww_op(G, WSE_OP_LI, 2, 15, 0);
    if (s->eop == TS_OP_SIGMOID || s->eop == TS_OP_TANH || s->eop == TS_OP_GELU || s->eop == TS_OP_MUL)
        ts_lww_exp_consts(G);
    const int BUF = 0, END = (int)(k * (b - a)) * 4;
    for (uint64_t r = 0; r < s->out_n / (uint64_t)s->L; r++) {
        ts_lww_in_to_out(G, ci, co, (uint64_t)(k * a));
        ts_lww_in_to_mem(G, ci, (uint64_t)BUF, (uint64_t)(k * (b - a)), 1);
        ts_lww_op(G, WSE_OP_LI, 2, 10, BUF); /* r10 the element; r2, r3 free after the function */
        if (k > 1)
            ts_lww_op(G, WSE_OP_LI, 2, 7, BUF);
        int l = ts_lww_pc(G);
        ts_lww_op(G, WSE_OP_LD, 3, 6, 10, 0);
        elem_fn(G, s);
        if (k > 1) {
            ts_lww_op(G, WSE_OP_LD, 3, 6, 10, 4);
            ts_lww_op(G, WSE_OP_FMUL, 3, 1, 1, 6);
            ts_lww_op(G, WSE_OP_ST, 3, 1, 7, 0);
            ts_lww_op(G, WSE_OP_ADDI, 3, 7, 7, 4);
        } else
            ts_lww_op(G, WSE_OP_ST, 3, 1, 10, 0);
        ts_lww_op(G, WSE_OP_ADDI, 3, 10, 10, (int)(4 * k));
        ts_lww_op(G, WSE_OP_LI, 2, 2, END);
        ts_lww_op(G, WSE_OP_SUB, 3, 3, 10, 2);
        ts_lww_op(G, WSE_OP_BNZ, 2, 3, l);
        ts_lww_mem_to_out(G, (uint64_t)BUF, (uint64_t)(b - a), co);
        ts_lww_in_to_out(G, ci, co, (uint64_t)(Lq - b));
        if (up)
            ts_lww_in_to_out(G, lw_rcol(s, q + 1), co, (uint64_t)(end - p1));
    }
    return TS_OK;
}

ts_status ts_lww_emit_elem_split(lw *L, ts_program *P, lw_gen *G, const lw_stage *s)
{
    ts_status rc = TS_OK;
    for (uint32_t q = 0; !rc && q < (s->ko > 1 ? s->ko : 1); q++)
        for (uint32_t g = 0; !rc && g < s->G; g++)
            rc = elem_split_pe(L, P, G, s, q, g);
    return rc;
}

/* ---- SwiGLU: a gate of two projections ---- */

/* The output of projection node p of F (ts_lww_is_proj) after its bias Add, if it is the MatMul's one
 * reader and adds a parameter of one value per output (*bias that parameter, else -1). */
static int glu_proj_out(const ts_graph *g, int p, int *bias)
{
    const ts_graph_node *n = ts_graph_get_node(g, p);
    const int64_t N = ts_graph_get_tensor(g, n->in[1])->dims[1];
    size_t nb = 0;
    const int *b = ts_graph_consumers(g, n->out[0], &nb);
    *bias = -1;
    if (nb != 1)
        return n->out[0];
    const ts_graph_node *a = ts_graph_get_node(g, b[0]);
    if (a->op != TS_OP_ADD || a->nin != 2)
        return n->out[0];
    const int q = a->in[0] == n->out[0] ? a->in[1] : a->in[0];
    const ts_graph_tensor *pt = ts_graph_get_tensor(g, q);
    if (!lw_is_param(pt) || ts_graph_tensor_elems(pt) != N || pt->dims[pt->rank - 1] != N)
        return n->out[0];
    *bias = q;
    return a->out[0];
}

/* The one reader of tensor t, or -1. */
static int glu_only_reader(const ts_graph *g, int t)
{
    size_t nc = 0;
    const int *c = ts_graph_consumers(g, t, &nc);
    return nc == 1 ? c[0] : -1;
}

/* Whether binary node n reads tensors a and b (in either order). */
static bool glu_reads(const ts_graph_node *n, int a, int b)
{
    return n->nin == 2 && ((n->in[0] == a && n->in[1] == b) || (n->in[0] == b && n->in[1] == a));
}

/* Gate a (the output of projection `gate`) and up b: a read by a Sigmoid s and by a Mul of a and
 * s (SiLU) only, s by that Mul only, the Mul's output by one Mul with b, b by it only. */
static bool glu_gate(const ts_graph *g, int a, int b, int nodes[3])
{
    size_t nc = 0;
    const int *c = ts_graph_consumers(g, a, &nc);
    if (nc != 2 || glu_only_reader(g, b) < 0)
        return false;
    for (int q = 0; q < 2; q++) {
        const ts_graph_node *sg = ts_graph_get_node(g, c[q]), *m = ts_graph_get_node(g, c[1 - q]);
        if (sg->op != TS_OP_SIGMOID || sg->in[0] != a || m->op != TS_OP_MUL || !glu_reads(m, a, sg->out[0]) ||
            glu_only_reader(g, sg->out[0]) != c[1 - q])
            continue;
        const int last = glu_only_reader(g, m->out[0]);
        if (last < 0 || last != glu_only_reader(g, b))
            return false;
        const ts_graph_node *o = ts_graph_get_node(g, last);
        if (o->op != TS_OP_MUL || !glu_reads(o, m->out[0], b))
            return false;
        nodes[0] = c[q], nodes[1] = c[1 - q], nodes[2] = last;
        return true;
    }
    return false;
}

bool ts_lww_is_glu(const ts_graph *g, int F, int nodes[8])
{
    size_t nc = 0;
    const int *c = ts_graph_consumers(g, F, &nc);
    if (nc != 2 || !ts_lww_is_proj(g, c[0], F) || !ts_lww_is_proj(g, c[1], F))
        return false;
    const ts_graph_tensor *w0 = ts_graph_get_tensor(g, ts_graph_get_node(g, c[0])->in[1]);
    const ts_graph_tensor *w1 = ts_graph_get_tensor(g, ts_graph_get_node(g, c[1])->in[1]);
    if (w0->dims[1] != w1->dims[1])
        return false;
    for (int q = 0; q < 2; q++) { /* c[q] the gate, c[1 - q] the up projection */
        int ba, bb;
        const int a = glu_proj_out(g, c[q], &ba), b = glu_proj_out(g, c[1 - q], &bb);
        int tail[3];
        if (!glu_gate(g, a, b, tail))
            continue;
        nodes[0] = c[q], nodes[1] = c[1 - q];
        nodes[2] = ba >= 0 ? ts_graph_get_tensor(g, a)->producer : -1;
        nodes[3] = bb >= 0 ? ts_graph_get_tensor(g, b)->producer : -1;
        nodes[4] = tail[0], nodes[5] = tail[1], nodes[6] = tail[2];
        nodes[7] = (ba >= 0) | (bb >= 0) << 1;
        return true;
    }
    return false;
}

ts_status ts_lww_glu_stages(lw *L, int F, const int nodes[8])
{
    const ts_graph *g = L->g;
    const ts_graph_tensor *ft = ts_graph_get_tensor(g, F);
    int64_t K;
    const int64_t M = ts_lww_rows(ft, &K);
    const ts_graph_node *pn[2] = {ts_graph_get_node(g, nodes[0]), ts_graph_get_node(g, nodes[1])};
    const int64_t N = ts_graph_get_tensor(g, pn[0]->in[1])->dims[1];
    lw_stage *s = ts_lww_add_stage(L, K_MM, nodes[0]);
    if (!s || !(s->wt = ts_malloc((size_t)(K * 2 * N) * 4)) || (nodes[7] && !(s->bias = ts_calloc((size_t)(2 * N), 4))))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (int q = 0; q < 2; q++) { /* column 2 j + q: the gate's (q 0) or the up projection's output j */
        const int wid = pn[q]->in[1];
        const ts_graph_tensor *w = ts_graph_get_tensor(g, wid);
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < N; j++)
                s->wt[k * 2 * N + 2 * j + q] = (float)ts_fill_value_f32(w, wid, (uint64_t)(k * N + j));
        if (nodes[2 + q] < 0)
            continue;
        const ts_graph_node *a = ts_graph_get_node(g, nodes[2 + q]);
        const int p = a->in[0] == pn[q]->out[0] ? a->in[1] : a->in[0];
        for (int64_t j = 0; j < N; j++)
            s->bias[2 * j + q] = (float)ts_fill_value_f32(ts_graph_get_tensor(g, p), p, (uint64_t)j);
    }
    s->M = M, s->K = K, s->N = 2 * N;
    s->in_n = (uint64_t)(M * K);
    s->out_n = (uint64_t)(M * 2 * N);
    s->macs = (uint64_t)(M * K * 2 * N);
    lw_stage *e = ts_lww_add_stage(L, K_ELEM, nodes[6]);
    if (!e)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    e->eop = TS_OP_MUL;
    e->L = N;
    e->G = 1;
    e->in_n = (uint64_t)(M * 2 * N);
    e->out_n = (uint64_t)(M * N);
    return TS_OK;
}
