/* core/fileio.h — reading whole files and writing outputs atomically.
 *
 * Outputs are written to "<path>.tmp.<pid>" and renamed over <path>, so a reader never sees a
 * half-written report, program or trace.
 */
#ifndef TS_CORE_FILEIO_H
#define TS_CORE_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include "core/err.h"

/* Read a whole file; *data is owned by the caller (ts_free) and NUL-terminated. A file larger than
 * the input limit (core/limit.h, input_bytes) is TS_EINPUT, before it is read. */
ts_status ts_read_file(const char *path, char **data, size_t *len, ts_err *err);
/* Write data to path atomically ("-" writes to stdout). The temporary file is tracked (below)
 * while it exists, and stale ones of path are removed first (ts_tmp_remove_stale). */
ts_status ts_write_file_atomic(const char *path, const void *data, size_t len, ts_err *err);

/* Whether an output could be written, checked before the work that produces it: creates and
 * removes path's temporary file. "-" and NULL (standard output) are fine. Errors as
 * ts_write_file_atomic's (TS_EIO, "cannot write: <reason>" at path). */
ts_status ts_check_writable(const char *path, ts_err *err);

/* Temporary files in flight ("<path>.tmp.<pid>": reports, programs, a trace being written), so
 * that a program stopped by a signal can remove them. ts_tmp_track copies tmp (a path shorter
 * than TS_TMP_PATH_MAX) into one of TS_TMP_SLOTS process-wide slots and returns the slot, or -1
 * when none is free or the path is too long (it is then not tracked: the only cost is a file left
 * behind); ts_tmp_untrack(-1) is a no-op. ts_tmp_remove_all unlinks every tracked file and is
 * async-signal-safe: the CLI calls it from its SIGINT, SIGTERM and SIGHUP handler. */
/* The temporary file of path, "<path>.tmp.<pid>": owned by the caller (ts_free), NULL when memory
 * runs out. */
char *ts_tmp_name(const char *path);
#define TS_TMP_SLOTS 16
#define TS_TMP_PATH_MAX 4096
int ts_tmp_track(const char *tmp);
void ts_tmp_untrack(int slot);
void ts_tmp_remove_all(void);
/* Remove "<path>.tmp.<pid>" files whose process no longer runs on this host: what a run killed by
 * SIGKILL (which no handler sees) left beside path. A file of a live process is kept, so is one of a
 * pid that a new process has taken since. The pid is this host's: on a filesystem shared between
 * hosts a file written at this moment by another host's process of a pid free here would be
 * removed, but two processes writing the same output at once already race for its name. */
void ts_tmp_remove_stale(const char *path);

/* 64-bit FNV-1a, used for config fingerprints. Chain by passing the previous hash as seed. */
#define TS_FNV_SEED 0xcbf29ce484222325ULL
uint64_t ts_fnv1a(uint64_t seed, const void *data, size_t len);

#endif
