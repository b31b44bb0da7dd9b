// SPDX-License-Identifier: MIT
/* A CBOR attributes map as xattrs: see cbor_xattrs.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/builder.h"
#include "parse/cbor.h"
#include "formats/common/cbor_xattrs.h"

#define ATTR_XATTR_MAX 1024 /* longest attribute value as xattr */
#define ATTR_KEY_MAX 200

int tfs_cbor_attr_xattrs(struct tfs_builder *b, uint32_t handle, cbor_item_t *m)
{
	char buf[ATTR_XATTR_MAX + 1], key[ATTR_KEY_MAX + 8];
	struct cbor_pair *pairs;
	size_t i, n, klen;
	char *k;
	int ret = 0;

	m = tfs_cbor_untag(m);
	if (!m || !cbor_isa_map(m))
		return 0;
	pairs = cbor_map_handle(m);
	n = cbor_map_size(m);
	for (i = 0; i < n && !ret; i++) {
		if (tfs_cbor_text(pairs[i].key, &k, &klen))
			continue;
		if (klen && klen <= ATTR_KEY_MAX && !memchr(k, '\0', klen) &&
		    tfs_cbor_scalar_text(pairs[i].value, buf, sizeof(buf))) {
			snprintf(key, sizeof(key), "attr.%s", k);
			ret = tfs_builder_set_xattr_str(b, handle, key, buf);
		}
		free(k);
	}
	return ret ? -ENOMEM : 0;
}
