/* core/program.h — the instruction-stream container shared by all families.
 *
 * A program is a set of streams (one per tile, instruction queue or PE), each an array of
 * fixed-size instructions; initial data segments; symbols (code labels and constants); and marks
 * (superstep boundaries). It is tagged with its family and the fingerprint of the config it was
 * compiled for. The binary layout is documented in docs/program-format.md and in program.c.
 *
 * The struct is a plain data container: families read it when they load (predecode) a program.
 */
#ifndef TS_CORE_PROGRAM_H
#define TS_CORE_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/buf.h"
#include "core/err.h"
#include "core/isa.h"

#define TS_PROGRAM_VERSION 2

/* One instruction: 32 bytes in memory and in the file. */
typedef struct ts_insn {
    uint16_t op;                /* index into the family's ts_isa.ops */
    uint16_t line;              /* source line mod 65536 for messages; 0 if unknown; not semantic */
    int32_t a[TS_MAX_OPNDS];    /* operands: register numbers, immediates, f32 bits, pcs */
} ts_insn;

/* A stream is held one of two ways: as an array of ts_insn (insn, the form the assembler and
 * most lowerings build and most loaders read), or packed (packed != NULL, insn NULL): its n
 * instructions in the file's variable-length form (docs/program-format.md), about 5 bytes an
 * instruction where ts_insn takes 32. A lowering of many instructions builds packed streams
 * (ts_stream_emit_packed); a loader that takes them unpacks one stream at a time
 * (ts_stream_unpack). ts_stream_emit works on an insn stream only. */
typedef struct ts_stream {
    uint32_t kind;              /* index into ts_isa.stream_kinds */
    uint32_t index;             /* tile / queue / PE number */
    uint32_t n;                 /* instructions */
    uint32_t cap;               /* insn: capacity in instructions; packed: in bytes */
    ts_insn *insn;              /* owned; NULL when packed */
    uint8_t *packed;            /* owned; NULL when held as insn */
    uint32_t packed_len;        /* bytes used in packed */
} ts_stream;

typedef struct ts_segment {
    uint32_t kind, index;       /* target, as for streams */
    uint64_t addr;              /* byte address in the target's memory */
    uint32_t len;
    uint32_t shared;            /* 1: bytes are another segment's of this program (equal contents are
                                 * held once: ts_program_add_segment), not freed with this one */
    uint8_t *bytes;             /* owned unless shared; read-only once added */
} ts_segment;

enum { TS_SYM_LABEL = 0, TS_SYM_CONST = 1 };

typedef struct ts_symbol {
    char *name;                 /* owned */
    uint32_t kind;              /* TS_SYM_LABEL: value is a pc in stream; TS_SYM_CONST: a .equ */
    uint32_t stream;            /* index into streams (labels only) */
    int64_t value;
} ts_symbol;

typedef struct ts_mark {        /* ".superstep id" before instruction pc of a stream */
    uint32_t stream, pc, id;
} ts_mark;

typedef struct ts_program {
    char arch[16];              /* family name */
    uint64_t config_fp;         /* fingerprint of the config compiled for; 0 = any config */
    char *workload;             /* owned, optional: what it computes, for reports */
    ts_stream *streams; size_t nstreams, cap_streams;
    ts_segment *segs; size_t nsegs, cap_segs;
    ts_symbol *syms; size_t nsyms, cap_syms;
    ts_mark *marks; size_t nmarks, cap_marks;
    struct ts_segix *segix;     /* owned: the contents of the segments added, to share equal bytes */
} ts_program;

ts_program *ts_program_create(const char *arch);
void ts_program_destroy(ts_program *p);

/* Builders (used by the assembler and by the compiler's lowerings). Return NULL/-1 on OOM.
 * ts_program_stream keeps p->streams sorted by (kind, index) and finds by binary search: adding
 * a stream may move others (label and mark stream indexes are renumbered), so keep a stream's
 * (kind, index) rather than a pointer or position across calls that may add one. */
ts_stream *ts_program_stream(ts_program *p, uint32_t kind, uint32_t index); /* find or add */
ts_stream *ts_program_stream_find(const ts_program *p, uint32_t kind, uint32_t index); /* NULL if absent */
ts_insn *ts_stream_emit(ts_stream *s, uint16_t op);                         /* zeroed operands */
/* Packed streams. ts_insn_pack writes in's packed form (at most TS_INSN_PACKED_MAX bytes) and
 * returns its length; ts_insn_unpack reads one from [*at, end), advancing *at, and returns -1
 * when the bytes are not a packed instruction. ts_stream_emit_packed appends to a packed stream
 * (or an empty one, which becomes packed): -1 on OOM or past 4 GiB. ts_stream_unpack writes the
 * stream's s->n instructions (either form) to out. ts_program_unpack turns every packed stream of
 * p into an insn stream (for tools and tests that index s->insn): TS_ENOMEM on OOM. */
#define TS_INSN_PACKED_MAX 41
size_t ts_insn_pack(const ts_insn *in, uint8_t *out);
int ts_insn_unpack(const uint8_t **at, const uint8_t *end, ts_insn *out);
int ts_stream_emit_packed(ts_stream *s, const ts_insn *in);
ts_status ts_stream_unpack(const ts_stream *s, ts_insn *out, ts_err *err);
ts_status ts_program_unpack(ts_program *p, ts_err *err);
/* Free one stream's instructions (either form), keeping its kind, index and n: a loader that owns
 * the program drops each stream once decoded. The program stays valid to destroy. */
void ts_stream_release(ts_stream *s);
/* Copies bytes, or shares the bytes of an earlier segment of p with the same contents (a lowering
 * places the same tables and weights on many tiles). */
ts_status ts_program_add_segment(ts_program *p, uint32_t kind, uint32_t index, uint64_t addr,
                                 const void *bytes, uint32_t len, ts_err *err);
ts_status ts_program_add_symbol(ts_program *p, const char *name, uint32_t kind, uint32_t stream,
                                int64_t value, ts_err *err);
ts_status ts_program_add_mark(ts_program *p, uint32_t stream, uint32_t pc, uint32_t id, ts_err *err);
/* Sort streams by (kind, index), segments by (kind, index, addr), symbols by (stream, value,
 * name), marks by (stream, pc): the canonical order written to files. */
void ts_program_canonicalize(ts_program *p);

/* Binary form. The reader checks magic, version, sizes, CRC and every index, operand count and
 * register number against the family's ISA, and reports "file: offset N: what is wrong".
 * ts_program_encode appends to out, tables in canonical order, without changing p. */
ts_status ts_program_encode(const ts_program *p, ts_buf *out, ts_err *err);
ts_status ts_program_decode(ts_program **out, const char *name, const void *data, size_t len,
                            const ts_isa *isa, ts_err *err);
/* As ts_program_decode, with the streams kept packed when `packed` (for a loader that takes them). */
ts_status ts_program_decode_opt(ts_program **out, const char *name, const void *data, size_t len,
                                const ts_isa *isa, bool packed, ts_err *err);
ts_status ts_program_write(const ts_program *p, const char *path, ts_err *err);
ts_status ts_program_read(ts_program **out, const char *path, const ts_isa *isa, ts_err *err);
/* Read arch name from a binary without decoding the rest; 0 if data is a program binary. */
int ts_program_peek_arch(const void *data, size_t len, char arch[16]);

/* Refuse a program compiled for another config: names both fingerprints and the config. */
ts_status ts_program_check_config(const ts_program *p, uint64_t config_fp, const char *config_name,
                                  ts_err *err);

/* Text assembly, generic over the family's ISA table (syntax: docs/assembly.md). */
ts_status ts_asm(ts_program **out, const char *file, const char *text, size_t len, const ts_isa *isa,
                 ts_err *err);
/* Canonical text: ts_asm(ts_disasm(p)) encodes to the same bytes as p. */
ts_status ts_disasm(const ts_program *p, const ts_isa *isa, ts_buf *out, ts_err *err);

#endif
