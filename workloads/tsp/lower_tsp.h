/* workloads/tsp/lower_tsp.h — the TSP lowering: a finalized graph to one static, hazard-free schedule.
 *
 * Every instruction is placed on an exact cycle of its queue (docs/lowering-tsp.md). The
 * scheduler keeps reservation tables for the resources the TSP does not interlock: the
 * stream registers (streams are split into pools of one direction between producers and
 * consumers on either side of a point, so one bit per stream and trajectory suffices), the MEM
 * slices' read and write ports and banks, the VXM ALU latches, the MXM queues, and the in-order
 * issue rules of each queue (a MEM read and write that are adjacent in a queue issue together).
 * An instruction group is put at the first cycle at which all of its reservations are free.
 *
 * Numbers: INT8 inference. Activations and weights are int8, MXM products int32; the VXM adds the
 * bias (int32), converts to f32, multiplies by the operator's requantisation scale, converts back
 * to int8 (round to nearest even, saturating) and applies a fused Relu. MatMul, Gemm and Conv
 * are streamed matrix products on the two west MXM planes (one 320 x 320 weight block per plane;
 * a block with many vectors to stream goes on both, else the planes alternate so one installs
 * while the other streams); Conv reads its im2col vectors straight from MEM by address (one
 * kernel tap and channel tile per block, padding taps skipped), or, on a graph input with
 * C kh kw <= 320, from an im2col layout the host writes; partial sums of a multi-block product
 * go through the east MEM as int32; a Conv may have groups (zeros between them, empty blocks
 * skipped), dilations and a batch (the images one after another). Concat, Slice, Expand and a
 * Transpose keeping the channel axis are products with 0/1 blocks (exact). Relu, Add, MaxPool (of
 * a Relu's output) and GlobalAveragePool run on the VXM; Clip, Sigmoid, Tanh, HardSwish, Gelu and
 * Add/Sub/Mul/Div with constants are f32 chains on the VXM with int8 q read as q / 16; Softmax
 * (last axis, <= 320 columns, int8 read as q / 16) uses the VXM's exp and an all-ones f16 block
 * on plane W1 for the row sum, giving f16; Flatten and Reshape that keep the layout are free.
 * Other operators are refused with an error naming them. Values the graph does not carry as int8
 * (int32 for biases) are filled deterministically.
 *
 * The lowering knows only the TSP opcode table (arch/tsp/tsp_isa.def) and the machine facts of
 * arch/tsp/tsp_target.h, which come in a ts_lower_tsp_params filled from the chip config.
 */
#ifndef TS_WORKLOADS_LOWER_TSP_H
#define TS_WORKLOADS_LOWER_TSP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "arch/tsp/tsp_target.h"
#include "core/config.h"
#include "core/err.h"
#include "core/program.h"
#include "workloads/graph.h"
#include "workloads/lower/lower.h"

/* What the lowering needs to know about the chip: the TSP's machine facts (arch/tsp/tsp_target.h,
 * docs/tsp.md, configs/tsp_v1.yaml). */
typedef struct ts_lower_tsp_params {
    ts_tsp_target target;
    /* A batch whose samples no operator mixes is lowered as one sample's program run once per sample
     * even where the unrolled batch fits (false from a config: only where it does not fit; tests set
     * it to run a small batch that way on the stock chip). */
    bool one_sample;
} ts_lower_tsp_params;

/* Fill params from a chip config whose arch is "tsp" (ts_tsp_target_from_config). Refuses
 * floorplans the lowering cannot use (fewer than two west MXM planes, fewer than 16 MEM slices per
 * hemisphere, fewer than 32 streams per direction, a custom stream-register map, a nonzero d_skew)
 * with a message saying why. */
ts_status ts_lower_tsp_params_from_config(const ts_config *cfg, ts_lower_tsp_params *out, ts_err *err);

/* Where one tensor lives after the run: vector v (pixel p, channel tile c: v = p x tiles + c, a
 * tile holding `vl` channels, lane = channel mod vl) is striped over the west MEM slices: with
 * i = off + v it is in MEM slice (data-segment index) slice0 + i mod nslices, word base + i / nslices. */
typedef struct ts_lower_tsp_place {
    int tensor;
    uint32_t pixels, tiles;   /* pixels (H x W, or rows of a matrix) and channel tiles */
    uint32_t channels;
    uint32_t slice0, nslices; /* data-segment indexes slice0 .. slice0 + nslices - 1 */
    uint32_t base, off;       /* first word in every slice, and the stripe offset */
} ts_lower_tsp_place;

/* One operator as scheduled. */
typedef struct ts_lower_tsp_layer {
    int node;
    uint64_t first, last;     /* cycles of its first and last instruction */
    uint32_t blocks;          /* weight blocks installed (products) */
    uint64_t passes;          /* vectors streamed through a plane or the VXM */
    uint64_t macs;            /* useful MACs (ts_graph_node_macs) */
    float scale;              /* requantisation scale (products, GlobalAveragePool) */
    uint64_t mxm_macs;        /* MACs the planes execute (abc x dim x dim, padding included) */
    uint64_t mem_bytes;       /* MEM bytes read and written (weights, activations, partial sums) */
    uint64_t vxm_ops;         /* VXM instructions */
    uint64_t instructions;    /* instructions (without nop) */
} ts_lower_tsp_layer;

/* What the lowering did. Owned arrays; free with ts_lower_tsp_report_free. */
typedef struct ts_lower_tsp_report {
    ts_lower_tsp_place *places; size_t nplaces;
    ts_lower_tsp_layer *layers; size_t nlayers;
    uint64_t cycles;          /* last scheduled cycle + 1 (the run ends a few cycles later) */
    uint64_t instructions;    /* instructions emitted (with nop and repeat) */
    uint64_t max_queue;       /* the longest queue */
    uint64_t words_used;      /* MEM words allocated, all slices */
    /* A batch whose samples no operator mixes, lowered as one sample's program run once per sample
     * where the unrolled batch does not fit (docs/lowering-tsp.md, *Batches and groups*): runs is
     * the batch (1 otherwise), sample the graph of one sample whose tensors the places are (owned),
     * batch_axis every tensor's batch axis (owned; -1: none), host_bytes what the host writes into
     * MEM before each run after the first (inputs, and the words its schedule reads first and overwrites
     * later: text below the data, weights or constants in regions reused). */
    uint32_t runs, nmem;      /* nmem: the MEM slices (the outputs of run r are units nmem (1 + r) + slice) */
    ts_graph *sample;
    int *batch_axis;
    int64_t *batch_block;     /* owned: the samples' block on that axis (lt_batch_block) */
    uint64_t host_bytes;
} ts_lower_tsp_report;

void ts_lower_tsp_report_free(ts_lower_tsp_report *rep);

/* Lower a finalized graph. params is a const ts_lower_tsp_params *. On success *out is a new program
 * for arch "tsp" and rep (may be NULL) is filled. Unsupported operators and operators that do not fit
 * fail with an error naming the operator and by how much:
 *   "Conv 'c' needs 300 more words of int32 partial sums in every east MEM slice; 8000 of the
 *   slice's 8192 are taken". The first icu.queue_capacity entries of each queue are preloaded and
 * the rest come by ifetch from text words in MEM, scheduled with the rest (docs/lowering-tsp.md);
 * a queue that would run dry or overfill is refused, naming the queue, the cycle and the capacity
 * (capacity 0 = no limit, no ifetch). A batch refused unrolled whose samples no operator mixes is
 * lowered as the program of one sample, run once per sample (unbatch.h; rep->runs, the program's
 * symbol tsp.runs and its segments of kinds input and output, docs/tsp.md); where that fails too,
 * both messages are given. */
ts_status ts_lower_tsp(const ts_graph *g, const void *params, ts_program **out, ts_lower_tsp_report *rep,
                       ts_err *err);

/* The MEM slice (data-segment index) and byte address of element (pixel, channel) of a placed
 * tensor; -1 if the tensor is not placed. For the f16 output of Softmax, byte b of element n is
 * channel b x vl + n. */
int ts_lower_tsp_locate(const ts_lower_tsp_report *rep, int tensor, uint32_t pixel, uint32_t channel,
                        uint32_t vl, int *slice, uint64_t *addr);

/* Graph output `tensor` read back after the run through mem, as f32 (values.c; vl: bytes a vector). */
ts_status ts_lower_tsp_read_output(const ts_lower_tsp_report *rep, uint32_t vl, const ts_graph *g, int tensor,
                                   const ts_lower_mem *mem, float *dst, ts_err *err);

/* The requantisation scale of a product with reduction length k: 1 / (8 sqrt(k)) as a float. */
float ts_lower_tsp_scale(uint64_t k);

/* The Add a MatMul folds into its products as their bias (docs/lowering-tsp.md, *The biases folded*):
 * the lone reader of the output of MatMul mm (an activation, not rank 4, times a 2-D weight or
 * constant [K, N]), an Add of that output and a weight or constant of N values along the last axis
 * (its other axes 1), of the output's shape; -1 where there is none. *bias: the Add's other operand.
 * The product then starts each sum at ts_lower_tsp_bias_int of the value and writes the Add's output. */
int ts_lower_tsp_bias_add(const ts_graph *g, const ts_graph_node *mm, int *bias);

/* The int32 a folded bias of value c adds to the sums of a product of requantisation scale `scale`:
 * the Add it replaces adds 16 c to the int8 q (q / 16 the value), so round(16 c / scale), to nearest
 * even, saturated to +-2^30. */
int32_t ts_lower_tsp_bias_int(double c, float scale);

/* The TSP lowering in the registry (workloads/lower/lower.h). */
extern const ts_lowering ts_tsp_lowering;

#endif
