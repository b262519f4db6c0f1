/* tests/arch/arch_modes.h — run one program in every mode of a chip model and compare what each
 * mode gives, for any family.
 *
 * Every family has a fast mode, a reference mode that steps every unit every cycle (lockstep) and
 * host threads, and a run must give the same results in each, byte for byte (docs/DESIGN.md). The
 * harness runs a program through the family's vtable as the kernel does (core/sim.c: the same
 * checks, step windows, hang detector, cycle limit, names and pricing), once per mode of
 * arch_modes[] (fast, lockstep, on 2 and 3 threads, lockstep on 2 and 3 threads), and compares
 * everything a run gives: the JSON report of a run that succeeds (every field of the results and
 * every statistics table, every number to the last bit), the status and whole error message
 * (unit, cycle, detail) of one that fails, and whatever state the caller adds (a family's memory).
 * It knows no family.
 */
#ifndef TS_TESTS_ARCH_MODES_H
#define TS_TESTS_ARCH_MODES_H

#include <stdbool.h>
#include <stddef.h>
#include "core/buf.h"
#include "core/config.h"
#include "core/energy.h"
#include "core/err.h"
#include "core/program.h"
#include "core/results.h"
#include "core/sim.h"

/* One way to run a model. */
typedef struct arch_mode {
    const char *name;  /* "fast", "lockstep", "2 threads"... for messages */
    bool lockstep;
    int threads;
} arch_mode;

/* The modes a run is compared in, the reference first. */
enum {
    ARCH_FAST,              /* the reference: fast, one thread */
    ARCH_LOCKSTEP,          /* every unit stepped every cycle */
    ARCH_THREADS2,          /* fast on 2 and on 3 host threads (an even and an uneven split) */
    ARCH_THREADS3,
    ARCH_LOCKSTEP_THREADS2, /* lockstep on 2 and on 3 host threads */
    ARCH_LOCKSTEP_THREADS3,
    ARCH_NMODES
};
extern const arch_mode arch_modes[ARCH_NMODES];
#define ARCH_MODES_ALL ((1u << ARCH_NMODES) - 1)
/* Fewer, for test executables that run whole chips or many programs: the reference, lockstep and
 * an uneven split over threads. There every mode would cost several times as much (lockstep on
 * threads steps thousands of tiles with a barrier every cycle: the IPU calibration, the IPU and TSP
 * lowering tests took 2 to 30 times as long on a loaded 2-core host) for what the conformance test
 * and the family tests of small programs check already. */
#define ARCH_MODES_QUICK (1u << ARCH_FAST | 1u << ARCH_LOCKSTEP | 1u << ARCH_THREADS3)
/* The modes run when arch_opts.modes is 0: ARCH_MODES_ALL, unless a test executable sets
 * ARCH_MODES_QUICK in its main() before its tests start. */
extern unsigned arch_modes_default;
/* The modes run under ASan + UBSan (scripts/test.sh sets TS_SANITIZER=address) when arch_opts.modes
 * is 0, where a test executable sets it in its main(): the lowering tests, whose programs run in
 * the fast mode alone there (ARCH_MODES_FAST); 0 (the default) for arch_modes_default under the
 * rule of arch_modes.c. The threaded and lockstep code runs under ASan + UBSan in the family tests
 * (every mode), and the normal build compares every mode the lowering tests ask for. */
#define ARCH_MODES_FAST (1u << ARCH_FAST)
extern unsigned arch_modes_address;

typedef struct arch_opts {
    /* The run's options: max_cycles, hang_cycles, warn, phase_events, regions... (lockstep and
     * threads are the mode's; trace, activity and progress are not for runs made several times). */
    ts_run_opts run;
    const ts_energy_table *energy; /* borrowed, may be NULL: price the results as ts_sim_run does */
    /* Append to out what the report does not show but must not depend on the mode either (a
     * family's memory, a lowered model's outputs), after a run that succeeded; may be NULL. */
    void (*state)(ts_model *m, void *ud, ts_buf *out);
    void *ud;       /* for state */
    unsigned modes; /* which of arch_modes[] to run: bit i for arch_modes[i] (the reference always
                     * runs); 0 for arch_modes_default */
} arch_opts;

/* What one run gives. */
typedef struct arch_run {
    const ts_family *fam; /* borrowed */
    ts_model *m;          /* owned: the model after the run, for inspection; NULL when create failed */
    ts_status rc;         /* TS_OK, or the first failure */
    const char *stage;    /* where it failed: "input", "create", "load", "run", "collect" (and
                           * price); NULL after a success */
    ts_err err;           /* what failed */
    char errline[1400];   /* err formatted on one line ("tile 5, cycle 120: ..."); "" after a success */
    ts_results r;         /* the results when rc == TS_OK (r.stats NULL otherwise) */
    ts_buf text;          /* what modes are compared on: the JSON report then the state, or the
                           * status and error message */
} arch_run;

/* True under ThreadSanitizer (scripts/test.sh sets TS_SANITIZER=thread): a test whose runs are
 * all on one thread has no race to find there, and one that runs many programs on threads may run
 * fewer of them (docs/testing.md); the other two builds run them all. */
bool arch_tsan(void);

/* Run p on cfg in one mode as the kernel would; never aborts (see out->rc). opts may be NULL.
 * Free with arch_run_free. */
ts_status arch_run_mode(const ts_family *fam, const ts_config *cfg, const ts_program *p, const arch_opts *opts,
                        bool lockstep, int threads, arch_run *out);
void arch_run_free(arch_run *r);

/* Run p in every mode of arch_modes[] (those of opts->modes) and compare each with the first
 * (under ThreadSanitizer, TS_SANITIZER=thread, the modes on threads only: arch_modes.c).
 * Returns true when all agree; otherwise false with diff (appended to; may be NULL) naming both
 * modes and the first line that differs. In both cases out holds the first mode's run, whether it
 * succeeded or not. */
bool arch_modes_compare(const ts_family *fam, const ts_config *cfg, const ts_program *p, const arch_opts *opts,
                        arch_run *out, ts_buf *diff);
/* The same, failing the current Check test with the difference. */
void arch_modes_check(const ts_family *fam, const ts_config *cfg, const ts_program *p, const arch_opts *opts,
                      arch_run *out);

#endif
