/* core/sim.h — the family vtable and the run loop.
 *
 * A family is a ts_family: a schema, an ISA table, and operations to create a model from a
 * config, load a program, advance it, and collect results. The kernel (ts_sim_run) owns the loop,
 * the cycle limit and the hang detector; it knows no chip. Families may jump over cycles in which
 * nothing changes, but every figure must equal what stepping every cycle gives (opts.lockstep).
 */
#ifndef TS_CORE_SIM_H
#define TS_CORE_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"
#include "core/isa.h"
#include "core/program.h"
#include "core/results.h"

typedef struct ts_trace ts_trace;       /* core/trace.h */
typedef struct ts_activity ts_activity; /* core/activity.h */
typedef struct ts_model ts_model;       /* defined by each family */
struct ts_family;                       /* below */

/* A rectangle of a family's units (WSE: PEs, x and y on the mesh) whose energy events the results
 * sum separately (table region_events), e.g. the stages of a lowered model. */
typedef struct ts_region {
    uint32_t x, y, w, h;
} ts_region;

/* The cycle limit that `tessera run` and sweep points apply when none is given: a program that
 * never ends (a loop that changes a register or memory on every pass does work every cycle, so
 * neither the hang detector nor the families' endless-loop check, core/loopmark.h, stops it) stops there
 * instead of holding a run or a sweep forever. A billion cycles are 0.6 s of chip time at 1.6 GHz,
 * 70 times a ResNet-50 inference on ipu_mk1 (14.4 million cycles; 159,295 on tsp_v1); a spinning
 * IPU tile reaches it in about 5 s of host time, a spinning wafer PE in about 30 s. */
#define TS_SIM_DEFAULT_MAX_CYCLES UINT64_C(1000000000)

typedef struct ts_run_opts {
    uint64_t max_cycles;   /* stop with TS_ESIM past this many cycles; 0 = no limit */
    /* When not NULL, max_cycles is a default the caller chose, not the user's: a run that reaches
     * it says "reached the default cycle limit of N ...: <max_cycles_hint>" (how to raise it). */
    const char *max_cycles_hint;
    uint64_t hang_cycles;  /* no progress for this many cycles is a hang; 0 = default (1,000,000) */
    int threads;           /* host threads; results must not depend on it; 0 or 1 = one */
    bool lockstep;         /* step every cycle of every unit (the reference mode) */
    bool warn;             /* record hazards and go on instead of stopping (where a family has them) */
    ts_trace *trace;       /* borrowed, may be NULL */
    ts_activity *activity; /* borrowed, may be NULL */
    const ts_region *regions; /* borrowed, nregions of them; families without a unit grid ignore them */
    size_t nregions;
    bool phase_events;     /* BSP families: energy events per superstep (table superstep_events) */
    /* Called now and then with the current cycle; may be NULL. */
    void (*progress)(void *ud, uint64_t cycle);
    void *progress_ud;
    /* Called once after a run that finished, before the model is destroyed, to read its memory
     * (the family's read); may be NULL. Its error is the run's. */
    ts_status (*finished)(void *ud, const struct ts_family *fam, ts_model *m, ts_err *err);
    void *finished_ud;
} ts_run_opts;

/* What one call to step() reports. */
typedef struct ts_step {
    uint64_t now;      /* the model's cycle after the call */
    uint64_t work;     /* monotonic count of work done (instructions, wavelets...): the hang detector watches it */
    bool done;         /* the program has finished */
    /* The cycle of the latest work, for families that know it (has_work_at set): a hang is then
     * reported from that cycle. Without it the kernel knows only the window of cycles in which
     * the work counter last moved, and says so. */
    bool has_work_at;
    uint64_t work_at;
} ts_step;

/* The chip summary printed by `tessera info`. */
#define TS_INFO_MAX 12
typedef struct ts_info {
    double clock_hz;
    uint64_t sram_bytes;                                      /* total on chip */
    struct { const char *name; uint64_t n; } units[TS_INFO_MAX];          /* "tiles": 1216 */
    size_t nunits;
    struct { const char *dtype; double macs; } peak[TS_INFO_MAX];         /* per cycle per chip */
    size_t npeak;
    struct { const char *name; double bytes_per_cycle; } bw[TS_INFO_MAX]; /* headline bandwidths */
    size_t nbw;
} ts_info;

typedef struct ts_family {
    const char *name;          /* the config's arch: value */
    const ts_schema *schema;
    const ts_isa *isa;
    /* Derived summary of a config. */
    ts_status (*info)(const void *cfg, ts_info *out, ts_err *err);
    ts_status (*create)(ts_model **out, const ts_config *cfg, const ts_run_opts *opts, ts_err *err);
    /* Validate and predecode a program. A family with load_owned takes streams held packed
     * (ts_stream_unpack) in both; ts_sim_run refuses them to one without it. */
    ts_status (*load)(ts_model *m, const ts_program *prog, ts_err *err);
    /* As load, for a program the model may take apart as it goes (ts_stream_release, segment bytes
     * freed) so that it and its decoded copy are not held whole together; the caller destroys
     * what is left. May be NULL (ts_sim_run_owned then uses load). */
    ts_status (*load_owned)(ts_model *m, ts_program *prog, ts_err *err);
    /* Advance to at most cycle `limit` (stop earlier when done). */
    ts_status (*step)(ts_model *m, uint64_t limit, ts_step *st, ts_err *err);
    /* Fill standard results and family statistics (r->stats is already created). */
    ts_status (*collect)(ts_model *m, ts_results *r, ts_err *err);
    /* Describe, one line per unit, what each blocked unit waits on (for hang errors). */
    void (*blocked)(ts_model *m, ts_buf *out);
    /* Read len bytes of a unit's memory after a run (zeros where never written): unit is an IPU
     * tile, a TSP MEM slice (data-segment index), a wafer PE y x mesh width + x. TS_EINPUT when
     * the range lies outside the unit's memory. May be NULL (a family whose values cannot be read). */
    ts_status (*read)(ts_model *m, uint64_t unit, uint64_t addr, void *dst, size_t len, ts_err *err);
    void (*destroy)(ts_model *m);
    /* The family's built-in program generators, given a spec "name:key=value,..." (e.g. the
     * wafer's "stencil:nz=128") and the config it is for (NULL: any that fits): *out the program,
     * or NULL with TS_OK when no generator has that name. May be NULL (no generators). */
    ts_status (*generate)(const char *spec, const ts_config *cfg, ts_program **out, ts_err *err);
    /* One line per generator, "name:key=default,... what it is", for help texts; NULL if none. */
    const char *generators;
    const char *default_config;   /* built-in config used when none is given, e.g. "ipu_mk1" */
    const char *default_workload; /* built-in program run when none is given, e.g. "ipu_default" */
} ts_family;

/* After a family's collect: macs_executed from the macs it counted, and the chip's peak MACs per
 * cycle per dtype and SRAM bandwidth from its info (none when it has no info). ts_sim_run calls it. */
void ts_sim_results_peak(const ts_family *fam, const ts_config *cfg, ts_results *res);

/* Create, load, run to completion, collect and price. On a simulation error the partial results
 * are discarded and err says which unit and cycle. The energy table comes from the caller. */
ts_status ts_sim_run(const ts_family *fam, const ts_config *cfg, const ts_program *prog,
                     const ts_run_opts *opts, const ts_energy_table *energy, ts_results *res,
                     ts_err *err);
/* As ts_sim_run, taking the program (*prog set to NULL once it is destroyed): a family with
 * load_owned frees it while loading, so that a large program is not held through the run beside
 * its decoded copy; for one without, it is destroyed after the run (such a family may borrow it,
 * as the wafer's PEs read their streams). On an error before the model is created it is left
 * to the caller. */
ts_status ts_sim_run_owned(const ts_family *fam, const ts_config *cfg, ts_program **prog,
                           const ts_run_opts *opts, const ts_energy_table *energy, ts_results *res,
                           ts_err *err);

#endif
