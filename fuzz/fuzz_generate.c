/* fuzz/fuzz_generate.c — libFuzzer target for the families' program generators and their spec
 * parser (core/spec.c; e.g. the wafer's "stencil:nz=128", arch/wse/wse_family.c).
 *
 * The input, up to 300 bytes, is a spec given to every family's generator for its small fuzz
 * config (fuzz/lower_common.h), then for no config. A program a generator makes must load and run
 * on its own family's config: it finishes or reaches the cycle limit, never hangs or breaks an
 * invariant. Nothing may crash or leak.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/lower_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ts_fuzz_lower_init();
    char spec[301];
    size = size < 300 ? size : 300;
    memcpy(spec, data, size);
    spec[size] = '\0';
    for (size_t i = 0; i < TS_FUZZ_NCONFIGS; i++) {
        const ts_config *cfg = ts_fuzz_cfg[i];
        const ts_family *fam = ts_family_find(ts_config_arch(cfg));
        if (!fam || !fam->generate)
            continue;
        for (int with_cfg = 1; with_cfg >= 0; with_cfg--) {
            ts_err err;
            ts_err_init(&err);
            ts_program *prog = NULL;
            ts_status rc = fam->generate(spec, with_cfg ? cfg : NULL, &prog, &err);
            if ((rc == TS_OK) != (err.status == TS_OK) || (rc != TS_OK && prog)) {
                fprintf(stderr, "fuzz_generate: status %d with message '%s' and program %p\n", (int)rc, err.msg,
                        (void *)prog);
                abort();
            }
            if (prog && with_cfg) {
                ts_run_opts ro = {.max_cycles = 200000, .hang_cycles = 20000};
                ts_results res;
                if (ts_sim_run(fam, cfg, prog, &ro, ts_fuzz_energy[i], &res, &err) == TS_OK)
                    ts_results_free(&res);
                else if (!(err.status == TS_ESIM && strstr(err.msg, "cycle limit"))) {
                    fprintf(stderr, "fuzz_generate: '%s' on %s: %s\n", spec, ts_fuzz_configs[i], err.msg);
                    abort();
                }
            }
            ts_program_destroy(prog);
            ts_err_free(&err);
        }
    }
    return 0;
}
