/* SPDX-License-Identifier: MIT */
/*
 * Element values: the numbers a tensor's bytes stand for, as doubles, for
 * every dtype of the dtype table that has a numeric meaning.
 *
 * Decoding works on whole blocks of the dtype (dtype.h): one element for
 * the ordinary types, 2 per byte for float4, 32 or 256 for ggml's quantized
 * blocks.  Nothing needs the whole tensor: tfs_values_read() streams any
 * element range of a tensor through bounded buffers.
 *
 * The definitions followed (each also in docs/architecture.md, "Values"):
 *   int*, uint*, bool    exact (bool: 0 or 1, any non-zero byte is 1);
 *                        64-bit integers beyond 2^53 round to nearest
 *   float16, bfloat16    IEEE binary16; the top half of a binary32
 *   float8_e4m3          OCP e4m3fn: bias 7, no infinity, S.1111.111 NaN
 *   float8_e4m3fnuz      bias 8, no infinity, no -0: 0x80 is the NaN
 *   float8_e5m2          bias 15, IEEE-like (infinities and NaNs)
 *   float8_e5m2fnuz      bias 16, no infinity, no -0: 0x80 is the NaN
 *   float8_e8m0          2^(e - 127), 0xff is NaN (OCP MX scale)
 *   float4               e2m1 (bias 1, no inf/NaN), two per byte, the
 *                        low nibble first
 *   complex32/64/128     two floats (real, imaginary); by default the
 *                        magnitude |z|, TFS_VALUES_REAL / _IMAG for a part
 *   q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k q4_k q5_k q6_k q8_k
 *                        ggml's dequantize_row_* (ggml-quants.c), computed
 *                        in float as ggml does
 * Refused with -ENOTSUP: the float6 kinds (no spec we follow defines their
 * bit packing), the other quantized types (q8_1, iq*, tq*, mxfp4, nvfp4,
 * q1_0, q2_0), opaque types, and big-endian quantized data.
 */
#ifndef TENSORFS_VALUES_H
#define TENSORFS_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include "core/abi.h"
#include "core/dtype.h"

struct tfs_image;
struct tfs_tree;

#define TFS_VALUES_BIG_ENDIAN 1u /* elements are stored big-endian */
#define TFS_VALUES_REAL 2u	 /* complex: the real part, not |z| */
#define TFS_VALUES_IMAG 4u	 /* complex: the imaginary part */

/* 0 when values of @t (with @flags) can be decoded, else -ENOTSUP */
TFS_PRIVATE int tfs_values_supported(enum tfs_dtype t, unsigned flags);

/*
 * Decode @nblocks whole blocks of @t from @src (nblocks x block_bytes
 * bytes, any alignment) into nblocks x block_elems doubles at @out.
 * 0, or -ENOTSUP (nothing written).
 */
int tfs_values_decode(enum tfs_dtype t, unsigned flags, const void *src,
		      size_t nblocks, double *out);

/*
 * the element count of tensor record @tensor (0 for opaque dtypes; a
 * computed tensor's: its view's)
 */
TFS_PRIVATE uint64_t tfs_values_count(const struct tfs_tree *tree,
				      uint32_t tensor);

/*
 * The TFS_VALUES_* layout flags of tensor record @tensor: BIG_ENDIAN when
 * its node (or its group) has user.tensorfs.byte_order=big (or, converted
 * by -o as=float32, stored_byte_order=big).
 */
TFS_PRIVATE unsigned tfs_values_tensor_flags(const struct tfs_tree *tree,
					     uint32_t tensor);

/*
 * Elements [@first, @first + @count) of tensor record @tensor (in stored
 * order) as doubles at @out, read through the image's read path (its
 * stored dtype's bytes, never the -o npy/as views) in bounded chunks: only
 * the blocks that hold them are read.  @flags: TFS_VALUES_REAL/_IMAG (the
 * layout flags are the tensor's own).  A computed tensor (a dequantized
 * layer, tree.h) has no values of its own: its view's float32 elements
 * (tfs_image_read_shown) are read instead.  0, -ENOTSUP, -ERANGE (past
 * the end), -EIO, -ENOMEM.
 */
TFS_PRIVATE int tfs_values_read(struct tfs_image *img, uint32_t tensor,
				unsigned flags, uint64_t first, size_t count,
				double *out);

#endif
