/* tests/toy/toy.h — a test-only family that exercises the kernel, config, program, report and
 * CLI paths until (and beside) the real families. Not registered in arch/registry.c. */
#ifndef TS_TESTS_TOY_H
#define TS_TESTS_TOY_H

#include "core/sim.h"

extern const ts_family ts_toy_family;
const ts_schema *ts_toy_schema_lookup(const char *arch);

#endif
