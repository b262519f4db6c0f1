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
/* Write data to path atomically ("-" writes to stdout). */
ts_status ts_write_file_atomic(const char *path, const void *data, size_t len, ts_err *err);

/* 64-bit FNV-1a, used for config fingerprints. Chain by passing the previous hash as seed. */
#define TS_FNV_SEED 0xcbf29ce484222325ULL
uint64_t ts_fnv1a(uint64_t seed, const void *data, size_t len);
/* CRC-32 (IEEE), used to detect corrupt program files. */
uint32_t ts_crc32(uint32_t crc, const void *data, size_t len);

#endif
