// SPDX-License-Identifier: MIT
/* The range planner: see range_plan.h. */
#include "remote/range_plan.h"

static int wanted(uint8_t s)
{
	return s == TFS_CHUNK_MISSING || s == TFS_CHUNK_FAILED;
}

size_t tfs_plan_pieces(const uint8_t *state, uint64_t from, uint64_t last,
		       uint64_t max_piece, struct tfs_plan_piece *out,
		       size_t max_out, uint64_t *next)
{
	uint64_t c = from, start;
	size_t n = 0;

	if (max_piece < 1)
		max_piece = 1;
	if (max_piece > TFS_PLAN_MAX_PIECE)
		max_piece = TFS_PLAN_MAX_PIECE;
	while (c <= last && n < max_out) {
		if (!wanted(state[c])) {
			c++;
			continue;
		}
		start = c;
		while (c <= last && wanted(state[c]) && c - start < max_piece)
			c++;
		out[n].first = start;
		out[n].count = c - start;
		n++;
	}
	*next = c;
	return n;
}
