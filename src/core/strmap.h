/* SPDX-License-Identifier: MIT */
/*
 * A small open-addressing hash map from NUL-terminated strings to uint32_t.
 * Keys are borrowed: they must outlive the map.  Used by the builder to
 * claim paths; not thread-safe.
 */
#ifndef TFS_CORE_STRMAP_H
#define TFS_CORE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tfs_strmap {
	const char **keys;
	uint32_t *vals;
	uint32_t *hashes; /* each key's hash: growing reads no key again */
	size_t cap; /* a power of two, or 0 */
	size_t len;
};

void tfs_strmap_init(struct tfs_strmap *m);
void tfs_strmap_free(struct tfs_strmap *m);
/* the value of @key, or false when absent */
bool tfs_strmap_get(const struct tfs_strmap *m, const char *key, uint32_t *val);
/* insert or replace; 0 or -ENOMEM */
int tfs_strmap_put(struct tfs_strmap *m, const char *key, uint32_t val);

#endif
