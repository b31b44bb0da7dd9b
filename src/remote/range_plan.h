/* SPDX-License-Identifier: MIT */
/*
 * The range planner of remote sources: which requests fetch a run of
 * chunks.  Pure (no I/O), so its unit suite pins the rules down.
 */
#ifndef TFS_RANGE_PLAN_H
#define TFS_RANGE_PLAN_H

#include <stddef.h>
#include <stdint.h>

/* a chunk's state; FAILED is planned again like MISSING */
enum {
	TFS_CHUNK_MISSING,
	TFS_CHUNK_FETCHING,
	TFS_CHUNK_PRESENT,
	TFS_CHUNK_FAILED
};

/* the most chunks one request may cover (its buffer: this x chunk size) */
#define TFS_PLAN_MAX_PIECE 256

struct tfs_plan_piece {
	uint64_t first, count;
};

/*
 * Cover the chunks of [@from, @last] whose @state is MISSING or FAILED
 * with pieces of consecutive such chunks, each at most @max_piece long
 * (1..TFS_PLAN_MAX_PIECE), in order, at most @max_out of them.  Returns
 * how many; *@next is where to go on (@last + 1 once all is planned).
 */
size_t tfs_plan_pieces(const uint8_t *state, uint64_t from, uint64_t last,
		       uint64_t max_piece, struct tfs_plan_piece *out,
		       size_t max_out, uint64_t *next);

#endif
