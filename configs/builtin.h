/* configs/builtin.h — files embedded in the binary: configs, energy tables, workloads.
 *
 * Looked up by stem ("ipu_mk1", "horowitz45"). The list is generated at build time by
 * tools/embed.c from the files named in configs/meson.build.
 */
#ifndef TS_CONFIGS_BUILTIN_H
#define TS_CONFIGS_BUILTIN_H

#include <stddef.h>

/* 0 and the text if a built-in file of that stem exists, -1 otherwise. */
int ts_builtin_find(const char *name, const char **text, size_t *len);
size_t ts_builtin_count(void);
/* Stem and the original file path of the i-th built-in. */
const char *ts_builtin_name(size_t i);
const char *ts_builtin_path(size_t i);

#endif
