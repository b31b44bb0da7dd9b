/* SPDX-License-Identifier: MIT */
/*
 * A reader of uncompressed tar archives (ustar, GNU and pax), offset-keeping
 * and bounds-checked: 512-byte headers, each checked against its checksum,
 * the member's data right after its header, padded to 512 bytes.  GNU long
 * names ('L') and pax extended headers ('x': path and size) apply to the
 * member after them; pax global headers ('g') and GNU long links ('K') are
 * read past.  Every member's name is made contained: "." components are
 * dropped ("./model_config.yaml" is "model_config.yaml"), an absolute name
 * or a ".." component refuses the archive.  A member's data must lie inside
 * the file.  Links, devices and fifos are returned with their type for the
 * caller to skip: nothing is ever followed.
 *
 * Refusals: -EBADMSG naming the field and its absolute offset (a bad
 * checksum, an octal field that is not octal, a size past the end of the
 * file, a bad pax record), -E2BIG past a limit.
 */
#ifndef TFS_PARSE_TAR_H
#define TFS_PARSE_TAR_H

#include <stdbool.h>
#include <stdint.h>

struct tfs_diag;

#define TFS_TAR_BLOCK 512
#define TFS_TAR_NAME_MAX 4096	    /* bytes of a member's name */
#define TFS_TAR_PAX_MAX (1u << 20)  /* bytes of a pax header's data */
#define TFS_TAR_MAX_MEMBERS 100000u /* members in one archive */

struct tfs_tar_member {
	char name[TFS_TAR_NAME_MAX + 1]; /* contained, NUL-terminated */
	size_t name_len;		 /* 0: the archive's root ("./") */
	char type;		/* '0' file ('\0' and '7' too), '5' dir... */
	uint64_t header_offset; /* its (last) header block */
	uint64_t data_offset;	/* its first byte of data */
	uint64_t size;		/* bytes of data */
};

struct tfs_tar_iter {
	uint64_t pos;	/* next header */
	uint64_t count; /* members returned */
	bool done;
};

/* does @data start with a ustar (POSIX or GNU) header with a good sum? */
bool tfs_tar_magic(const void *data, uint64_t size);

void tfs_tar_iter_init(struct tfs_tar_iter *it);

/*
 * The next member of the archive at @data (@size bytes) into *@m: 1, 0 at
 * the end (a zero block, or the end of the file at a header boundary), or
 * -errno with @d.
 */
int tfs_tar_next(const uint8_t *data, uint64_t size, struct tfs_tar_iter *it,
		 struct tfs_tar_member *m, struct tfs_diag *d);

/* true for a regular file ('0', '\0', '7') */
static inline bool tfs_tar_is_file(const struct tfs_tar_member *m)
{
	return m->type == '0' || m->type == 0 || m->type == '7';
}

#endif
