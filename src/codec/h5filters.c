// SPDX-License-Identifier: MIT
/* HDF5 chunk filters: LZF, shuffle, fletcher32 (h5filters.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

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

/* a zlib stream (RFC 1950) into dst[0, cap): exactly the stream's bytes */
static int h5_inflate(const uint8_t *src, size_t n, uint8_t *dst, size_t cap,
		      size_t *out)
{
	z_stream zs;
	int r;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit(&zs) != Z_OK)
		return -ENOMEM;
	zs.next_in = (Bytef *)src;
	zs.avail_in = (uInt)n;
	zs.next_out = dst;
	zs.avail_out = (uInt)cap;
	r = inflate(&zs, Z_FINISH);
	*out = cap - zs.avail_out;
	inflateEnd(&zs);
	if (r == Z_STREAM_END)
		return 0;
	return r == Z_BUF_ERROR && zs.avail_out == 0 ? -E2BIG : -EBADMSG;
}

int tfs_h5_unfilter(const struct tfs_h5_filter *f, unsigned n, uint32_t mask,
		    const uint8_t *in, size_t in_len, uint8_t *out,
		    size_t out_len, const char **why)
{
	size_t cap = in_len > out_len ? in_len : out_len, len = in_len, at;
	uint8_t *a = malloc(cap ? cap : 1), *b = malloc(cap ? cap : 1), *t;
	unsigned i;
	int ret = 0;

	*why = NULL;
	if (!a || !b) {
		ret = -ENOMEM;
		*why = "out of memory";
		goto out;
	}
	if (in_len > (size_t)UINT32_MAX) {
		ret = -EBADMSG;
		*why = "stored chunk above 4 GiB";
		goto out;
	}
	memcpy(a, in, in_len);
	for (i = n; i-- > 0;) {
		if (i < 32 && (mask >> i) & 1)
			continue;
		switch (f[i].id) {
		case 1:
			ret = h5_inflate(a, len, b, cap, &len);
			*why = ret == -E2BIG ? "deflate: more bytes than the chunk"
					     : "deflate: a broken zlib stream";
			break;
		case 2:
			tfs_unshuffle(a, len, f[i].elem_size, b);
			break;
		case 3:
			if (len < 4 ||
			    tfs_h5_fletcher32(a, len - 4) !=
				    (uint32_t)(a[len - 4] | a[len - 3] << 8 |
					       a[len - 2] << 16 |
					       (uint32_t)a[len - 1] << 24)) {
				ret = -EBADMSG;
				*why = "fletcher32: checksum mismatch";
				break;
			}
			len -= 4;
			memcpy(b, a, len);
			break;
		case 32000:
			ret = tfs_lzf_decode(a, len, b, cap, &len, &at);
			*why = ret == -E2BIG ? "lzf: more bytes than the chunk"
					     : "lzf: a broken stream";
			break;
		default:
			ret = -ENOTSUP;
			*why = "a filter that is not supported";
			break;
		}
		if (ret) {
			if (ret == -E2BIG)
				ret = -EBADMSG;
			goto out;
		}
		*why = NULL;
		t = a;
		a = b;
		b = t;
	}
	if (len != out_len) {
		ret = -EBADMSG;
		*why = "the chunk decodes to a size other than its own";
		goto out;
	}
	memcpy(out, a, len);
out:
	free(a);
	free(b);
	return ret;
}
