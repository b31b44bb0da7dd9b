/* SPDX-License-Identifier: MIT */
/*
 * A bounded reader of the protobuf wire format (specs/onnx.md section 1):
 * the containers that are protobuf messages (ONNX models, TensorFlow
 * checkpoints) walk their messages field by field, keeping the absolute
 * byte offset of every key and value, so a payload (ONNX raw_data) can be
 * served from the mapping where it lies and every refusal names its place.
 *
 * A message is a cursor over its bytes (the top level: the whole file; a
 * sub-message: the payload of a LEN field, tfs_pb_sub).  tfs_pb_next()
 * reads one field: the key varint (field number 1 .. 2^29-1, wire type
 * VARINT, I64, LEN or I32; groups 3/4 and 6/7 are refused), then its value
 * (varints of at most 10 bytes; a LEN length compared with the bytes left
 * before anything is touched).  Unknown fields need no code: a caller
 * ignores the field it was given, whose value was already stepped over.
 *
 * Repeated scalars come packed (one LEN field of values back to back) or
 * unpacked (one field per value), mixed in one message: tfs_pb_values
 * iterates the values of one such field whichever form it has.  Nesting is
 * bounded by struct tfs_pb_limits (depth and messages), checked by
 * tfs_pb_enter() before a caller recurses or allocates.  Nothing here
 * allocates.  Failures return -EBADMSG (or -E2BIG for a limit) and fill the
 * diagnostic with @what (the message's name, e.g. "TensorProto"), the
 * field and the offset.
 */
#ifndef TFS_PARSE_PROTOBUF_H
#define TFS_PARSE_PROTOBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cursor.h"

struct tfs_diag;

enum tfs_pb_wire {
	TFS_PB_VARINT = 0,
	TFS_PB_I64 = 1,
	TFS_PB_LEN = 2,
	TFS_PB_I32 = 5,
};

#define TFS_PB_MAX_FIELD ((1u << 29) - 1)
/* protobuf's own default recursion limit */
#define TFS_PB_MAX_DEPTH 100

struct tfs_pb_field {
	uint32_t number;
	enum tfs_pb_wire wire;
	uint64_t at;	   /* absolute offset of the key */
	uint64_t value_at; /* of the value; LEN: of the payload */
	/* VARINT: the value; I64 / I32: the little-endian value */
	uint64_t v;
	const uint8_t *data; /* LEN: the payload (into the message) */
	uint64_t len;	     /* LEN: its length */
};

/*
 * The next field of the message read by @c: 1 with @f filled, 0 at the
 * message's end, -EBADMSG (with @d: "@what: field N: ...").
 */
int tfs_pb_next(struct tfs_cursor *c, const char *what,
		struct tfs_pb_field *f, struct tfs_diag *d);

/* @c reads the payload of the LEN field @f (a sub-message) */
void tfs_pb_sub(const struct tfs_pb_field *f, struct tfs_cursor *c);

/* the wire type's name, for messages ("VARINT", "LEN", ...) */
const char *tfs_pb_wire_name(unsigned wire);

/*
 * A field the reader reads must come with the wire type of its declared
 * type: 0, or -EBADMSG at the field's key with @d saying "@what: wire type
 * I64, not VARINT".  The one policy of the protobuf readers (ONNX,
 * TensorFlow checkpoints; docs/formats/onnx.md, tf_checkpoint.md): such a
 * field is refused, not skipped, as prost and the Go runtime do (the C++
 * runtime keeps it as an unknown field, and the value the reader needed
 * would then be silently missing).  A field the reader does not read is
 * stepped over whatever its wire type; a repeated scalar, packed or not,
 * goes through tfs_pb_values_init().
 */
int tfs_pb_want(const struct tfs_pb_field *f, enum tfs_pb_wire wire,
		const char *what, struct tfs_diag *d);

/* a message's fields the reader reads: number, wire type, name */
struct tfs_pb_wanted {
	uint32_t number;
	enum tfs_pb_wire wire;
	const char *what; /* "BundleEntryProto.offset" */
};

/* tfs_pb_want() for @f by its row of @rows (@n); a field without one passes */
int tfs_pb_want_in(const struct tfs_pb_field *f,
		   const struct tfs_pb_wanted *rows, size_t n,
		   struct tfs_diag *d);

/* tfs_pb_next(), then tfs_pb_want_in() of the field it read */
int tfs_pb_next_in(struct tfs_cursor *c, const char *what,
		   const struct tfs_pb_wanted *rows, size_t n,
		   struct tfs_pb_field *f, struct tfs_diag *d);

/* nesting: depth now and at most, messages entered and at most */
struct tfs_pb_limits {
	uint32_t depth, max_depth;
	uint64_t messages, max_messages;
};

/*
 * Enter a sub-message starting at @at: -E2BIG (with @d naming @what) when
 * that would pass either limit; tfs_pb_leave() when done with it.
 */
int tfs_pb_enter(struct tfs_pb_limits *l, uint64_t at, const char *what,
		 struct tfs_diag *d);
void tfs_pb_leave(struct tfs_pb_limits *l);

/* the element type of a repeated scalar field */
enum tfs_pb_scalar {
	TFS_PB_SCALAR_VARINT, /* int32, int64, uint64, bool, enum */
	TFS_PB_SCALAR_FIXED32, /* float */
	TFS_PB_SCALAR_FIXED64, /* double */
};

/*
 * The values of one field of a repeated scalar: the one value of an
 * unpacked field, or every value of a packed one.  Init refuses a wire
 * type that is neither the scalar's own nor LEN, and a packed fixed-width
 * payload that is not a whole number of values (-EBADMSG, naming
 * @what.@name).
 */
struct tfs_pb_values {
	struct tfs_cursor c; /* packed: the payload */
	enum tfs_pb_scalar kind;
	bool packed;
	bool done;	   /* unpacked: its value was returned */
	uint64_t single;   /* unpacked: the value */
	uint64_t count;	   /* values in this field (varints: counted) */
	const char *what, *name;
};

int tfs_pb_values_init(struct tfs_pb_values *it, const struct tfs_pb_field *f,
		       enum tfs_pb_scalar kind, const char *what,
		       const char *name, struct tfs_diag *d);
/* 1 with *@v, 0 at the end (the values were checked by init: no failure) */
int tfs_pb_values_next(struct tfs_pb_values *it, uint64_t *v);

#endif
