/* core/limit.h — the sizes tessera accepts from its inputs, in one place.
 *
 * Each reader checks what it is given against these limits before it allocates for it, so hostile
 * or mistaken input (a billion-row matmul, a 2^31-element tensor, `.zero 67108864` over 65,536
 * tiles, a 100 MB YAML list) ends with an error that names the limit and how to raise it, instead
 * of taking the host's memory. The defaults are far above what the shipped chips and models need.
 *
 * The limits are process-wide, like the allocation hook (core/alloc.h): a program sets them once,
 * before any work (the CLI from the TESSERA_LIMITS environment variable, the fuzz targets to small
 * values), and the readers only read them. They are not meant to change while other threads read.
 *
 * A limit error says, for example:
 *   tensor 'A' has 2000000000 elements, more than the limit of 268435456 (raise it with
 *   TESSERA_LIMITS=tensor_elems=N)
 */
#ifndef TS_CORE_LIMIT_H
#define TS_CORE_LIMIT_H

#include <stddef.h>
#include <stdint.h>

typedef enum ts_limit_id {
    TS_LIMIT_INPUT_BYTES,   /* a file read whole: config, workload, model, program, sweep spec (1 GiB) */
    TS_LIMIT_YAML_NODES,    /* scalars, maps and lists in one YAML document (1,000,000) */
    TS_LIMIT_TENSOR_ELEMS,  /* elements of one tensor of a model (2^28) */
    TS_LIMIT_TENSOR_BYTES,  /* bytes of one tensor of a model (1 GiB) */
    TS_LIMIT_GRAPH_NODES,   /* operators of one model, blocks expanded (100,000) */
    TS_LIMIT_RANGE_UNITS,   /* streams or data targets of one assembler range A-B (2^20) */
    TS_LIMIT_DATA_BYTES,    /* bytes of one assembler .data segment (64 MiB) */
    TS_LIMIT_PROGRAM_BYTES, /* instructions, streams and data the assembler builds, ranges expanded (1 GiB) */
    TS_LIMIT_SWEEP_POINTS,  /* values of one sweep axis, and points of a whole sweep (1,000,000) */
    TS_LIMIT_COUNT
} ts_limit_id;

/* The current value of a limit; UINT64_MAX when it is off. */
uint64_t ts_limit(ts_limit_id id);
/* Its name in TESSERA_LIMITS ("tensor_elems"), and its default. */
const char *ts_limit_name(ts_limit_id id);
uint64_t ts_limit_default(ts_limit_id id);
/* Set one limit (0 turns it off: UINT64_MAX), or every limit back to its default. */
void ts_limit_set(ts_limit_id id, uint64_t value);
void ts_limits_reset(void);

/* Apply "name=value,name=value" (the TESSERA_LIMITS syntax): a value is a whole number with an
 * optional suffix k, M, G, T (10^3...) or Ki, Mi, Gi, Ti (2^10...), or 0 or "none" for no limit.
 * Returns 0, or -1 with a message in why (and no limit changed). */
int ts_limits_parse(const char *spec, char *why, size_t n);

/* The tail of every limit error: "(raise it with TESSERA_LIMITS=tensor_elems=N)". */
#define TS_LIMIT_HINT_FMT "(raise it with TESSERA_LIMITS=%s=N)"

#endif
