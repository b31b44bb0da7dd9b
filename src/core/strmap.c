// SPDX-License-Identifier: MIT
/* String hash map: see src/core/strmap.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "strmap.h"

/* XXH3: paths differ in their last bytes, which FNV-1a mixes poorly */
static uint32_t hash_str(const char *s)
{
	return (uint32_t)XXH3_64bits(s, strlen(s));
}

void tfs_strmap_init(struct tfs_strmap *m)
{
	memset(m, 0, sizeof(*m));
}

void tfs_strmap_free(struct tfs_strmap *m)
{
	free(m->keys);
	free(m->vals);
	free(m->hashes);
	memset(m, 0, sizeof(*m));
}

/* @key's slot (hash @h): where it is, or the empty one it would take */
static size_t slot_of(const struct tfs_strmap *m, const char *key, uint32_t h)
{
	size_t i = h & (m->cap - 1);

	while (m->keys[i] && (m->hashes[i] != h || strcmp(m->keys[i], key)))
		i = (i + 1) & (m->cap - 1);
	return i;
}

bool tfs_strmap_get(const struct tfs_strmap *m, const char *key, uint32_t *val)
{
	size_t i;

	if (!m->cap)
		return false;
	i = slot_of(m, key, hash_str(key));
	if (!m->keys[i])
		return false;
	if (val)
		*val = m->vals[i];
	return true;
}

static int grow(struct tfs_strmap *m)
{
	struct tfs_strmap n;
	size_t i, j;

	n.cap = m->cap ? m->cap * 2 : 64;
	n.len = m->len;
	n.keys = calloc(n.cap, sizeof(*n.keys));
	n.vals = calloc(n.cap, sizeof(*n.vals));
	n.hashes = calloc(n.cap, sizeof(*n.hashes));
	if (!n.keys || !n.vals || !n.hashes) {
		free(n.keys);
		free(n.vals);
		free(n.hashes);
		return -ENOMEM;
	}
	/* the keys are distinct: only an empty slot is looked for */
	for (i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		j = m->hashes[i] & (n.cap - 1);
		while (n.keys[j])
			j = (j + 1) & (n.cap - 1);
		n.keys[j] = m->keys[i];
		n.vals[j] = m->vals[i];
		n.hashes[j] = m->hashes[i];
	}
	tfs_strmap_free(m);
	*m = n;
	return 0;
}

int tfs_strmap_put(struct tfs_strmap *m, const char *key, uint32_t val)
{
	uint32_t h = hash_str(key);
	size_t i;

	if ((m->len + 1) * 2 > m->cap && grow(m))
		return -ENOMEM;
	i = slot_of(m, key, h);
	if (!m->keys[i]) {
		m->keys[i] = key;
		m->hashes[i] = h;
		m->len++;
	}
	m->vals[i] = val;
	return 0;
}
