/* workloads/lower/lower.h — the one lowering interface: a model to one family's program.
 *
 * A family's compiler registers one ts_lowering (workloads/lower/registry.c, one line each). A
 * lowering is an object made for one chip config: `create` derives the machine facts it needs from
 * the config (through arch/<family>/<family>_target.h, never a config key by string) and checks
 * its settings; `lower` compiles a finalized graph into a program and keeps what it planned;
 * `prepare` tells the run what the per-layer attribution will need (regions of units, per-phase
 * events); `attribute` adds the per-layer table ("layers") to the run's results; `destroy` frees it.
 *
 * Callers use the ts_lowered wrapper below: ts_lower_model loads a model (an ONNX file, a workload
 * YAML file or a built-in workload spec), lowers it for the config's family and hands back the
 * program and the lowering, which the caller owns (no state lives anywhere else).
 */
#ifndef TS_WORKLOADS_LOWER_LOWER_H
#define TS_WORKLOADS_LOWER_LOWER_H

#include <stdbool.h>
#include <stddef.h>
#include "core/config.h"
#include "core/energy.h"
#include "core/err.h"
#include "core/npy.h"
#include "core/program.h"
#include "core/results.h"
#include "core/sim.h"
#include "core/trace.h"
#include "workloads/graph.h"

struct ts_lower_mem;

/* One named setting of a lowering (e.g. planner=t10), as the command line gives it. */
typedef struct ts_lower_setting {
    const char *name;  /* borrowed */
    const char *value; /* borrowed */
} ts_lower_setting;

/* The settings of one compilation. A lowering reads those it declares and ignores the rest (a
 * setting of another family's lowering). */
typedef struct ts_lower_opts {
    const ts_lower_setting *v; /* borrowed; n entries */
    size_t n;
} ts_lower_opts;

/* The value of setting `name` in opts, NULL if absent (the last one given wins). */
const char *ts_lower_opts_get(const ts_lower_opts *opts, const char *name);

/* A setting a lowering declares: its name, a line of help, and its check (TS_EINPUT naming the
 * accepted values). */
typedef struct ts_lower_param {
    const char *name;
    const char *help;
    ts_status (*check)(const char *value, ts_err *err);
} ts_lower_param;

/* A family's lowering (a vtable; static, never freed). */
typedef struct ts_lowering {
    const char *arch;               /* the family it compiles for: a ts_config_arch value */
    const char *name;               /* what it is called in messages and docs */
    const ts_lower_param *params;   /* its settings; nparams entries */
    size_t nparams;
    /* A lowering for this config (whose arch is `arch`) with these settings into *state. */
    ts_status (*create)(const ts_config *cfg, const ts_lower_opts *opts, void **state, ts_err *err);
    /* Compile g; on success *out is a new program and the state keeps the plan. */
    ts_status (*lower)(void *state, const ts_graph *g, ts_program **out, ts_err *err);
    /* Before the run: set in ro what attribute needs (regions, per-phase events). May be NULL. */
    ts_status (*prepare)(void *state, ts_run_opts *ro, ts_err *err);
    /* After the run: add the per-layer table to res. May be NULL. */
    ts_status (*attribute)(void *state, ts_results *res, const ts_energy_table *energy, ts_err *err);
    /* Before the run: name in t each layer's supersteps or cycles, from the plan (g the graph
     * lower compiled; ts_lower_trace_layer), so the chip's slices carry their layer. May be NULL. */
    ts_status (*trace_layers)(void *state, const ts_graph *g, ts_trace *t);
    void (*destroy)(void *state);
    /* After the run: the values of graph output `tensor` of g (the graph lower compiled), read
     * from the machine's memory where the lowering placed it (mem), as f32 in C order into dst
     * (the tensor's elements), docs/values.md says how each family's numbers convert. May be
     * NULL: the family's outputs cannot be read back yet. */
    ts_status (*read_output)(void *state, const ts_graph *g, int tensor, const struct ts_lower_mem *mem, float *dst,
                             ts_err *err);
} ts_lowering;

/* A finished run's memory, for read_output: the family's read (core/sim.h) on its model. */
typedef struct ts_lower_mem {
    const ts_family *fam; /* borrowed */
    ts_model *m;          /* borrowed */
} ts_lower_mem;

/* Read len bytes of unit's memory through mem (the family's read; TS_EINPUT when it has none). */
ts_status ts_lower_mem_read(const ts_lower_mem *mem, uint64_t unit, uint64_t addr, void *dst, size_t len,
                            ts_err *err);

/* For a lowering's create: a zeroed state of `size` bytes, stored in *state (for destroy to free
 * with ts_free, whatever create does next) and returned; NULL and TS_ENOMEM "out of memory" in err
 * when memory runs out. */
void *ts_lower_state_new(size_t size, void **state, ts_err *err);

/* The registry: the lowering of a family (NULL if it has none), and the i-th one (NULL past the
 * end), in registration order. */
const ts_lowering *ts_lowering_find(const char *arch);
const ts_lowering *ts_lowering_at(size_t i);

/* Check a setting against every lowering that declares it: TS_OK if one accepts the value, the
 * first lowering's error if none does, TS_EINPUT "no lowering takes the setting 'x'" if none
 * declares it. */
ts_status ts_lower_check_setting(const char *name, const char *value, ts_err *err);

/* A model compiled for one config: its program (until taken) and its lowering. */
typedef struct ts_lowered ts_lowered;

/* Load the model at `path` (ts_wl_is_model) and lower it for cfg's family with opts (may be
 * NULL). Errors: TS_EINPUT "no lowering for arch 'x' yet", the lowering's config check, the
 * model's load, the lowering's own errors. */
ts_status ts_lower_model(const char *path, const ts_config *cfg, const ts_lower_opts *opts, ts_lowered **out,
                         ts_err *err);
/* Values a model is compiled with (docs/values.md). */
typedef struct ts_lower_values {
    const ts_npz *given;  /* arrays naming inputs and weights (workloads/graph_values.h), or NULL */
    const char *file;     /* the file they come from, for messages */
    /* Give every input and weight values before the graph is finalized: the arrays of `given`,
     * fill values for the rest, and keep them (ts_lowered_values). Implied by given. */
    bool fill;
} ts_lower_values;

/* ts_lower_model with values (v may be NULL: none). An ONNX model takes them before it is
 * finalized (so the BatchNormalization fold sees them); another kind of model after. Every data
 * input must be in v->given when given is not NULL. Errors as ts_lower_model's, and
 * workloads/graph_values.h's. */
ts_status ts_lower_model_values(const char *path, const ts_config *cfg, const ts_lower_opts *opts,
                                const ts_lower_values *v, ts_lowered **out, ts_err *err);
/* The values ts_lower_model_values would compile the model at path with (v->fill implied), into
 * out (owned; ts_npz_free), without lowering it: what `tessera compile --weights-out` writes, for
 * any model, whether or not a family takes it. */
ts_status ts_lower_model_given(const char *path, const ts_lower_values *v, ts_npz *out, ts_err *err);
/* The graph that was lowered (borrowed; finalized). */
const ts_graph *ts_lowered_graph(const ts_lowered *l);
/* The values every input and weight was given before finalize, by tensor name (borrowed; empty
 * unless the model was compiled with values). */
const ts_npz *ts_lowered_values(const ts_lowered *l);
/* After the run (from ts_run_opts.finished): read every graph output back with the lowering's
 * read_output, in graph order; TS_EINPUT "the <name> lowering cannot read outputs back yet" when
 * it has none. ts_lowered_outputs then holds them as f32 arrays named as the tensors. */
ts_status ts_lowered_read_outputs(ts_lowered *l, const ts_family *fam, ts_model *m, ts_err *err);
const ts_npz *ts_lowered_outputs(const ts_lowered *l);
/* Forget the outputs read back (after a read that failed part way). */
void ts_lowered_clear_outputs(ts_lowered *l);
/* Whether the lowering can read outputs back (has read_output). */
bool ts_lowered_reads_outputs(const ts_lowered *l);

/* The program, handed over to the caller (NULL the second time). */
ts_program *ts_lowered_take_program(ts_lowered *l);
/* The lowering's state: its report, as its family's header describes (borrowed). */
void *ts_lowered_state(const ts_lowered *l);
/* Before the run: the lowering's prepare (nothing for l == NULL). What it puts in ro (regions)
 * stays valid until ts_lowered_destroy. */
ts_status ts_lowered_prepare(ts_lowered *l, ts_run_opts *ro, ts_err *err);
/* After the run: the lowering's per-layer table (nothing for l == NULL). */
ts_status ts_lowered_attribute(ts_lowered *l, ts_results *res, const ts_energy_table *energy, ts_err *err);
/* Before the run: the layers of the plan into trace t (the lowering's trace_layers); TS_OK with
 * no trace or no such hook. */
ts_status ts_lowered_trace_layers(const ts_lowered *l, ts_trace *t, ts_err *err);
/* Layer `node` of g over [lo, hi] (supersteps or cycles, by key) into t, labelled as the trace's
 * layers track labels it: its operator type and node name ("Conv conv1"). */
ts_status ts_lower_trace_layer(ts_trace *t, const ts_graph *g, ts_trace_key key, uint64_t lo, uint64_t hi, int node);
void ts_lowered_destroy(ts_lowered *l); /* NULL is a no-op */

#endif
