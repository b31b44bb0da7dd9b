// SPDX-License-Identifier: MIT
/* HDF5 chunk filters: LZF, shuffle, fletcher32 (h5filters.h). */
#include <errno.h>
#include <string.h>

#include "codec/h5filters.h"

int tfs_lzf_decode(const uint8_t *src, size_t n, uint8_t *dst, size_t cap,
		   size_t *out_len, size_t *at)
{
	size_t i = 0, o = 0;

	while (i < n) {
		size_t ctrl = src[i], len, dist, k;

		*at = i++;
		if (ctrl < 32) {
			len = ctrl + 1;
			if (len > n - i)
				return -EBADMSG;
			if (len > cap - o)
				return -E2BIG;
			memcpy(dst + o, src + i, len);
			i += len;
			o += len;
			continue;
		}
		len = ctrl >> 5;
		if (len == 7) {
			if (i >= n)
				return -EBADMSG;
			len += src[i++];
		}
		if (i >= n)
			return -EBADMSG;
		dist = ((ctrl & 31) << 8) + src[i++] + 1;
		if (dist > o)
			return -EBADMSG;
		len += 2;
		if (len > cap - o)
			return -E2BIG;
		/* byte by byte: the reference may overlap the output */
		for (k = 0; k < len; k++, o++)
			dst[o] = dst[o - dist];
	}
	*out_len = o;
	return 0;
}

void tfs_unshuffle(const uint8_t *src, size_t n, uint32_t elem_size,
		   uint8_t *dst)
{
	size_t count, i, j;

	if (elem_size <= 1) {
		memcpy(dst, src, n);
		return;
	}
	count = n / elem_size;
	for (j = 0; j < elem_size; j++)
		for (i = 0; i < count; i++)
			dst[i * elem_size + j] = src[j * count + i];
	memcpy(dst + count * elem_size, src + count * elem_size,
	       n - count * elem_size);
}

uint32_t tfs_h5_fletcher32(const uint8_t *p, size_t n)
{
	uint64_t s1 = 0, s2 = 0;
	size_t i;

	for (i = 0; i + 1 < n; i += 2) {
		s1 = (s1 + ((uint32_t)p[i] << 8 | p[i + 1])) % 65535;
		s2 = (s2 + s1) % 65535;
	}
	if (n & 1) {
		s1 = (s1 + ((uint32_t)p[n - 1] << 8)) % 65535;
		s2 = (s2 + s1) % 65535;
	}
	return (uint32_t)(s2 << 16 | s1);
}
