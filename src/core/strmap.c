// SPDX-License-Identifier: MIT
/* String hash map: see src/core/strmap.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "strmap.h"

/* XXH3: paths differ in their last bytes, which FNV-1a mixes poorly */
static size_t hash_str(const char *s)
{
	return (size_t)XXH3_64bits(s, strlen(s));
}

void tfs_strmap_init(struct tfs_strmap *m)
{
	memset(m, 0, sizeof(*m));
}

void tfs_strmap_free(struct tfs_strmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

static size_t slot_of(const struct tfs_strmap *m, const char *key)
{
	size_t i = hash_str(key) & (m->cap - 1);

	while (m->keys[i] && strcmp(m->keys[i], key) != 0)
		i = (i + 1) & (m->cap - 1);
	return i;
}

bool tfs_strmap_get(const struct tfs_strmap *m, const char *key, uint32_t *val)
{
	size_t i;

	if (!m->cap)
		return false;
	i = slot_of(m, key);
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
	if (!n.keys || !n.vals) {
		free(n.keys);
		free(n.vals);
		return -ENOMEM;
	}
	for (i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		j = slot_of(&n, m->keys[i]);
		n.keys[j] = m->keys[i];
		n.vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	*m = n;
	return 0;
}

int tfs_strmap_put(struct tfs_strmap *m, const char *key, uint32_t val)
{
	size_t i;

	if ((m->len + 1) * 2 > m->cap && grow(m))
		return -ENOMEM;
	i = slot_of(m, key);
	if (!m->keys[i]) {
		m->keys[i] = key;
		m->len++;
	}
	m->vals[i] = val;
	return 0;
}
