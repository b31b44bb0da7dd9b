// SPDX-License-Identifier: MIT
/*
 * Benchmark input: one float32 tensor of realistic, compressible data (a
 * smooth function plus a little noise, like trained weights with a narrow
 * exponent range), written three ways:
 *   DIR/zstd.zt   zTensor v1.2, the tensor zstd-compressed (level 3,
 *                 streaming, no pledged size: no Frame_Content_Size, as
 *                 the reference writers make it), crc32c digest;
 *   DIR/frame.zst the same frame alone, for `zstd -d`;
 *   DIR/raw.zt    zTensor v1.2, the tensor raw.
 * Usage: mkzt DIR [MIB]   (default 256 MiB)
 * Build: cc -O2 -o mkzt mkzt.c -lzstd -lm
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

static uint32_t crc_table[256];

static uint32_t crc32c(const uint8_t *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;

	while (n--)
		c = (c >> 8) ^ crc_table[(c ^ *p++) & 0xff];
	return ~c;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void put_text(FILE *f, const char *s)
{
	size_t n = strlen(s);

	fputc(0x60 | (int)n, f); /* short texts only */
	fwrite(s, 1, n, f);
}

static void put_uint(FILE *f, uint64_t v)
{
	int i;

	if (v < 24) {
		fputc((int)v, f);
		return;
	}
	fputc(0x1b, f);
	for (i = 7; i >= 0; i--)
		fputc((int)(v >> (8 * i)) & 0xff, f);
}

/* magic, padding, blob at 64, v1.2 manifest, size, footer */
static void write_zt(const char *path, const void *blob, uint64_t len,
		     uint64_t count, int zstd, uint32_t crc)
{
	FILE *f = fopen(path, "wb"), *m;
	char *man = NULL, dig[32];
	size_t mlen = 0;
	static const uint8_t pad[56];
	uint8_t le[8];
	int i;

	if (!f)
		die(path);
	fwrite("ZTEN1000", 1, 8, f);
	fwrite(pad, 1, sizeof(pad), f);
	if (fwrite(blob, 1, len, f) != len)
		die(path);
	m = open_memstream(&man, &mlen);
	fputc(0xa2, m);
	put_text(m, "version");
	put_text(m, "1.2.0");
	put_text(m, "objects");
	fputc(0xa1, m);
	put_text(m, "weight");
	fputc(0xa3, m);
	put_text(m, "shape");
	fputc(0x81, m);
	put_uint(m, count);
	put_text(m, "format");
	put_text(m, "dense");
	put_text(m, "components");
	fputc(0xa1, m);
	put_text(m, "data");
	fputc(zstd ? 0xa6 : 0xa3, m);
	put_text(m, "dtype");
	put_text(m, "f32");
	put_text(m, "offset");
	put_uint(m, 64);
	put_text(m, "length");
	put_uint(m, len);
	if (zstd) {
		put_text(m, "uncompressed_length");
		put_uint(m, count * 4);
		put_text(m, "encoding");
		put_text(m, "zstd");
		snprintf(dig, sizeof(dig), "crc32c:0x%08X", crc);
		put_text(m, "digest");
		put_text(m, dig);
	}
	fclose(m);
	fwrite(man, 1, mlen, f);
	for (i = 0; i < 8; i++)
		le[i] = (uint8_t)((uint64_t)mlen >> (8 * i));
	fwrite(le, 1, 8, f);
	fwrite("ZTEN1000", 1, 8, f);
	if (fclose(f))
		die(path);
	free(man);
}

int main(int argc, char **argv)
{
	uint64_t mib = argc > 2 ? strtoull(argv[2], NULL, 10) : 256;
	uint64_t count = mib << 18, i;
	size_t cap, clen = 0;
	float *v;
	uint8_t *z;
	uint32_t x = 1, k, c;
	ZSTD_CCtx *cc;
	ZSTD_inBuffer in;
	ZSTD_outBuffer out;
	char path[4096];
	FILE *f;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR [MIB]\n", argv[0]);
		return 2;
	}
	for (k = 0; k < 256; k++) {
		c = k;
		for (i = 0; i < 8; i++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		crc_table[k] = c;
	}
	v = malloc(count * 4);
	if (!v)
		die("malloc");
	for (i = 0; i < count; i++) {
		x = x * 1103515245u + 12345u;
		/* a smooth surface, noise at 1/1000 of it, float16-like grid */
		double s =
			0.05 * sin((double)i * 1e-4) * cos((double)i * 3.7e-7) +
			1e-4 * (double)((x >> 16) & 0xff) / 255.0;
		v[i] = (float)(ldexp(nearbyint(ldexp(s, 18)), -18));
	}
	/* streaming, no pledged size: the frame has no content size */
	cc = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 3);
	cap = ZSTD_compressBound(count * 4);
	z = malloc(cap);
	in.src = v;
	in.size = count * 4;
	in.pos = 0;
	out.dst = z;
	out.size = cap;
	out.pos = 0;
	while (ZSTD_compressStream2(cc, &out, &in, ZSTD_e_continue),
	       in.pos < in.size)
		;
	while (ZSTD_compressStream2(cc, &out, &in, ZSTD_e_end))
		;
	clen = out.pos;
	if (ZSTD_getFrameContentSize(z, clen) != ZSTD_CONTENTSIZE_UNKNOWN)
		fprintf(stderr, "warning: the frame records its size\n");
	snprintf(path, sizeof(path), "%s/frame.zst", argv[1]);
	f = fopen(path, "wb");
	if (!f || fwrite(z, 1, clen, f) != clen || fclose(f))
		die(path);
	snprintf(path, sizeof(path), "%s/zstd.zt", argv[1]);
	write_zt(path, z, clen, count, 1, crc32c(z, clen));
	snprintf(path, sizeof(path), "%s/raw.zt", argv[1]);
	write_zt(path, v, count * 4, count, 0, 0);
	printf("%llu MiB tensor, zstd frame %zu bytes (ratio %.2f)\n",
	       (unsigned long long)mib, clen, (double)(count * 4) / clen);
	ZSTD_freeCCtx(cc);
	free(z);
	free(v);
	return 0;
}
